"""Batch prediction over a file: every row of a CSV, TSV, JSON Lines or Parquet file through a model's
pipeline, the row's columns written back with the prediction's beside them.

    seq2bert predict runs/sst2 reviews.csv --column text --out labelled.jsonl

The model is a fine-tuning run directory (its best/ checkpoint, and the columns its run read: run.json's
data section) or any checkpoint directory; what its config.json names says what is predicted (``SHAPES``):

    classify      …ForSequenceClassification        label, score          (--pair-column: pairs)
    regression    one output, or problem_type        score
    multi-label   problem_type multi_label_…         labels, scores        (those over config.json's threshold)
    tag           …ForTokenClassification           entities              (entity_group, word, start, end, score;
                                                                          --words: words, each tagged word's entity)
    qa            …ForQuestionAnswering             answer, score, start, end   (--question-column, --context-column)
    choice        …ForMultipleChoice                choice, score, scores (--column: the context; --choice-columns;
                                                                          --pair-column: each choice's start)
    embed         any other encoder                 embedding             (a list of floats)
    translate     an encoder-decoder                translation
    generate      a language model                  generation            (--max-new-tokens)

Each shape calls the pipeline the single-text commands call (pipelines/tasks.py, encoders.py, generation.py)
on a chunk of rows at a time (``CHUNK``): the pipelines sort a chunk's texts by length into batches and
answer in the chunk's order, which is written out before the next chunk is read — a file larger than memory
is predicted in the memory of one chunk. The output's format is its extension's; it is written atomically
(data/tables.py ``TableWriter``): a run that fails on a bad row leaves nothing at ``out``. A prediction column
whose name the input already has (a labelled file's "label") is written as ``predicted_<name>``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from seq2bert.data import tables
from seq2bert.data.paths import require_file
from seq2bert.errors import CheckpointError, UserError
from seq2bert.io import read_json
from seq2bert.models import registry
from seq2bert.pipelines.encoders import embed
from seq2bert.pipelines.generation import generate, translate
from seq2bert.pipelines.tasks import MULTI_LABEL, answers, choose, classify, tag

log = logging.getLogger("seq2bert.pipelines")

CHUNK = 10_000  # rows read, predicted and written at a time


@dataclass(frozen=True)
class Columns:
    """The columns a shape reads: the text (a choice's context), a pair's second text, a question and its
    context, the choices."""

    text: str = "text"
    pair: str | None = None
    question: str = "question"
    context: str = "context"
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Settings:
    """What the pipelines are given: texts per batch, precision, and the decoding of translate / generate."""

    batch_size: int = 32
    bf16: bool | str = "auto"
    max_new_tokens: int = 50
    num_beams: int = 1
    words: bool = False  # tag: one {"entity", "score", "word", "start", "end"} per tagged word, not entities


def _texts(c: Columns, where: str, row: dict) -> str:
    return tables.text_value(where, row, c.text)


def _text_or_pair(c: Columns, where: str, row: dict) -> str | tuple[str, str]:
    text = tables.text_value(where, row, c.text)
    return text if c.pair is None else (text, tables.text_value(where, row, c.pair))


def _question(c: Columns, where: str, row: dict) -> tuple[str, str]:
    return tables.text_value(where, row, c.question), tables.text_value(where, row, c.context)


def _choices(c: Columns, where: str, row: dict) -> tuple[str, list[str]]:
    """(the context, each choice — after the pair column's start of a sentence, SWAG's way, when given)."""
    start = "" if c.pair is None else tables.text_value(where, row, c.pair, allow_empty=True)
    endings = [tables.text_value(where, row, k) for k in c.choices]
    return tables.text_value(where, row, c.text), [f"{start} {e}".strip() for e in endings]


def _text_flags(c: Columns) -> list[tuple[str, str | None]]:
    return [("--column", c.text)]


def _pair_flags(c: Columns) -> list[tuple[str, str | None]]:
    return [("--column", c.text), ("--pair-column", c.pair)]


def _qa_flags(c: Columns) -> list[tuple[str, str | None]]:
    return [("--question-column", c.question), ("--context-column", c.context)]


def _choice_flags(c: Columns) -> list[tuple[str, str | None]]:
    if len(c.choices) < 2:
        raise UserError("--choice-columns: a multiple-choice model needs two or more choice columns (A,B,…)")
    return [("--column", c.text), ("--pair-column", c.pair), *(("--choice-columns", k) for k in c.choices)]


def _classified(model: str, items: list, s: Settings) -> list[dict]:
    return [
        {"label": r["label"], "score": r["score"]}
        for r in classify(items, model, top_k=1, batch_size=s.batch_size, bf16=s.bf16)
    ]


def _regressed(model: str, items: list, s: Settings) -> list[dict]:
    return [{"score": r["score"]} for r in classify(items, model, batch_size=s.batch_size, bf16=s.bf16)]


def _multi_labelled(model: str, items: list, s: Settings) -> list[dict]:
    return [
        {"labels": [x["label"] for x in r], "scores": [x["score"] for x in r]}
        for r in classify(items, model, top_k=None, batch_size=s.batch_size, bf16=s.bf16)
    ]


def _tagged(model: str, items: list, s: Settings) -> list[dict]:
    found = tag(items, model, aggregate=not s.words, batch_size=s.batch_size)
    return [{"words" if s.words else "entities": e} for e in found]


def _answered(model: str, items: list, s: Settings) -> list[dict]:
    return answers(items, model, batch_size=s.batch_size)


def _chosen(model: str, items: list, s: Settings) -> list[dict]:
    return choose(items, model, batch_size=s.batch_size)


def _embedded(model: str, items: list, s: Settings) -> list[dict]:
    vectors = embed(items, model, batch_size=s.batch_size, bf16=s.bf16)
    return [{"embedding": v} for v in vectors.tolist()]


def _translated(model: str, items: list, s: Settings) -> list[dict]:
    found = translate(model, items, batch_size=s.batch_size, bf16=s.bf16, num_beams=s.num_beams)
    return [{"translation": t} for t in found]


def _generated(model: str, items: list, s: Settings) -> list[dict]:
    found = generate(
        items,
        model,
        max_new_tokens=s.max_new_tokens,
        num_beams=s.num_beams,
        batch_size=s.batch_size,
        bf16=s.bf16,
    )
    return [{"generation": t} for t in found]


def _entity_types() -> dict:
    """The Parquet types of a tagger's columns: its entities (or, with --words, its tagged words)."""
    import pyarrow as pa

    def spans(kind: str):
        fields = [(kind, pa.string()), ("score", pa.float64()), ("word", pa.string()), ("start", pa.int64()),
                  ("end", pa.int64())]  # fmt: skip
        return pa.list_(pa.struct(fields))

    return {"entities": spans("entity_group"), "words": spans("entity")}


@dataclass(frozen=True)
class Shape:
    """One kind of prediction: the columns it reads (``flags``: {flag: column}, checked against the file's
    columns), the input it makes of a row (``item``), the pipeline it runs on a chunk's inputs (``run``), and
    the Parquet types of its list columns (``types``, pyarrow's; an empty first list tells none)."""

    name: str
    flags: Callable[[Columns], list[tuple[str, str | None]]]
    item: Callable[[Columns, str, dict], Any]
    run: Callable[[str, list, Settings], list[dict]]
    types: Callable[[], dict] = field(default=dict)


def _lists(**names: str) -> Callable[[], dict]:
    def types() -> dict:
        import pyarrow as pa

        return {k: pa.list_(getattr(pa, v)()) for k, v in names.items()}

    return types


SHAPES: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape("classify", _pair_flags, _text_or_pair, _classified),
        Shape("regression", _pair_flags, _text_or_pair, _regressed),
        Shape(
            "multi-label",
            _pair_flags,
            _text_or_pair,
            _multi_labelled,
            _lists(labels="string", scores="float64"),
        ),
        Shape("tag", _text_flags, _texts, _tagged, _entity_types),
        Shape("qa", _qa_flags, _question, _answered),
        Shape("choice", _choice_flags, _choices, _chosen, _lists(scores="float64")),
        Shape("embed", _text_flags, _texts, _embedded, _lists(embedding="float64")),
        Shape("translate", _text_flags, _texts, _translated),
        Shape("generate", _text_flags, _texts, _generated),
    )
}


