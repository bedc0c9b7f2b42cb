"""Attention plots for encoder-decoders: the alignment matrix of one translation (Bahdanau et al. 2015,
Fig. 3; Luong et al. 2015, Fig. 7) and BLEU by source-length bucket for several models (Bahdanau Fig. 2)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from seq2bert.viz.curves import save_figure  # noqa: E402


def plot_alignment(source_tokens, target_tokens, weights, out_png: str | Path, title: str = "") -> Path:
    """A grey-scale matrix: column s = source token, row t = target token, white = weight 1 (as in the papers).

    weights: (T, S) array-like with T = len(target_tokens), S = len(source_tokens).
    """
    w = [[float(x) for x in row] for row in (weights.tolist() if hasattr(weights, "tolist") else weights)]
    if len(w) != len(target_tokens) or any(len(row) != len(source_tokens) for row in w):
        raise ValueError(
            f"weights must be ({len(target_tokens)}, {len(source_tokens)}) for these tokens, "
            f"got ({len(w)}, {len(w[0]) if w else 0})"
        )
    S, T = len(source_tokens), len(target_tokens)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.4 * S + 1.5), max(3.0, 0.4 * T + 1.2)))
    ax.imshow(w, cmap="gray", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(S), source_tokens, rotation=90)
    ax.set_yticks(range(T), target_tokens)
    ax.xaxis.tick_top()
    if title:
        ax.set_title(title, pad=40 if S else 6)
    fig.tight_layout()
    return save_figure(fig, out_png)


def plot_bleu_by_length(
    results: Mapping[str, Mapping[str, Mapping[str, float]]], out_png: str | Path, key: str = "bleu_lowercase"
) -> Path:
    """One line per model: BLEU (``key``) per source-length bucket. results: {model: {bucket: {key: …}}}."""
    labels: list[str] = []  # every bucket any model has, in order of first appearance
    for buckets in results.values():
        labels += [b for b in buckets if b not in labels]
    fig, ax = plt.subplots(figsize=(6.5, 4.0))
    for model, buckets in results.items():
        xs = [labels.index(b) for b in buckets]
        ax.plot(xs, [buckets[b][key] for b in buckets], marker="o", label=model)
    ax.set_xticks(range(len(labels)), labels)
    ax.set(
        xlabel="source sentence length (words)", ylabel="BLEU" + (" (lowercased)" if "lower" in key else "")
    )
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return save_figure(fig, out_png)
