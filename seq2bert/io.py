"""The ground floor's files: JSON, atomic writes of files and directories, safetensors weights.

Every layer above (nn, data, models, training, recipes) writes through these, so that a crash never leaves a
half-written file or checkpoint where a reader would find it: a file is written to a temporary name in the
same folder and renamed into place; a directory is written as a hidden temporary folder beside its target,
made durable (fsync) and renamed.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from safetensors.torch import load_file, save_file, save_model
from torch import nn

from seq2bert.errors import CheckpointError, UserError


def umask_mode(bits: int = 0o666) -> int:
    """``bits`` as the process's umask leaves them: the mode ``open`` gives a new file (0o644 under umask 022).
    ``tempfile`` makes its files 0600 and its folders 0700; what is renamed into place gets this mode."""
    mask = os.umask(0)
    os.umask(mask)
    return bits & ~mask


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "wb"):
    """A file to write (``mode`` "wb" or "w": UTF-8 text) that replaces ``path`` when the block ends: a
    temporary file in the same folder, renamed into place, with the mode of any other file the user writes
    (``umask_mode``); on failure nothing is left and an OSError names ``path``, never the temporary file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, umask_mode())
        with os.fdopen(fd, mode, **({"encoding": "utf-8"} if "b" not in mode else {})) as f:
            yield f
        os.replace(tmp, path)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.errno is not None:
            raise OSError(e.errno, e.strerror, str(path)) from None
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and an atomic rename
    (``atomic_open``)."""
    with atomic_open(path, "w") as f:
        f.write(text)


def write_json(path: str | Path, data: Any) -> None:
    """``data`` as indented JSON, atomically."""
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


def read_json(path: str | Path) -> dict[str, Any]:
    """A JSON object ({…}) from a file; a missing, unreadable or malformed one, or JSON of another kind (a
    list, a number), is a one-line CheckpointError naming the file (and line) and what was expected."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing") from None
    except UnicodeDecodeError as e:
        line = path.read_bytes()[: e.start].count(b"\n") + 1
        raise CheckpointError(f"{path}:{line}: invalid UTF-8 (expected a UTF-8 JSON file)") from None
    except OSError as e:  # a folder, no permission to read it
        raise CheckpointError(f"{path}: unreadable ({e.strerror or e}); expected a JSON file") from None
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    if not isinstance(data, dict):
        kind = {list: "list", str: "string", bool: "boolean", type(None): "null"}.get(type(data), "number")
        raise CheckpointError(f"{path}: a JSON {kind}, expected a JSON object {{…}} of keys")
    return data