def shape_of(directory: Path) -> str:
    """The shape of a checkpoint directory's model, from its config.json: the head its architecture is, and
    for a classifier its problem_type and number of labels."""
    family = registry.family_at(directory)
    config = read_json(directory / "config.json")
    architecture = (config.get("architectures") or [None])[0]
    if family.kind == "encoder-decoder":
        return "translate"
    named = {head for head, arch in family.heads.items() if arch == architecture}
    if named & {"sequence", "similarity"}:
        if config.get("problem_type") == MULTI_LABEL:
            return "multi-label"
        labels = config.get("id2label") or {}
        return "regression" if config.get("problem_type") == "regression" or len(labels) == 1 else "classify"
    for head, shape in (("tokens", "tag"), ("qa", "qa"), ("choice", "choice")):
        if head in named:
            return shape
    if family.kind == "decoder" or config.get("is_decoder"):
        if named & {"causal_lm", "pretraining"}:
            return "generate"
        raise CheckpointError(
            f"{directory}: a {architecture} predicts nothing (expected a task head or a language model)"
        )
    return "embed"


def recorded_columns(model: str | Path, directory: Path) -> dict:
    """The columns a fine-tuning run read (run.json's data section: text_column, pair_column,
    choice_columns), as ``Columns`` fields; {} without a run.json."""
    for run in (directory / "run.json", Path(model) / "run.json"):
        if run.is_file():
            data = read_json(run).get("data")
            break
    else:
        return {}
    if not isinstance(data, dict):
        return {}
    out = {}
    for key, name in (("text_column", "text"), ("pair_column", "pair")):
        if isinstance(data.get(key), str) and data[key]:
            out[name] = data[key]
    if isinstance(data.get("choice_columns"), list) and data["choice_columns"]:
        out["choices"] = tuple(data["choice_columns"])
    return out


