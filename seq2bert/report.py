"""Plain-text result tables for the terminal (results rows are dicts; numbers are formatted by key)."""

from __future__ import annotations

from collections.abc import Sequence

COLUMNS = [
    ("model", "model"),
    ("params", "params"),
    ("train_seconds", "train time"),
    ("tokens_per_s", "tokens/s"),
    ("valid_before_perplexity", "valid ppl before"),  # continued pretraining: the checkpoint as given
    ("valid_perplexity", "valid ppl"),
    ("valid_word_perplexity", "valid word ppl"),
    ("test_token_accuracy", "test tok acc %"),
    ("test_exact_match", "test exact %"),
    ("test_bleu", "test BLEU"),
    ("test_bleu_lowercase", "test BLEU (lc)"),
    ("test_bleu_beam5", "test BLEU beam 5"),
    ("test_bleu_lowercase_beam5", "test BLEU (lc) beam 5"),
    ("valid_before_mlm_loss", "valid MLM loss before"),
    ("valid_mlm_loss", "valid MLM loss"),
    ("valid_mlm_accuracy", "valid MLM acc %"),
    ("valid_nsp_accuracy", "valid NSP acc %"),
    ("valid_sop_accuracy", "valid SOP acc %"),
    ("valid_disc_loss", "valid disc loss"),
    ("valid_disc_accuracy", "valid disc acc %"),
]


def _fmt(key: str, value) -> str:
    if value is None:
        return "-"
    if key in ("params", "teacher_params"):
        return f"{value / 1e6:.2f} M"
    if key == "train_seconds":
        m, s = divmod(int(round(value)), 60)
        return f"{m}m{s:02d}s"
    if key == "tokens_per_s":
        return f"{value:,.0f}"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def format_table(rows: Sequence[dict], columns: Sequence[tuple[str, str]] = COLUMNS) -> str:
    """A Markdown-style table with one row per result dict; columns absent from every row are left out."""
    cols = [(k, h) for k, h in columns if any(k in r for r in rows)]
    cells = [[h for _, h in cols]] + [[_fmt(k, r.get(k)) for k, _ in cols] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def task_columns(rows: Sequence[dict]) -> list[tuple[str, str]]:
    """Columns of fine-tuning results: the run, then every dev metric the rows have (dev_f1 → "dev f1")."""
    metrics = [k for k in dict.fromkeys(k for r in rows for k in r) if k.startswith("dev_")]
    head = [
        ("task", "task"),
        ("params", "params"),
        ("train_seconds", "train time"),
        ("tokens_per_s", "tokens/s"),
        ("best_step", "best step"),
        ("examples", "examples"),
    ]
    return head + [(k, "dev " + k[4:].replace("_", " ")) for k in metrics]


def format_metrics(metrics: dict[str, float], title: str = "") -> str:
    width = max(len(k) for k in metrics) if metrics else 0
    body = "\n".join(f"  {k.ljust(width)}  {_fmt(k, v)}" for k, v in metrics.items())
    return f"{title}\n{body}" if title else body
