"""Looking inside the models: attention maps of any layer and head, an offline HTML head view, the sinusoidal
positional encodings, and similarity matrices of contextual embeddings.

    attention_maps(model, text)            every layer's weights of a BERT directory or a translation
                                           checkpoint: {"encoder": [(h, S, S)…], "decoder": …, "cross": …},
                                           at most max_tokens (128) tokens a side
    plot_heads(weights, rows, cols, …)     one layer: one panel per head (or one head), rows = queries
    write_head_view(maps, …, out_html)     a self-contained page (no network): pick a kind and a layer,
                                           hover a token to see where each head looks (as bertviz's view);
                                           the weights rounded to 3 decimals
    plot_positional_encoding(d_model, n)   PE(pos, 2i) = sin(pos / 10000^{2i/d_model}), PE(pos, 2i+1) = cos(…)
                                           (Vaswani et al. 2017, Sect. 3.5) as a positions × dimensions image
    plot_similarity(labels, matrix)        cosine similarities, e.g. "bank" in several sentences
"""

from __future__ import annotations

import html
import inspect
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from seq2bert.errors import UserError  # noqa: E402
from seq2bert.viz.curves import save_figure  # noqa: E402

KINDS = ("encoder", "decoder", "cross")
log = logging.getLogger(__name__)


PANEL_INCHES = 12.0  # the widest panel of plot_heads (a 128-token map: rows 0.08 inch apart)
LABELS = 64  # the most tokens labelled along a side of plot_heads' panels (every k-th past it)


@dataclass
class AttentionMaps:
    """Per kind, one (h, T_q, T_k) tensor per layer; the tokens of the query and key side of each kind."""

    layers: dict[str, list[torch.Tensor]]
    tokens: dict[str, tuple[list[str], list[str]]]  # kind → (query tokens, key tokens)
    title: str = ""


MAX_TOKENS = 128  # the tokens an attention map shows by default: (h, T, T) per layer grows with T²


@torch.no_grad()
def attention_maps(
    model, text: str, *, pair: str | None = None, max_tokens: int = MAX_TOKENS
) -> AttentionMaps:
    """The attention weights of ``model`` on ``text``: a BERT directory (or loaded ``(model, tokenizer)``) —
    its encoder self-attention, ``pair`` as segment B — or a translation checkpoint directory, whose
    weights come from its own greedy translation of ``text`` (models/alignment.align).

    A map shows at most ``max_tokens`` tokens a side (the weights of a layer grow with their square): a
    longer text is truncated to its first ``max_tokens`` tokens (or the model's positions, when fewer), a
    longer translation's maps to its first ``max_tokens`` target tokens, each with a one-line warning."""
    from seq2bert.models import registry

    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise UserError(f"max_tokens: expected at least 1 token, got {max_tokens!r}")
    if isinstance(model, tuple) or registry.family_at(model).kind == "encoder":
        return encoder_maps(model, text, pair, max_tokens)
    if pair is not None:
        raise UserError("--pair is for encoders (BERT); a translation model reads one text")
    from seq2bert.models.alignment import align

    try:
        a = align(model, text, max_source_length=max_tokens, setting="max_tokens")
    except ValueError as e:
        raise UserError(f"{model}: {e}") from None
    return alignment_maps(a, max_tokens, f"{text} → {a.translation}")


def alignment_maps(a, max_tokens: int = MAX_TOKENS, title: str = "") -> AttentionMaps:
    """The maps of a translation's Alignment (models/alignment.align), its target side cut to its first
    ``max_tokens`` tokens with a warning (its source was cut by align's ``max_source_length``)."""
    target, layers = a.target_tokens, dict(a.layers)
    if len(target) > max_tokens:  # causal: the first rows and columns of the decoder's weights are whole
        log.warning(
            "a translation of %d tokens: its maps truncated to its first %d (max_tokens)",
            len(target),
            max_tokens,
        )
        target = target[:max_tokens]
        layers["cross"] = [w[:, :max_tokens] for w in layers["cross"]]
        if "decoder" in layers:
            layers["decoder"] = [w[:, :max_tokens, :max_tokens] for w in layers["decoder"]]
    tokens = {
        "encoder": (a.source_tokens, a.source_tokens),
        "decoder": (target, target),
        "cross": (target, a.source_tokens),
    }
    return AttentionMaps(layers, {k: tokens[k] for k in layers}, title)


