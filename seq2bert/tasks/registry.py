"""The one registry of fine-tuning tasks, keyed by the name ``--task`` / ``data.task`` gives. Each task is one
record (tasks/task.py) built from its shape's behaviour and its own data (tasks/shapes.py); this file lists
them. Fine-tuning, ``seq2bert evaluate`` and distillation find a task here, and a run's configuration names
one of them: the name is checked against this dict when the configuration is read, so a task registered by a
plugin module (``register(...)`` when it is imported; the CLI imports the modules $SEQ2BERT_PLUGINS names) is
chosen from YAML, ``--set data.task=…`` or ``--task`` like a built-in one.
"""

from __future__ import annotations

from functools import partial

from seq2bert.data.conll import read_conll
from seq2bert.data.glue import GLUE_TASKS, GlueTask, read_glue
from seq2bert.data.gpt_finetuning import GLUE_SHAPES
from seq2bert.data.squad import read_squad
from seq2bert.data.swag import read_swag
from seq2bert.errors import ConfigError
from seq2bert.tasks import files
from seq2bert.tasks.embedding_files import SENTENCE_EMBEDDING
from seq2bert.tasks.shapes import multiple_choice, span_extraction, text_classification, token_tagging
from seq2bert.tasks.tagging_files import TOKEN_CLASSIFICATION
from seq2bert.tasks.task import ExtraDev, Task

# MNLI's second dev set, of genres absent from training (BERT reports MNLI-m and MNLI-mm)
MNLI_MISMATCHED = ExtraDev(task="mnli_mismatched", key="mm", predictions="predictions_mismatched.jsonl")


def glue_task(spec: GlueTask) -> Task:
    """A GLUE task (data/glue.py's spec: its columns, labels, metrics): train.tsv and its dev file."""
    return text_classification(
        spec.name,
        files={"train": ("train.tsv",), "dev": (spec.dev_file,)},
        reader=partial(read_glue, spec),
        labels=spec.labels,
        metrics=spec.metrics,
        main_metric=spec.main_metric,
        decoder_shape=GLUE_SHAPES[spec.name],
        extra_dev=MNLI_MISMATCHED if spec.name == "mnli" else None,
    )


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        *(glue_task(spec) for spec in GLUE_TASKS.values()),
        token_tagging(
            "conll2003",
            files={"train": ("train.txt",), "dev": ("valid.txt", "dev.txt", "testa.txt")},
            reader=read_conll,
        ),
        span_extraction("squad", reader=read_squad),
        span_extraction("squad_v2", reader=read_squad, version_2=True),
        multiple_choice(
            "swag", files={"train": ("train.csv",), "dev": ("val.csv", "dev.csv")}, reader=read_swag
        ),
        SENTENCE_EMBEDDING,
        *files.TASKS.values(),  # over a user's own files (--train, --valid): text-classification, …
        TOKEN_CLASSIFICATION,  # over a user's files (tasks/tagging_files.py)
    )
}


def register(task: Task) -> Task:
    """Add a task (one of your own: a name not taken yet)."""
    if task.name in TASKS and TASKS[task.name] is not task:
        raise ValueError(f"task {task.name!r} is already registered")
    TASKS[task.name] = task
    return task


def get(name: str, key: str = "data.task") -> Task:
    """The task called ``name``; a one-line error naming ``key`` and the known tasks otherwise."""
    if name not in TASKS:
        raise ConfigError(f"{key}: expected one of {', '.join(TASKS)}, got {name!r}")
    return TASKS[name]
