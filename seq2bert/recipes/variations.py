"""Recipe: "Variations on the Transformer architecture" (Vaswani et al. 2017, Table 3) at small scale.

Each row changes one thing of a base Transformer, trains it with the same data and budget, and reports
dev perplexity and dev BLEU, as the paper's Table 3 does:

    base  the run's model (by default transformer_small: N = 3, d_model = 256, d_ff = 1024, h = 4)
    (A)   the number of heads h ∈ {1, 4, 8, 16} at constant compute: d_k = d_v = d_model / h
    (B)   smaller attention keys d_k ∈ {d_model / 2h, d_model / 4h} ("reducing the attention key size d_k
          hurts model quality"), d_v unchanged
    (C)   model size, the paper's ratios to its base: N ∈ {N/3, 2N/3, 4N/3} (2, 4, 8 of 6), d_model halved and
          doubled (d_k = d_v = d_model / h), d_ff halved and doubled ("bigger models are better")
    (D)   regularisation, the paper's values: P_drop ∈ {0, 0.2} and ε_ls ∈ {0, 0.2} (the base's own left out;
          "dropout is very helpful in avoiding over-fitting")
    (E)   learned positional embeddings in place of the sinusoids ("nearly identical results")

    seq2bert variations --data ../shared/data/multi30k --rows A,B,C,D,E --out runs/variations \
        --set train.max_minutes=8

Read top to bottom: ``variation_rows`` lists the rows, ``run_variations`` trains and scores each (one run
directory per row, so a killed command resumes where it stopped), ``format_variations`` prints the table.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path

from seq2bert import config as config_io
from seq2bert.errors import ConfigError
from seq2bert.models.transformer.config import TransformerConfig
from seq2bert.recipes.translation import TranslationConfig, check_same_run, evaluate, load_pairs, train

log = logging.getLogger(__name__)

ROWS = ("A", "B", "C", "D", "E")


@dataclass
class Variation:
    row: str  # "base", "A", "B"
    name: str  # directory name
    overrides: list[str]  # model.* overrides on the base config


def model_size_rows(base: TransformerConfig) -> list[Variation]:
    """Row (C): N at 1/3, 2/3 and 4/3 of the base's (encoder and decoder alike), d_model and d_ff halved and
    doubled — the paper's ratios to its base (N = 6: 2, 4, 8; d_model = 512: 256, 1024; d_ff = 2048: 1024,
    4096). d_k = d_v = d_model / h, as the paper's (C) rows keep."""
    N, d, d_ff = base.encoder_layers, base.d_model, base.encoder_ffn_dim
    out = []
    for n in sorted({max(1, round(N * k / 3)) for k in (1, 2, 4)} - {N}):
        out.append(Variation("C", f"C-N{n}", [f"model.encoder_layers={n}", f"model.decoder_layers={n}"]))
    for size in (d // 2, 2 * d):
        out.append(Variation("C", f"C-d{size}", [f"model.d_model={size}", "model.d_k=0", "model.d_v=0"]))
    for size in (d_ff // 2, 2 * d_ff):
        both = [f"model.encoder_ffn_dim={size}", f"model.decoder_ffn_dim={size}"]
        out.append(Variation("C", f"C-ff{size}", both))
    return out


def variation_rows(base: TransformerConfig, rows: list[str], label_smoothing: float = 0.1) -> list[Variation]:
    """The base row, then the rows asked for, derived from the base model (and its ``label_smoothing``)."""
    d, h = base.d_model, base.encoder_attention_heads
    out = [Variation("base", "base", [])]
    for row in rows:
        if row == "A":
            for heads in (1, 4, 8, 16):
                if heads != h and d % heads == 0:
                    both = [
                        f"model.encoder_attention_heads={heads}",
                        f"model.decoder_attention_heads={heads}",
                    ]
                    out.append(Variation("A", f"A-h{heads}", [*both, "model.d_k=0", "model.d_v=0"]))
        elif row == "B":
            for d_k in (d // (2 * h), d // (4 * h)):
                out.append(Variation("B", f"B-dk{d_k}", [f"model.d_k={d_k}", f"model.d_v={d // h}"]))
        elif row == "C":
            out += model_size_rows(base)
        elif row == "D":
            for p in sorted({0.0, 0.2} - {base.dropout}):  # the paper's values
                out.append(Variation("D", f"D-drop{p:g}", [f"model.dropout={p}"]))
            for e in sorted({0.0, 0.2} - {label_smoothing}):
                out.append(Variation("D", f"D-ls{e:g}", [f"train.label_smoothing={e}"]))
        elif row == "E":
            if base.position_embedding != "learned":
                out.append(Variation("E", "E-learned", ["model.position_embedding=learned"]))
        else:
            raise ConfigError(f"--rows: expected some of {', '.join(ROWS)}, got {row!r}")
    return out


def run_variations(cfg: TranslationConfig, rows: list[str], out_dir: str | Path) -> list[dict]:
    """Train and score every row; returns one results row each (also written to ``variations.json``)."""
    if not isinstance(cfg.model, TransformerConfig):
        raise ConfigError("variations: model.model_type must be transformer")
    out_dir = Path(out_dir)
    # Table 3 is measured on the dev set: no test split
    cfg = replace(cfg, data=replace(cfg.data, test_src="", test_tgt=""))
    results = []
    for v in variation_rows(cfg.model, rows, cfg.train.label_smoothing):
        row_cfg = config_io.apply_overrides(cfg, v.overrides)
        run_dir = out_dir / v.name
        check_same_run(run_dir, row_cfg)  # other --set values: not these results
        if (run_dir / "variation.json").is_file():  # done by an earlier, interrupted command
            results.append(json.loads((run_dir / "variation.json").read_text()))
            continue
        log.info("variation %s: %s", v.name, " ".join(v.overrides) or "(base)")
        resume = run_dir.exists()
        trained = train(row_cfg, run_dir, resume=resume)
        dev = evaluate(run_dir, load_pairs(row_cfg.data)["valid"])
        m = row_cfg.model
        h = m.encoder_attention_heads
        result = {
            "row": v.row,
            "name": v.name,
            "N": m.encoder_layers,
            "d_model": m.d_model,
            "d_ff": m.encoder_ffn_dim,
            "h": h,
            "d_k": m.d_k or m.d_model // h,
            "d_v": m.d_v or m.d_model // h,
            "P_drop": m.dropout,
            "eps_ls": row_cfg.train.label_smoothing,
            "positions": m.position_embedding,
            "steps": trained["steps"],
            "dev_ppl": trained["valid_perplexity"],
            "dev_bleu": dev["bleu"],
            "params_M": trained["params"] / 1e6,
        }
        config_io.atomic_write_text(run_dir / "variation.json", json.dumps(result, indent=2) + "\n")
        results.append(result)
    config_io.atomic_write_text(out_dir / "variations.json", json.dumps(results, indent=2) + "\n")
    return results


def format_variations(results: list[dict]) -> str:
    """A Markdown table shaped like the paper's Table 3."""
    cols = [
        "",
        "N",
        "d_model",
        "d_ff",
        "h",
        "d_k",
        "d_v",
        "P_drop",
        "ε_ls",
        "steps",
        "PPL (dev)",
        "BLEU (dev)",
        "params ×10⁶",
    ]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in results:
        label = "base" if r["row"] == "base" else f"({r['row']})"
        if r["row"] == "E":  # the paper's row: "positional embedding instead of sinusoids"
            label += f" {r.get('positions', 'learned')} positions"
        cells = [
            label,
            r["N"],
            r["d_model"],
            r["d_ff"],
            r["h"],
            r["d_k"],
            r["d_v"],
            r["P_drop"],
            r["eps_ls"],
            f"{r['steps']:,}",
            f"{r['dev_ppl']:.2f}",
            f"{r['dev_bleu']:.1f}",
            f"{r['params_M']:.1f}",
        ]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)