def attends(encoder) -> bool:
    """Whether an encoder's forward gives its attention weights (a BiLSTM has none)."""
    return "output_attentions" in inspect.signature(encoder.forward).parameters


def encoder_maps(model, text: str, pair: str | None, max_tokens: int) -> AttentionMaps:
    """attention_maps of an encoder: its self-attention over the first ``max_tokens`` tokens."""
    from seq2bert.models.family import max_input_length
    from seq2bert.pipelines import ENCODER, _base, _load

    net, tok, _ = _load(model, ENCODER)
    encoder = _base(net)
    if not attends(encoder):
        raise UserError(
            f"{model if isinstance(model, (str, Path)) else 'the model'}: a "
            f"{type(encoder).__name__} has no attention weights"
        )
    longest = max_input_length(encoder.config, 512)  # the model's positions
    limit = min(longest, max_tokens)
    try:
        enc = tok.encode(text, pair, max_length=limit, truncation="longest_first")
    except UserError as e:  # fewer tokens than the special ones
        raise UserError(f"max_tokens {max_tokens}: too few ({e})") from None
    if enc.truncated:
        log.warning(
            "a text longer than %d tokens truncated to them (max_tokens %d, the model's positions %d)",
            limit,
            max_tokens,
            longest,
        )
    ids = torch.tensor([enc.ids], device=next(encoder.parameters()).device)
    types = torch.tensor([enc.type_ids], device=ids.device)
    out = encoder(
        input_ids=ids, attention_mask=torch.ones_like(ids), token_type_ids=types, output_attentions=True
    )
    layers = [w[0].float().cpu() for w in out.attentions]
    return AttentionMaps({"encoder": layers}, {"encoder": (enc.tokens, enc.tokens)}, text)


def select(maps: AttentionMaps, kind: str, layer: int) -> torch.Tensor:
    """(h, T_q, T_k) of one kind and layer (negative layers count from the top), with a clear error."""
    if kind not in maps.layers:
        raise UserError(f"this model has no {kind} attention; it has {', '.join(maps.layers)}")
    layers = maps.layers[kind]
    if not -len(layers) <= layer < len(layers):
        raise UserError(f"layer {layer}: the {kind} has layers 0 … {len(layers) - 1}")
    return layers[layer]


