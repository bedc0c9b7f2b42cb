"""The picture of vanishing and exploding gradients: ‖∂L_T/∂h_t‖ against t, one line per recurrent cell
(log scale), at initialisation and after training without and with gradient clipping, and the gradient norm
during training.

Reads what ``recipes/gradients.measure`` returns (or its gradients.json)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from seq2bert.viz.curves import save_figure  # noqa: E402

PANELS = {  # run → panel title
    "init": "at initialisation",
    "sgd": "after {steps} SGD steps",
    "sgd+clip": "after {steps} SGD steps, ‖ĝ‖ clipped to {clip_norm}",
}


FLOOR = 1e-40  # the norm axes stop here: a gradient below it has vanished for any purpose


def positive(values: list[float]) -> list[float]:
    """Values a log axis can show: 0, inf and NaN become gaps."""
    return [v if v is not None and 0 < v < math.inf else math.nan for v in values]


def plot_gradient_norms(results: dict, out_png: str | Path) -> Path:
    """Panels (a)–(c): ‖∂L_T/∂h_t‖ for t = 1 … T per cell, on one shared axis, labelled with ρ(W) where the
    cell has one W; panel (d): the global gradient norm ‖ĝ‖ per SGD step, before clipping, without (solid)
    and with (dashed) clipping, and the threshold."""
    cfg = results["config"]
    T, cells = cfg["length"], results["cells"]
    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    colors = {name: f"C{i}" for i, name in enumerate(cells)}
    t = list(range(1, T + 1))
    every = [v for c in cells.values() for r in c["runs"].values() for v in positive(r["norms"] or [])]
    top = 10 * max((v for v in every if v == v), default=1.0)
    bottom = max(FLOOR, 0.1 * min((v for v in every if v == v), default=FLOOR))
    for ax, (run, title) in zip(axes.flat, PANELS.items(), strict=False):
        notes = []
        for name, cell in cells.items():
            r = cell["runs"][run]
            label = cell["label"] + (f", ρ(W) = {r['spectral_radius']:.3g}" if r["spectral_radius"] else "")
            if r.get("diverged_at_step"):
                notes.append(
                    f"{cell['label']}: loss or ‖ĝ‖ not finite at step {r['diverged_at_step']}, stopped"
                )
            if r["norms"] is None:
                notes.append(f"{cell['label']}: weights not finite")
                continue
            zeros = sum(v == 0 for v in r["norms"])
            if zeros:  # tanh units saturated (1 − h² = 0 exactly) or ReLUs dead
                notes.append(f"{cell['label']}: exactly 0 at {zeros} of {T} steps (saturated or dead units)")
            elif any(v < bottom for v in positive(r["norms"])):
                notes.append(f"{cell['label']}: below {bottom:.0e} at some steps")
            shown = sum(bottom <= v <= top for v in positive(r["norms"]))
            marker = "o" if shown < 2 else None  # a lone point would draw no line
            ax.plot(t, positive(r["norms"]), color=colors[name], label=label, marker=marker)
        ax.set_yscale("log")
        ax.set_ylim(bottom, top)
        ax.set(title=title.format(**cfg), xlabel="t", ylabel="‖∂L_T/∂h_t‖", xlim=(1, T))
        ax.legend(fontsize=8, loc="lower right")
        if notes:
            ax.text(0.02, 0.98, "\n".join(notes), transform=ax.transAxes, va="top", fontsize=8, color="0.3")
    ax = axes.flat[3]
    for name, cell in cells.items():
        for run, style in (("sgd", "-"), ("sgd+clip", "--")):
            norms = cell["runs"][run]["grad_norm"]
            label = cell["label"] if run == "sgd" else None
            marker = "o" if len(norms) == 1 else None  # a run that diverged at step 2
            ax.plot(
                range(1, len(norms) + 1),
                positive(norms),
                style,
                color=colors[name],
                label=label,
                lw=1,
                marker=marker,
            )
    ax.axhline(cfg["clip_norm"], color="k", lw=0.8, ls=":", label="clipping threshold")
    ax.set_yscale("log")
    ax.set(
        title="‖ĝ‖ per step, before clipping (solid: SGD, dashed: clipped)", xlabel="SGD step", ylabel="‖ĝ‖"
    )
    ax.legend(fontsize=8, loc="upper right")
    fig.suptitle(
        f"Remember the first of T = {T} symbols: the gradient reaching step t from the loss at T "
        f"(mean over {2 * cfg['batch_size']} sequences)"
    )
    fig.tight_layout()
    return save_figure(fig, out_png)
