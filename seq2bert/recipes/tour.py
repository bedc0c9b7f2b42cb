"""The lineage tour, the main job: the encoder-decoders of the lineage trained on one task with one budget.

Read top to bottom:
1. the task: by default the built-in synthetic language pair ``lang`` (data/synthetic.py: an invented SVO →
   SOV language with its own lexicon, agreement and postpositions) with sentences of 3 to 16 words, so
   that long inputs exist; or real parallel text with ``--data DIR`` (e.g. ../shared/data/multi30k);
2. the models, in the order the papers came: Seq2Seq with its fixed vector (Sutskever et al. 2014), the
   same reading the source reversed (their Sect. 3.3), the RNN Encoder-Decoder that feeds its fixed vector
   to every decoder step (Cho et al. 2014: the "RNNencdec" that Bahdanau et al. compare against), attention
   (Bahdanau et al. 2015; Luong et al. 2015, general score) and the Transformer (Vaswani et al. 2017) —
   each small enough for 2 CPU cores;
3. the same budget for each: the same number of steps over the same batches (``--budget`` scales it), so
   the rows differ only by the model and the way its family is trained (the recurrent models with Adam at
   a constant rate, the Transformer with warm-up); the table shows what each step costs (time, tokens/s);
4. each is scored on the test split, overall and by source length, and the plot of quality against
   length shows the claim of Bahdanau et al. (Fig. 2): a fixed-size vector loses long sentences, attention
   does not; one alignment per attention model shows what it looks at.

    seq2bert tour                                   # synthetic data, under 10 minutes on 2 cores
    seq2bert tour --data ../shared/data/multi30k --budget 4
    seq2bert tour --models seq2seq,bahdanau --set train.scheduled_sampling.schedule=inverse_sigmoid
                                                    # some of the models, with settings of every run changed
    seq2bert tour --models bahdanau,bahdanau-hard   # hard attention (Xu et al. 2015) beside soft, a row each
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from seq2bert import config as config_io
from seq2bert.errors import ConfigError
from seq2bert.precision import describe_machine, use_bf16
from seq2bert.recipes.translation import (
    TranslationConfig,
    align,
    check_run_config,
    check_same_run,
    load_pairs,
    train,
)
from seq2bert.training.distributed import resolve_device
from seq2bert.viz.attention import plot_alignment, plot_bleu_by_length

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TourModel:
    name: str
    slug: str
    overrides: tuple[str, ...]  # the model
    attention: bool
    training: tuple[str, ...] = ()  # its optimiser settings (each family the way it trains well)


# Recurrent models: small (recurrent layers of 128 units) so that a step is cheap, and many small steps
# with Adam at 1e-2 after 100 warm-up steps, decaying linearly to 0 (the number of steps counts more than
# their size: in 1,250 steps of 600 tokens the Luong model reached BLEU 5).
RNN = ("model.embedding_dim=64", "model.hidden_size=128", "model.dropout=0.0")
RNN_TRAINING = (
    "train.lr=1e-2",
    "train.schedule=linear",
    "train.warmup_steps=100",
    "train.label_smoothing=0.0",
)
# Uniform initialisation scaled to the width. Sutskever et al. draw every weight from ±0.08 and Luong et al.
# from ±0.1, for layers of 1,000 cells; a unit's pre-activation grows with √(fan-in) · range, so at 128
# cells the same signal needs ranges √(1000/128) ≈ 2.8× as wide: ±0.22 and ±0.28. Measured on this task with
# the papers' ±0.1, Luong's attention stayed uniform for most of the budget, and whether it then learned
# was chance: test BLEU 2.5 to 88.8 over seeds 0–2 and machines, fp32 and bf16 alike (a plateau, not a
# precision issue); at ±0.28, 99.1–99.9 (docs/results.md, "The tour on every CPU").
SUTSKEVER_INIT, LUONG_INIT = "model.init_range=0.22", "model.init_range=0.28"
# Luong's model, whose gradients take the longest path (two LSTM layers, and attention fed back as the next
# step's input), warms up for 300 steps: with 100, seed 2 still stalled at a partial alignment (test BLEU 54 in
# fp32, 92 under bf16); with 300, 99 in both.
LUONG_TRAINING = tuple(
    "train.warmup_steps=300" if o.startswith("train.warmup_steps=") else o for o in RNN_TRAINING
)
# The Transformer: Adam with warm-up and inverse-square-root decay, label smoothing 0.1 (Vaswani et al. 5.3).
TRANSFORMER_TRAINING = (
    "train.lr=2e-3",
    "train.schedule=inverse_sqrt",
    "train.warmup_steps=100",
    "train.label_smoothing=0.1",
)
BAHDANAU = ("model.model_type=bahdanau", "model.attention_size=128", "model.maxout_size=64", *RNN)
MODELS = (
    TourModel(
        "Seq2Seq (fixed vector)",
        "seq2seq",
        (
            "model.model_type=seq2seq",
            "model.num_layers=2",
            "model.reverse_source=false",
            SUTSKEVER_INIT,
            *RNN,
        ),
        False,
        RNN_TRAINING,
    ),
    TourModel(
        "Seq2Seq, reversed source",
        "seq2seq-reversed",
        ("model.model_type=seq2seq", "model.num_layers=2", "model.reverse_source=true", SUTSKEVER_INIT, *RNN),
        False,
        RNN_TRAINING,
    ),
    TourModel(
        "RNN Encoder-Decoder (Cho et al.)",
        "cho",
        ("model.model_type=cho", "model.maxout_size=256", *RNN),
        False,
        RNN_TRAINING,
    ),
    TourModel("Bahdanau attention", "bahdanau", BAHDANAU, True, RNN_TRAINING),
    TourModel(
        "Luong attention (general)",
        "luong",
        (
            "model.model_type=luong",
            "model.score=general",
            "model.attention=global",
            "model.num_layers=2",
            LUONG_INIT,
            *RNN,
        ),
        True,
        LUONG_TRAINING,
    ),
    TourModel(
        "Transformer",
        "transformer",
        (
            "model.model_type=transformer",
            "model.d_model=128",
            "model.encoder_layers=2",
            "model.decoder_layers=2",
            "model.encoder_attention_heads=4",
            "model.decoder_attention_heads=4",
            "model.encoder_ffn_dim=512",
            "model.decoder_ffn_dim=512",
            "model.dropout=0.1",
        ),
        True,
        TRANSFORMER_TRAINING,
    ),
)

# rows the tour runs when --models names them (not by default): hard attention (Xu et al. 2015) beside the soft
# attention it samples from — Bahdanau's model, its context the annotation at a location drawn from α
OPTIONS = (
    TourModel(
        "Bahdanau attention, hard (Xu et al.)",
        "bahdanau-hard",
        (*BAHDANAU, "model.attention_type=hard"),
        True,
        RNN_TRAINING,
    ),
)
SYNTHETIC = (
    "data.task=lang",
    "data.num_train=20000",
    "data.num_valid=300",
    "data.num_test=500",
    "data.min_len=3",
    "data.max_len=16",
    "data.max_tokens=300",
)
STEPS = 2000  # per model at budget 1: small batches, many updates (what recurrent models learn from)


@dataclass
class TourResult:
    rows: list[dict]
    length_plot: Path
    attention_maps: dict[str, Path] = field(default_factory=dict)
    seconds: float = 0.0
    machine: str = ""  # the processor and the precision the models trained in (precision.describe_machine)
    overrides: tuple[str, ...] = ()  # the --set settings every run was trained with


def model_config(
    model: TourModel,
    *,
    budget: float,
    seed: int,
    data: list[str],
    bf16: bool | str = "auto",
    overrides: tuple[str, ...] = (),
) -> TranslationConfig:
    """The run of ``model``: the data, its own settings, the budget and seed, then ``overrides`` (--set)."""
    steps = max(10, round(STEPS * budget))
    metric = "bleu" if any(o == "data.task=files" for o in data) else "exact_match"
    settings = [
        *data,
        *model.overrides,
        *model.training,
        f"train.max_steps={steps}",
        f"train.eval_every={steps}",
        f"train.seed={seed}",
        f"train.metric={metric}",
        "train.log_every=25",
        f"train.bf16={str(bf16).lower()}",
        *overrides,
    ]
    try:
        return config_io.apply_overrides(TranslationConfig(), settings)
    except ConfigError as e:
        raise ConfigError(f"{model.slug}: {e}") from None


def select_models(slugs: list[str] | None) -> tuple[TourModel, ...]:
    """The MODELS named by ``slugs`` (in the tour's order); None: all of them."""
    if slugs is None:
        return MODELS
    every = []  # the tour's order, each option after its model (bahdanau-hard after bahdanau)
    for model in MODELS:
        every += [model, *(o for o in OPTIONS if o.slug.startswith(f"{model.slug}-"))]
    known = [m.slug for m in every]
    unknown = [s for s in slugs if s not in known]
    if unknown or not slugs:
        raise ConfigError(
            f"--models: expected some of {', '.join(known)}, got {', '.join(unknown) or 'none'}"
        )
    return tuple(m for m in every if m.slug in slugs)


def longest_test_source(cfg: TranslationConfig, n_words: int = 18) -> str:
    """A long test sentence (for the alignment maps): the first with at least ``n_words`` words, else the
    longest."""
    sources = [s for s, _ in load_pairs(cfg.data)["test"]]
    return next((s for s in sources if len(s.split()) >= n_words), max(sources, key=lambda s: len(s.split())))


def run_tour(
    out_dir: str | Path = "runs/tour",
    *,
    budget: float = 1.0,
    seed: int = 0,
    data: list[str] | None = None,
    bf16: bool | str = "auto",
    models: list[str] | None = None,
    overrides: tuple[str, ...] = (),
) -> TourResult:
    """Train and score the models of MODELS into ``out_dir``/<model>; write the length plot and the
    alignment maps; return the rows. ``data``: --set overrides naming real parallel text (default: the
    synthetic pair); ``bf16``: train.bf16 of every model (auto: bf16 autocast where the CPU computes it
    natively); ``models``: the slugs of the models to train (default: all); ``overrides``: --set settings
    of every run, applied last (e.g. train.scheduled_sampling.schedule=inverse_sigmoid). Every run's settings
    are checked before the first is trained. A model whose run directory already holds results.json of the
    same settings is not trained again; one of other settings is an error (ConfigError), not a stale row."""
    out_dir = Path(out_dir)
    start = time.perf_counter()
    data = list(data or SYNTHETIC)
    chosen = select_models(models)
    rows, buckets, maps = [], {}, {}
    configs = [
        model_config(m, budget=budget, seed=seed, data=data, bf16=bf16, overrides=tuple(overrides))
        for m in chosen
    ]
    device = resolve_device(configs[0].train.device)
    machine = describe_machine(device, use_bf16(configs[0].train.bf16, device))
    log.info("tour on %s", machine)
    for model, cfg in zip(chosen, configs, strict=True):  # another --budget, --seed or --data: not these runs
        try:
            check_run_config(cfg)
        except ConfigError as e:
            raise ConfigError(f"{model.slug}: {e}") from None
        check_same_run(out_dir / model.slug, cfg)
    for model, cfg in zip(chosen, configs, strict=True):
        run_dir = out_dir / model.slug
        if (run_dir / "results.json").is_file():
            log.info("%s: already trained in %s", model.name, run_dir)
            row = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
        else:
            log.info("training %s", model.name)
            row = train(cfg, run_dir, resume=run_dir.exists())  # an interrupted tour continues
        row = {"model": model.name, **{k: v for k, v in row.items() if k != "model"}}
        rows.append(row)
        buckets[model.name] = row.get("test_bleu_by_length", {})
        if model.attention:
            a = align(run_dir, longest_test_source(cfg))
            maps[model.name] = plot_alignment(
                a.source_tokens,
                a.target_tokens,
                a.weights,
                out_dir / f"attention-{model.slug}.png",
                title=model.name,
            )
    plot = plot_bleu_by_length(buckets, out_dir / "bleu_by_length.png", key="bleu")
    result = TourResult(rows, plot, maps, time.perf_counter() - start, machine, tuple(overrides))
    summary = {
        "rows": rows,
        "length_plot": str(plot),
        "attention_maps": {k: str(v) for k, v in maps.items()},
        "seconds": result.seconds,
        "budget": budget,
        "seed": seed,
        "machine": machine,
        "overrides": list(overrides),
    }
    config_io.atomic_write_text(out_dir / "tour.json", json.dumps(summary, indent=2) + "\n")
    return result


def format_tour(result: TourResult) -> str:
    """The table: one row per model — parameters, training time, tokens/s, test exact match and BLEU, and
    BLEU per source-length bucket."""
    from seq2bert.report import format_table

    labels: list[str] = []
    for row in result.rows:
        labels += [b for b in row.get("test_bleu_by_length", {}) if b not in labels]
    flat = []
    for row in result.rows:
        by_length = row.get("test_bleu_by_length", {})
        flat.append({**row, **{f"len {b}": by_length[b]["bleu"] for b in labels if b in by_length}})
    columns = [
        ("model", "model"),
        ("params", "params"),
        ("train_seconds", "train time"),
        ("tokens_per_s", "tokens/s"),
        ("test_exact_match", "test exact %"),
        ("test_bleu", "test BLEU"),
        *[(f"len {b}", f"BLEU {b}") for b in labels],
    ]
    settings = [f"settings: {' '.join(result.overrides)}"] if result.overrides else []
    lines = [
        f"machine: {result.machine}",
        *settings,
        "",
        format_table(flat, columns),
        "",
        f"quality by source length: {result.length_plot}",
    ]
    lines += [f"attention of {name}: {path}" for name, path in result.attention_maps.items()]
    lines.append(f"{result.seconds / 60:.1f} minutes in all")
    return "\n".join(lines)
