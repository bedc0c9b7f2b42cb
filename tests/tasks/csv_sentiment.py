"""A task of your own, as docs/architecture.md ("add a task") says: this one module, and nothing else.

Its examples are a CSV file per split, two columns ``text,label`` (label: negative or positive), in
``train.csv`` and ``dev.csv`` of the task's folder. It is a text classification — the shape of SST-2 — so its
record is one call of that shape's builder with its own reader and labels, registered when the module is
imported. Name it to the CLI and fine-tune:

    SEQ2BERT_PLUGINS=csv_sentiment seq2bert finetune --task csv_sentiment --init BERT_DIR --data DIR --out OUT
    SEQ2BERT_PLUGINS=csv_sentiment seq2bert evaluate OUT

(the module on the Python path: PYTHONPATH=folder/of/it).
"""

import csv
from pathlib import Path

from seq2bert.data.glue import TextExample
from seq2bert.errors import DataError
from seq2bert.tasks.registry import register
from seq2bert.tasks.shapes import text_classification

LABELS = ("negative", "positive")


def read_csv(path: Path) -> list[TextExample]:
    """The examples of one CSV file, its header ``text,label``; a one-line error naming the file and line."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = csv.reader(f)
        header = next(rows, None)
        if header != ["text", "label"]:
            raise DataError(f"{path}:1: expected the header text,label, got {header}")
        examples = []
        for row in rows:
            if len(row) != 2 or row[1] not in LABELS:
                raise DataError(f"{path}:{rows.line_num}: expected text,{'|'.join(LABELS)}, got {row}")
            label = LABELS.index(row[1])
            examples.append(
                TextExample(id=f"{path.stem}-{len(examples)}", text_a=row[0], text_b=None, label=label)
            )
    return examples


TASK = register(
    text_classification(
        "csv_sentiment",
        files={"train": ("train.csv",), "dev": ("dev.csv",)},
        reader=read_csv,
        labels=LABELS,
        metrics=("accuracy", "f1"),
    )
)
