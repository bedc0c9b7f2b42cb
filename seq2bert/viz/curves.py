"""Training curves from a run's log.jsonl: training loss, validation metrics and learning rate against steps."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from seq2bert.errors import UserError  # noqa: E402


def read_log(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such log (expected a run's log.jsonl)")
    records = []
    for i, raw in enumerate(path.read_bytes().splitlines(), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UserError(f"{path}:{i}: invalid UTF-8 (expected a run's log.jsonl, JSON lines)") from None
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise UserError(f"{path}:{i}: not a JSON record ({e.msg})") from None
        if not isinstance(records[-1], dict):
            raise UserError(f"{path}:{i}: not a JSON record (expected an object, got {line.strip()[:40]})")
    return records


def plot_training_curves(log_path: str | Path, out_png: str | Path) -> Path:
    """One panel for the training loss (with validation loss if logged), one per other validation metric that
    changes (not a constant such as the number of held-out tokens), one for lr."""
    records = read_log(log_path)
    train = [r for r in records if r.get("split") == "train"]
    valid = [r for r in records if r.get("split") == "valid"]
    metrics = changing_metrics(valid)
    panels = 2 + len(metrics)
    cols = min(3, panels)
    rows = -(-panels // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.2 * rows), squeeze=False)
    flat = list(axes.flat)
    ax = flat[0]
    ax.plot([r["step"] for r in train], [r["loss"] for r in train], label="train")
    with_loss = [r for r in valid if "loss" in r]
    if with_loss:
        ax.plot([r["step"] for r in with_loss], [r["loss"] for r in with_loss], "o-", label="valid")
    ax.set(title="loss", xlabel="step")
    ax.legend()
    for ax, m in zip(flat[1:], metrics, strict=False):
        ax.plot([r["step"] for r in valid if m in r], [r[m] for r in valid if m in r], "o-")
        ax.set(title=f"valid {m}", xlabel="step")
    ax = flat[panels - 1]
    ax.plot([r["step"] for r in train], [r["lr"] for r in train])
    ax.set(title="learning rate", xlabel="step")
    for ax in flat[panels:]:
        ax.axis("off")
    fig.tight_layout()
    return save_figure(fig, out_png)


def changing_metrics(valid: list[dict]) -> list[str]:
    """The numeric validation metrics of ``valid`` records worth a panel, sorted: all but step, epoch and loss,
    and — once there are two evaluations — those that changed."""
    numeric = {k for r in valid for k, v in r.items() if isinstance(v, (int, float))} - {
        "step",
        "epoch",
        "loss",
    }
    return sorted(m for m in numeric if len(valid) < 2 or len({r.get(m) for r in valid}) > 1)


def save_figure(fig, out_png: str | Path, dpi: int = 100) -> Path:
    """Write a figure to a PNG atomically (temporary file + rename) and close it."""
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_png.with_name(f".{out_png.name}.tmp.png")
    try:
        fig.savefig(tmp, dpi=dpi)
        tmp.replace(out_png)
    except OSError as e:  # the user's file in the message, never the hidden temporary one
        tmp.unlink(missing_ok=True)
        if e.errno is None:
            raise
        raise OSError(e.errno, e.strerror, str(out_png)) from None
    finally:
        plt.close(fig)
    return out_png