def plot_heads(
    weights: torch.Tensor,
    rows: list[str],
    cols: list[str],
    out_png: str | Path,
    *,
    head: int | None = None,
    title: str = "",
) -> Path:
    """Heatmaps of one layer, (h, T_q, T_k): every head side by side, or only ``head``. Row i is query
    token i, its weights over the keys (columns) sum to 1."""
    if weights.dim() != 3 or weights.shape[1:] != (len(rows), len(cols)):
        raise ValueError(f"weights must be (h, {len(rows)}, {len(cols)}), got {tuple(weights.shape)}")
    heads = list(range(weights.size(0))) if head is None else [head]
    if head is not None and not 0 <= head < weights.size(0):
        raise UserError(f"head {head}: this layer has heads 0 … {weights.size(0) - 1}")
    n = len(heads)
    longest = max(len(rows), len(cols), 1)
    size = min(max(3.0, 0.28 * longest + 1.2), PANEL_INCHES)  # a panel per head, at most PANEL_INCHES wide
    font = min(7.0, 0.7 * 72 * (size - 1.2) / min(longest, LABELS))  # the labels shrink with their pitch
    cols_per_row = min(n, 4)
    grid = -(-n // cols_per_row)
    # the heads share their tokens: labelled on the outer panels only, every token up to LABELS of them, else
    # every k-th (matplotlib draws each label at a cost; a 128-token map of 12 heads took 30 s labelled in full)
    every = -(-longest // LABELS)
    fig, axes = plt.subplots(
        grid, cols_per_row, figsize=(size * cols_per_row, size * grid + 0.4), squeeze=False
    )
    for i, (ax, h) in enumerate(zip(axes.flat, heads, strict=False)):
        ax.imshow(weights[h].numpy(), cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_title(f"head {h}", fontsize=9)
        if i + cols_per_row >= n:  # the lowest panel of its column
            ax.set_xticks(range(0, len(cols), every), cols[::every], rotation=90, fontsize=font)
        else:
            ax.tick_params(labelbottom=False)
        if i % cols_per_row == 0:
            ax.set_yticks(range(0, len(rows), every), rows[::every], fontsize=font)
        else:
            ax.tick_params(labelleft=False)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_figure(fig, out_png)


HEAD_VIEW = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>seq2bert head view</title>
<style>
body {{ font-family: sans-serif; margin: 16px; }} .tok {{ padding: 1px 4px; cursor: default; }}
svg text {{ font-size: 13px; }} label {{ margin-right: 12px; }}
</style></head><body>
<h3>{title}</h3>
<div><label>attention <select id="kind"></select></label><label>layer <select id="layer"></select></label>
<span id="legend"></span></div>
<p style="color:#666">Hover a token on the left: lines show where each head sends its weight (thicker = more);
click a head's colour to hide or show it.</p>
<svg id="view" width="700" height="400"></svg>
<script id="data" type="application/json">{data}</script>
<script>
const DATA = JSON.parse(document.getElementById("data").textContent);
const COLORS = ["#1f77b4","#ff7f0e","#2ca02c","#d62728","#9467bd","#8c564b","#e377c2","#7f7f7f","#bcbd22",
                "#17becf","#393b79","#637939","#8c6d31","#843c39","#7b4173","#3182bd"];
const kindSel = document.getElementById("kind"), layerSel = document.getElementById("layer");
let hidden = new Set();
for (const k of Object.keys(DATA.layers)) kindSel.add(new Option(k, k));
function fillLayers() {{
  layerSel.innerHTML = "";
  DATA.layers[kindSel.value].forEach((_, i) => layerSel.add(new Option(i, i)));
}}
function draw(focus) {{
  const kind = kindSel.value, w = DATA.layers[kind][+layerSel.value];
  const [qs, ks] = DATA.tokens[kind], svg = document.getElementById("view"), ns = "http://www.w3.org/2000/svg";
  const rowH = 20, x0 = 150, x1 = 450;
  svg.setAttribute("height", Math.max(qs.length, ks.length) * rowH + 30);
  svg.innerHTML = "";
  const legend = document.getElementById("legend"); legend.innerHTML = "";
  w.forEach((_, h) => {{
    const s = document.createElement("span"); s.className = "tok"; s.textContent = "head " + h;
    s.style.background = hidden.has(h) ? "#eee" : COLORS[h % COLORS.length]; s.style.color = "white";
    s.onclick = () => {{ hidden.has(h) ? hidden.delete(h) : hidden.add(h); draw(focus); }};
    legend.appendChild(s);
  }});
  w.forEach((head, h) => {{
    if (hidden.has(h)) return;
    head.forEach((row, i) => {{
      if (focus !== undefined && focus !== i) return;
      row.forEach((a, j) => {{
        if (a < 0.02) return;
        const l = document.createElementNS(ns, "line");
        l.setAttribute("x1", x0); l.setAttribute("y1", 20 + i * rowH); l.setAttribute("x2", x1);
        l.setAttribute("y2", 20 + j * rowH); l.setAttribute("stroke", COLORS[h % COLORS.length]);
        l.setAttribute("stroke-width", 4 * a); l.setAttribute("stroke-opacity", focus === undefined ? 0.25 : 0.8);
        svg.appendChild(l);
      }});
    }});
  }});
  qs.forEach((t, i) => {{
    const e = document.createElementNS(ns, "text"); e.setAttribute("x", x0 - 8); e.setAttribute("y", 24 + i * rowH);
    e.setAttribute("text-anchor", "end"); e.textContent = t;
    e.onmouseenter = () => draw(i); e.onmouseleave = () => draw(undefined); svg.appendChild(e);
  }});
  ks.forEach((t, j) => {{
    const e = document.createElementNS(ns, "text"); e.setAttribute("x", x1 + 8); e.setAttribute("y", 24 + j * rowH);
    e.textContent = t; svg.appendChild(e);
  }});
}}
kindSel.onchange = () => {{ fillLayers(); draw(); }}; layerSel.onchange = () => draw();
fillLayers(); draw();
</script></body></html>
"""


DECIMALS = 3  # the weights' decimals in a page or an answer: 0.001 of a row that sums to 1


def rounded(weights: torch.Tensor, decimals: int = DECIMALS) -> list:
    """A tensor of attention weights as nested lists of floats rounded to ``decimals`` (in float64, whose
    shortest repr is then the rounded decimal: at most ``decimals`` + 2 characters in JSON)."""
    return torch.round(weights.double(), decimals=decimals).tolist()


def write_head_view(maps: AttentionMaps, out_html: str | Path, *, decimals: int = DECIMALS) -> Path:
    """A self-contained HTML page (inline data and script, nothing fetched) showing every head of every
    layer of ``maps``: the tokens and the weight matrices (rounded to ``decimals``) are embedded as JSON."""
    data = {
        "layers": {k: [rounded(layer, decimals) for layer in layers] for k, layers in maps.layers.items()},
        "tokens": {k: [list(q), list(kk)] for k, (q, kk) in maps.tokens.items()},
    }
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace(
        "</", "<\\/"
    )  # safe inside <script>
    page = HEAD_VIEW.format(title=html.escape(maps.title or "attention"), data=payload)
    out_html = Path(out_html)
    out_html.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_html.with_name(f".{out_html.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out_html)
    return out_html


def plot_positional_encoding(
    d_model: int, length: int, out_png: str | Path, *, interleaved: bool = True
) -> Path:
    """The sinusoidal table (length × d_model) as an image: positions down, dimensions across."""
    from seq2bert.nn.embeddings import sinusoidal_table

    if d_model < 2 or length < 1:
        raise UserError(f"--d-model must be >= 2 and --length >= 1, got {d_model} and {length}")
    table = sinusoidal_table(length, d_model, interleaved=interleaved)  # (length, d_model)
    fig, ax = plt.subplots(figsize=(8.0, 5.0))
    image = ax.imshow(table.numpy(), cmap="RdBu", vmin=-1.0, vmax=1.0, aspect="auto")
    ax.set(
        xlabel="dimension i",
        ylabel="position pos",
        title=f"sinusoidal positional encoding, d_model = {d_model}",
    )
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    return save_figure(fig, out_png)


def plot_similarity(labels: list[str], matrix: torch.Tensor, out_png: str | Path, *, title: str = "") -> Path:
    """A similarity matrix with its values written in the cells (e.g. cosine similarities of contextual
    vectors of one word in several sentences)."""
    n = len(labels)
    if tuple(matrix.shape) != (n, n):
        raise ValueError(f"matrix must be ({n}, {n}), got {tuple(matrix.shape)}")
    fig, ax = plt.subplots(figsize=(2.0 + 1.1 * n, 1.5 + 0.8 * n))
    ax.imshow(matrix.numpy(), cmap="viridis", vmin=min(0.0, float(matrix.min())), vmax=1.0)
    short = [label if len(label) <= 40 else label[:37] + "…" for label in labels]
    ax.set_xticks(range(n), [str(i + 1) for i in range(n)])
    ax.set_yticks(range(n), [f"{i + 1}. {s}" for i, s in enumerate(short)], fontsize=8)
    for i in range(n):
        for j in range(n):
            ax.text(j, i, f"{float(matrix[i, j]):.2f}", ha="center", va="center", color="white", fontsize=8)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return save_figure(fig, out_png)