def write_dir_atomically(target: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp_dir)`` on a fresh temporary directory, then put it in place of ``target``.

    A new target is one rename. An existing one (a run's best/) is swapped with the new directory in one
    atomic exchange (Linux's renameat2 RENAME_EXCHANGE), so that ``target`` is never missing, even for a
    process killed at any point; where the exchange is not available, the old one is renamed aside first
    (a window in which ``target`` is absent, which ``clean_leftovers`` repairs at the run's next start)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.tmp-"))
    try:
        write(tmp)
        for f in tmp.rglob("*"):  # make the files durable before the rename makes them visible
            if f.is_file():
                with open(f, "rb") as fh:
                    os.fsync(fh.fileno())
                os.chmod(f, umask_mode())  # safetensors writes its files 0600, like tempfile
        os.chmod(tmp, umask_mode(0o777))  # mkdtemp makes it 0700; a directory the user writes is not
        if target.exists() and _exchange(tmp, target):
            shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the old target
            return
        old = None
        if target.exists():
            old = target.parent / f".{target.name}.old-{os.getpid()}"
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError) and e.errno is not None:  # the files of ``target`` in the message
            raise OSError(e.errno, e.strerror, _as_target(e.filename, tmp, target)) from None
        raise


def _as_target(filename: object, tmp: Path, target: Path) -> object:
    """``filename`` inside the hidden temporary ``tmp`` as the same file of ``target``, what the user sees."""
    if filename is None:  # a write that failed (a full disk) without naming its file: the folder
        return str(target)
    if not isinstance(filename, (str, os.PathLike)):
        return filename
    path = Path(os.fsdecode(filename))
    return str(target / path.relative_to(tmp)) if path.is_relative_to(tmp) else str(path)


def check_output_dir(
    out: str | Path, *, command: str, mark: str, inputs: tuple[Path, ...] = (), overwrite: bool = False
) -> Path:
    """Refuse a folder the user named (``--out``) where writing it would lose what the user did not give us.

    ``write_dir_atomically`` replaces its target wholesale: right for a run's ``best/``, never for a folder the
    user names. So ``out`` may be new, empty, or the previous output of the same ``command`` (it holds the
    ``mark`` file that command writes) and then only with ``overwrite``; a file, a folder holding anything
    else, an input, a folder inside an input, or a folder holding an input is a one-line UserError, checked
    before anything is read or written."""
    out = Path(out)
    check_apart(out, inputs)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: a file; expected a folder to write (new or empty)")
    if not out.is_dir() or not any(out.iterdir()):
        return out
    if not (out / mark).is_file():
        raise UserError(
            f"--out {out}: not empty and not written by `seq2bert {command}`; name a new or empty folder "
            "(nothing was changed)"
        )
    if not overwrite:
        raise UserError(
            f"--out {out}: holds a previous `seq2bert {command}` output; pass --overwrite to replace it"
        )
    return out


def check_apart(out: str | Path, inputs: tuple[str | Path, ...]) -> None:
    """Refuse an ``out`` folder that is one of the ``inputs``, lies inside one, or holds one (one-line
    UserError): what a command writes there would mix with, or replace, what it reads."""
    where = Path(out).resolve()
    for source in inputs:
        source_at = Path(source).resolve()
        if where == source_at or where.is_relative_to(source_at):
            raise UserError(
                f"--out {out}: is the input {source} or inside it; name a folder outside the input"
            )
        if source_at.is_relative_to(where):
            raise UserError(f"--out {out}: holds the input {source}; name a folder outside the input")


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths of one filesystem (renameat2 with RENAME_EXCHANGE); False where the system
    cannot (not Linux, an old kernel or C library, a filesystem without it)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def clean_leftovers(directory: Path) -> list[str]:
    """Remove what interrupted atomic writes leave in ``directory``: temporary files and folders
    (``.<name>.tmp-*``, ``.<name>.*.tmp``), and old folders renamed aside (``.<name>.old-<pid>``) — one whose
    ``<name>`` is missing is put back first (a kill between the two renames of write_dir_atomically's
    fallback). Returns the names removed or restored."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    done = []
    for p in sorted(directory.iterdir()):
        m = re.fullmatch(r"\.(.+)\.old-\d+", p.name)
        if m and not (directory / m.group(1)).exists():
            os.replace(p, directory / m.group(1))
            done.append(f"{p.name} → {m.group(1)}")
        elif m or re.fullmatch(r"\..+\.tmp-.*|\..+\.tmp", p.name):
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
            done.append(p.name)
    return done


def save_weights(model: nn.Module, directory: Path) -> None:
    """``model``'s state dict as ``directory``/model.safetensors (tied weights stored once)."""
    path = Path(directory) / "model.safetensors"
    with _io_errors(path):
        save_model(model, str(path))
    os.chmod(path, umask_mode())  # safetensors makes its files 0600


def save_tensors(tensors: dict, path: str | Path, metadata: dict[str, str] | None = None) -> None:
    """``tensors`` as the safetensors file ``path``."""
    with _io_errors(path):
        save_file(tensors, str(path), metadata=metadata)
    os.chmod(path, umask_mode())  # safetensors makes its files 0600


@contextlib.contextmanager
def _io_errors(path: str | Path):
    """safetensors reports a failed write (a full disk, a file-size limit) as its own error: an OSError here,
    with the system's reason and the file, as every other failed write (the CLI's one line, exit 1)."""
    try:
        yield
    except Exception as e:
        if type(e).__name__ != "SafetensorError" or "I/O error" not in str(e):
            raise
        found = re.search(r"os error (\d+)", str(e))
        code = int(found.group(1)) if found else errno.EIO
        raise OSError(code, os.strerror(code), str(path)) from None


def load_weights(model: nn.Module, directory: Path) -> None:
    """Load ``directory``/model.safetensors into ``model``; every key must fit (one-line CheckpointError).

    Tied parameters are stored once (under any of their names); the model's own load hooks may rename the
    keys of older checkpoints."""
    path = Path(directory) / "model.safetensors"
    if not path.is_file():
        raise CheckpointError(f"{directory}: no model.safetensors (expected a seq2bert checkpoint directory)")
    try:
        state = load_file(str(path))
    except Exception as e:  # safetensors raises its own error types
        raise CheckpointError(f"{path}: unreadable ({e})") from None
    try:
        missing, unexpected = model.load_state_dict(state, strict=False)
    except RuntimeError as e:  # shapes that do not fit
        first = str(e).strip().splitlines()[-1].strip()
        raise CheckpointError(f"{path}: weights do not fit the model ({first})") from None
    ours = model.state_dict(keep_vars=True)
    loaded = {ours[k].data_ptr() for k in ours if k not in missing}
    missing = [k for k in missing if ours[k].data_ptr() not in loaded]  # a tied copy of a loaded tensor
    if missing or unexpected:
        raise CheckpointError(
            f"{path}: weights do not fit the model (missing: {sorted(missing)[:5]}, unexpected: {sorted(unexpected)[:5]})"
        )


# --- where a run keeps its checkpoints: checkpoint-<step>/ folders and best/
CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")


def list_checkpoints(run_dir: Path) -> list[Path]:
    """The run's ``checkpoint-<step>`` folders, oldest first."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    found = [
        (int(m.group(1)), p) for p in run_dir.iterdir() if p.is_dir() and (m := CHECKPOINT_RE.match(p.name))
    ]
    return [p for _, p in sorted(found)]


def latest_checkpoint(run_dir: Path) -> Path | None:
    ckpts = list_checkpoints(run_dir)
    return ckpts[-1] if ckpts else None


WEIGHT_FILES = (
    "model.safetensors",
    "model.int8.safetensors",
)  # float weights; int8 ones (models/quantized.py)


def is_checkpoint(path: Path) -> bool:
    return any((path / name).is_file() for name in WEIGHT_FILES)


def resolve_checkpoint(path: str | Path) -> Path:
    """A checkpoint directory itself, or a run directory (its ``best/``, else its latest checkpoint)."""
    path = Path(path)
    if is_checkpoint(path):
        return path
    if is_checkpoint(path / "best"):
        return path / "best"
    latest = latest_checkpoint(path)
    if latest is not None:
        return latest
    if not path.exists():
        raise CheckpointError(f"{path}: no such checkpoint or run directory")
    if (path / "lora.safetensors").is_file():  # training/lora.py
        raise CheckpointError(
            f"{path}: a LoRA run's checkpoint (lora.safetensors: what trains, to resume the run); its merged "
            "model is the run's best/"
        )
    raise CheckpointError(
        f"{path}: not a checkpoint (no model.safetensors, best/ or checkpoint-<step>/ inside)"
    )
