"""The four shapes of a fine-tuning task (BERT, Devlin et al. 2018, Figure 4; SWAG's multiple choice), each
a builder of ``Task`` records from a task's own data — its files and reader, labels, metrics and lengths:

    text_classification  a sentence or a pair → a class (or a score: regression)    GLUE, a CSV of your own
    token_tagging        a sentence of words → a tag per word                       CoNLL-2003
    span_extraction      a question and a paragraph → the answer's span             SQuAD v1.1 / v2.0
    multiple_choice      a context → the right one of its endings                   SWAG

The behaviour of a shape — how its examples become features and raw outputs become predictions, what its
gold answer is and which texts it holds — is written once here; a task is one builder call
(tasks/registry.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from seq2bert import config as config_io
from seq2bert.data.conll import label_list
from seq2bert.data.finetuning import encode_choices, encode_sequences, encode_tagged
from seq2bert.data.qa import make_features, postprocess
from seq2bert.evaluation.tasks import classification_metrics, ner_metrics, squad_metrics
from seq2bert.tasks.task import ExtraDev, Task


def _label_metrics(names: Sequence[str], examples: list, predictions: list) -> dict[str, float]:
    return classification_metrics(names, predictions, [e.label for e in examples])


def _argmax(task: Task, outputs: list, *_) -> list:
    return [int(o.argmax()) for o in outputs]


# --- a sentence or a pair → a class, or a score
def _encode_texts(task: Task, examples, tok, label2id, settings, *, progress=False, words=False):
    return encode_sequences(examples, tok, settings.seq_length, progress=progress, words=words)


def _decode_class_or_score(task: Task, outputs: list, *_) -> list:
    if task.problem_type == "regression":
        return [float(o[0]) for o in outputs]
    return _argmax(task, outputs)


def _text_pair(example) -> tuple[str, ...]:
    return (example.text_a,) if example.text_b is None else (example.text_a, example.text_b)


def text_classification(
    name: str,
    *,
    files: dict[str, tuple[str, ...]],
    reader: Callable[[Path], list],
    labels: tuple[str, ...] | None,
    metrics: Sequence[str] = ("accuracy",),
    main_metric: str = "",
    max_seq_length: int = 128,
    decoder_shape: str | None = "classification",
    extra_dev: ExtraDev | None = None,
    user_files: bool = False,
) -> Task:
    """A task whose examples are data/glue.py ``TextExample``s (text_a, text_b or None, label: a class id, a
    float for regression): ``labels`` None is regression (one output, "score"). ``metrics``: names of
    evaluation/tasks.py ``CLASSIFICATION_METRICS``; the first is the main one unless ``main_metric`` says."""
    return Task(
        name=name,
        head="sequence",
        files=files,
        reader=reader,
        encode=_encode_texts,
        decode=_decode_class_or_score,
        metrics=partial(_label_metrics, tuple(metrics)),
        main_metric=main_metric or metrics[0],
        texts=_text_pair,
        max_seq_length=max_seq_length,
        labels=("score",) if labels is None else tuple(labels),
        problem_type="regression" if labels is None else "single_label_classification",
        decoder_shape=decoder_shape,
        augmentable=True,
        extra_dev=extra_dev,
        user_files=user_files,
    )


# --- a sentence of words → a tag per word
def _encode_tagged(task: Task, examples, tok, label2id, settings, *, progress=False, words=False):
    return encode_tagged(examples, tok, label2id, settings.seq_length, progress=progress, words=words)


def _decode_tags(task: Task, outputs: list, examples, features: list, id2label, settings) -> list:
    """Each word's tag is its first sub-token's; words cut by max_seq_length stay "O" — no entity —, or, in a
    label set without O (part-of-speech tags), None: not predicted (written null, scored wrong)."""
    cut = "O" if "O" in id2label.values() else None
    preds = []
    for f, o in zip(features, outputs, strict=True):
        tags = [cut] * f["num_words"]
        for w, k in zip(f["word_ids"], o.argmax(-1).tolist(), strict=True):
            if w >= 0:
                tags[w] = id2label[k]
        preds.append(tags)
    return preds


def _tag_metrics(examples: list, predictions: list) -> dict[str, float]:
    return ner_metrics([e.tags for e in examples], predictions)


def token_tagging(
    name: str,
    *,
    files: dict[str, tuple[str, ...]],
    reader: Callable[[Path], list],
    max_seq_length: int = 256,
    metrics: Callable[[list, list], dict[str, float]] = _tag_metrics,
    main_metric: str | Callable[[Any], str] = "f1",
    user_files: bool = False,
    find_labels: Callable[[Path, Any], list[str]] | None = None,
) -> Task:
    """A task of data/conll.py ``TaggedSentence``s: the tags are the labels, found in the examples (train and
    dev); scored by entity (seqeval, conlleval's rules). A task over a user's files (``user_files``) finds
    its tags in the training file (``find_labels``) unless --labels gives them, and gives its own ``metrics``
    and ``main_metric`` (of the settings: the tag scheme's)."""
    return Task(
        name=name,
        head="tokens",
        files=files,
        reader=reader,
        encode=_encode_tagged,
        decode=_decode_tags,
        metrics=metrics,
        main_metric=main_metric,
        texts=lambda e: (" ".join(e.words),),
        max_seq_length=max_seq_length,
        labels=label_list,
        gold=lambda e: e.tags,
        decoder_shape="tokens",
        user_files=user_files,
        find_labels=find_labels,
    )


# --- a question and a paragraph → the answer's span
def _encode_windows(task: Task, examples, tok, label2id, settings, *, progress=False, words=False):
    """SQuAD's windows (data/qa.py): several features per example, each with its ``example_index``."""
    features = make_features(
        examples,
        tok,
        max_seq_length=settings.seq_length,
        doc_stride=settings.doc_stride,
        max_query_length=settings.max_query_length,
        progress=progress,
    )
    return [
        {
            "input_ids": f.input_ids,
            "token_type_ids": f.token_type_ids,
            "start_position": f.start_position,
            "end_position": f.end_position,
            "example_index": f.example_index,
            "qa": f,
        }
        for f in features
    ]


def _decode_spans(
    version_2: bool | None, task: Task, outputs: list, examples, features: list, id2label, settings
) -> list:
    """The best span's text of each question over its windows ("" when none, or no answer for SQuAD 2.0;
    ``version_2`` None: SQuAD 2.0's when a question is unanswerable)."""
    if version_2 is None:
        version_2 = any(e.is_impossible for e in examples)
    found = postprocess(
        examples,
        [f["qa"] for f in features],
        [o[0] for o in outputs],
        [o[1] for o in outputs],
        n_best_size=settings.n_best_size,
        max_answer_length=settings.max_answer_length,
        version_2=version_2,
        null_score_diff_threshold=settings.null_score_diff_threshold,
    )
    return [found[e.id].text if e.id in found else "" for e in examples]


def _span_metrics(version_2: bool, examples: list, predictions: list) -> dict[str, float]:
    texts = {e.id: p for e, p in zip(examples, predictions, strict=True)}
    return squad_metrics(texts, examples, version_2=version_2)


def _official_predictions(path: Path, examples: list, predictions: list) -> None:
    """predictions.json, {question id: answer text}: the file evaluate-v1.1.py / evaluate-v2.0.py read."""
    official = {e.id: p for e, p in zip(examples, predictions, strict=True)}
    config_io.atomic_write_text(path.with_suffix(".json"), json.dumps(official, ensure_ascii=False) + "\n")


def span_extraction(
    name: str, *, reader: Callable[..., list], version_2: bool | None = False, user_files: bool = False
) -> Task:
    """SQuAD v1.1, or v2.0 (unanswerable questions) with ``version_2`` (None: v2.0's when the examples have
    an unanswerable question): data/squad.py ``QAExample``s, the official files' names, windows of 384
    tokens."""
    version = "v2.0" if version_2 else "v1.1"
    return Task(
        name=name,
        head="qa",
        files={"train": (f"train-{version}*.json*",), "dev": (f"dev-{version}*.json*",)},
        reader=reader,
        encode=_encode_windows,
        decode=partial(_decode_spans, version_2),
        metrics=partial(_span_metrics, version_2),
        main_metric="f1",
        texts=lambda e: (e.question, e.context),
        max_seq_length=384,
        gold=lambda e: [a.text for a in e.answers],
        write_extra=_official_predictions,
        decoder_shape=None,
        user_files=user_files,
    )


# --- a context → the right one of its endings
def _encode_choices(task: Task, examples, tok, label2id, settings, *, progress=False, words=False):
    return encode_choices(examples, tok, settings.seq_length, progress=progress)


def _choice_texts(example: Any) -> tuple[str, ...]:
    return (example.context, *(f"{example.start} {ending}" for ending in example.endings))


def multiple_choice(
    name: str,
    *,
    files: dict[str, tuple[str, ...]],
    reader: Callable[..., list],
    max_seq_length: int = 128,
    user_files: bool = False,
) -> Task:
    """A task of data/swag.py ``ChoiceExample``s (a context, the start of a sentence, its endings), scored by
    accuracy; a decoder reads each choice as GPT-1's multiple choice."""
    return Task(
        name=name,
        head="choice",
        files=files,
        reader=reader,
        encode=_encode_choices,
        decode=_argmax,
        metrics=partial(_label_metrics, ("accuracy",)),
        main_metric="accuracy",
        texts=_choice_texts,
        max_seq_length=max_seq_length,
        decoder_shape="choice",
        user_files=user_files,
    )