def check_out(path: Path, out: Path) -> None:
    """``out`` must be a file of a known format, in a folder that exists, and not the input itself."""
    if out.suffix.lower() not in tables.EXTENSIONS:
        known = ", ".join(tables.EXTENSIONS)
        raise UserError(f"--out {out}: cannot tell the format from the extension (expected {known})")
    if not out.parent.is_dir():
        raise UserError(f"--out {out}: no folder {out.parent} (create it first)")
    if out.is_dir():
        raise UserError(f"--out {out}: a folder; expected a file name (OUT.jsonl, OUT.csv, OUT.parquet)")
    if out.exists() and path.exists() and out.resolve() == path.resolve():
        raise UserError(f"--out {out}: the input file itself; write the predictions to another file")


def row_estimate(path: Path, fmt: str) -> int | None:
    """About how many rows ``path`` holds, for the progress bar's ETA: a Parquet file's count, a text file's
    lines (less a CSV's header)."""
    if fmt == "parquet":
        return tables._parquet_file(path).metadata.num_rows
    lines = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            lines += block.count(b"\n")
    return max(lines - (fmt in ("csv", "tsv")), 0)


def chunks(items: Iterable, size: int) -> Iterator[list]:
    """Lists of ``size`` consecutive items (the last may be shorter)."""
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _named(prediction: dict, row: dict) -> dict:
    """The prediction's columns, each that the row already has renamed ``predicted_<name>``."""
    return {(f"predicted_{k}" if k in row else k): v for k, v in prediction.items()}


def predict_file(
    model: str | Path,
    path: str | Path,
    out: str | Path,
    *,
    task: str | None = None,
    columns: dict | None = None,
    fmt: str | None = None,
    settings: Settings | None = None,
    chunk_size: int = CHUNK,
    progress: bool = True,
) -> dict:
    """Predict every row of the table ``path`` with ``model`` (a run or checkpoint directory) and write the
    rows with their predictions to ``out`` (its extension's format), atomically; ``task``: one of ``SHAPES``
    (default: the model's, ``shape_of``); ``columns``: ``Columns`` fields given (else the run's recorded ones,
    else the defaults). ``progress``: a bar of rows with their rate and the time left, on a terminal.
    Returns {"rows", "shape", "out"}."""
    path, out, settings = Path(path), Path(out), settings or Settings()
    if chunk_size < 1 or settings.batch_size < 1:
        raise UserError(f"--batch-size, --chunk-size: at least 1, got {settings.batch_size}, {chunk_size}")
    require_file(path, "", "a table to predict (CSV, TSV, JSON Lines, Parquet)")
    check_out(path, out)
    directory = registry.checkpoint_dir(model)
    if task is not None and task not in SHAPES:
        raise UserError(f"--task: expected one of {', '.join(SHAPES)}, got {task!r}")
    shape = SHAPES[task or shape_of(directory)]
    given = {k: v for k, v in (columns or {}).items() if v}
    cols = Columns(**{**recorded_columns(model, directory), **given})
    if shape.name not in ("classify", "regression", "multi-label", "choice") and cols.pair is not None:
        if "pair" in given:
            raise UserError(f"--pair-column: a {shape.name} model reads one text, not pairs")
        cols = Columns(**{**vars(cols), "pair": None})
    fmt = tables.table_format(path, fmt)
    have = tables.columns(path, fmt)
    for flag, column in shape.flags(cols):
        tables.require_columns(path, have, {flag: column})
    types = shape.types() if tables.table_format(out) == "parquet" else {}
    n = 0
    bar = tqdm(
        total=row_estimate(path, fmt),
        unit="rows",
        desc=f"predict ({shape.name})",
        disable=None if progress else True,  # None: on a terminal (a log file gets no bar)
        mininterval=1.0,
    )
    with bar, tables.TableWriter(out, types=types) as writer:
        for chunk in chunks(tables.rows(path, fmt), chunk_size):
            items = [shape.item(cols, where, row) for where, row in chunk]
            predictions = shape.run(str(directory), items, settings)
            for (_, row), prediction in zip(chunk, predictions, strict=True):
                writer.write({**row, **_named(prediction, row)})
            n += len(chunk)
            bar.update(len(chunk))
    log.info("%s: %d rows predicted (%s)", out, n, shape.name)
    return {"rows": n, "shape": shape.name, "out": str(out)}
