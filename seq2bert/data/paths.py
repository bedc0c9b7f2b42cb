"""What a path the user gave is, and the one-line error when it is not what a command expected there.

A reader that opens ``/dev/null``, a folder or a pipe where it wants a text file, or a file where it wants a
task's folder, should say what it found — "a character device", "a folder" — rather than "no such file":

    require_folder(Path("/dev/null"), "--data", "the sst2 task's data folder") raises
    DataError("--data /dev/null: a character device, not a folder (expected the sst2 task's data folder)")
"""

from __future__ import annotations

import stat
from pathlib import Path

from seq2bert.errors import DataError, UserError

MISSING = "no such file or folder"
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISREG, "a file"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(path: Path) -> str:
    """What ``path`` is: "a file", "a folder", "a character device" (``/dev/null``), "a named pipe", …, or
    "no such file or folder"."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "a symbolic link to nothing" if path.is_symlink() else MISSING
    except NotADirectoryError:  # "a.txt/b": a file stands where a folder should
        return f"{MISSING} (a file stands where its path needs a folder)"
    except PermissionError:
        return "not readable (permission denied)"
    except OSError as err:
        return f"not readable ({err.strerror or err})"
    return next((name for test, name in _KINDS if test(mode)), "not a file or folder")


def _require(path: Path, wanted: str, key: str, expected: str, error: type[UserError]) -> Path:
    found = kind_of(path)
    if found == f"a {wanted}":
        return path
    where = f"{key} {path}" if key else str(path)
    found = f"no such {wanted}" if found == MISSING else f"{found}, not a {wanted}"
    raise error(f"{where}: {found} (expected {expected})")


def require_file(path: Path, key: str, expected: str, error: type[UserError] = DataError) -> Path:
    """``path`` when it is a regular file; else ``error`` naming ``key`` (the flag or config key that gave it,
    or ""), the path, what it is and what was ``expected``."""
    return _require(Path(path), "file", key, expected, error)


def require_folder(path: Path, key: str, expected: str, error: type[UserError] = DataError) -> Path:
    """``path`` when it is a folder; else ``error`` naming ``key``, the path, what it is and what was
    ``expected``."""
    return _require(Path(path), "folder", key, expected, error)
