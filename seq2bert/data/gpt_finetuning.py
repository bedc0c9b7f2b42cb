"""GPT-1's input transformations for fine-tuning (Radford et al. 2018, Sect. 3.3, Figure 1 right).

"Since our pre-trained model was trained on contiguous sequences of text, we require some modifications to
apply it to [structured inputs] … we use a traversal-style approach, where we convert structured inputs into
an ordered sequence that our pre-trained model can process. … All transformations include adding randomly
initialized start and end tokens (⟨s⟩, ⟨e⟩)", and a delimiter token ($) between the parts:

    classification   [start] text [extract]                                   (CoLA, SST-2)
    entailment       [start] premise [delim] hypothesis [extract]             (MNLI, QNLI, RTE, WNLI)
    similarity       [start] A [delim] B [extract],  [start] B [delim] A [extract]   both orders (MRPC, QQP, STS-B)
    multiple choice  [start] context [delim] answer_k [extract]   for each k  (SWAG: context = sent1,
                                                                              answer_k = sent2 + ending_k)

Tagging is not among GPT-1's tasks; a decoder tags (``tokens``, transformers' GPT2ForTokenClassification) the
words as the running text they come from, with no added token, each word tagged at its first piece as BERT
is (data/finetuning.py ``encode_tags``). A causal model reads that piece with only the words before it: the
label of "Paris" in "Paris Hilton" is given before "Hilton" is read.

The three tokens are added to the vocabulary as special tokens (``with_task_tokens``), after its last id; the
model grows its token embedding by as many rows (models/gpt/heads.py). Each text is tokenized on its own,
without special tokens, and the sequence built from ids; a pair too long for ``max_length`` loses tokens at
the end of its longer part first.

A feature is {"input_ids": ids, "labels": y} — for similarity and multiple choice ``input_ids`` holds a list
per order / choice. ``collate`` pads a batch to its longest sequence and adds attention_mask, the auxiliary
LM's labels (the input ids, −100 on padding) and, for multiple choice, the position of each choice's
[extract] (``mc_token_ids``), under the keyword names of the GPT heads: ``labels`` / ``lm_labels`` for the
sequence classifiers, ``mc_labels`` / ``labels`` (the LM's) for the double-heads model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from seq2bert.data import gpt_bpe
from seq2bert.data.batching import pad_sequences
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import DataError
from seq2bert.objectives.cross_entropy import IGNORE_INDEX

START, DELIM, EXTRACT = "[start]", "[delim]", "[extract]"
SHAPES = ("classification", "entailment", "similarity", "choice", "tokens")
# the GLUE tasks by the shape of GPT-1's Table 2–4 (WNLI, a pair that entails or not, as entailment)
GLUE_SHAPES = {
    "cola": "classification",
    "sst2": "classification",
    "mnli": "entailment",
    "mnli_mismatched": "entailment",
    "qnli": "entailment",
    "rte": "entailment",
    "wnli": "entailment",
    "mrpc": "similarity",
    "qqp": "similarity",
    "stsb": "similarity",
}
TASK_SHAPES = {**GLUE_SHAPES, "swag": "choice"}

Feature = dict[str, Any]


@dataclass(frozen=True)
class TaskTokens:
    """The ids of [start], [delim] and [extract]."""

    start: int
    delim: int
    extract: int


def with_task_tokens(tok: Tokenizer) -> Tokenizer:
    """``tok`` with [start], [delim] and [extract] added as special tokens after its vocabulary — ``tok`` itself
    when it has them (a checkpoint fine-tuned before)."""
    if all(tok.token_to_id(t) is not None for t in (START, DELIM, EXTRACT)):
        return tok
    return Tokenizer(gpt_bpe.with_special(tok.backend, (START, DELIM, EXTRACT)))


def task_tokens(tok: Tokenizer) -> TaskTokens:
    """The ids of the three tokens in ``tok``; a DataError when it lacks one (not a GPT fine-tuning vocabulary)."""
    ids = [tok.token_to_id(t) for t in (START, DELIM, EXTRACT)]
    if None in ids:
        raise DataError(
            f"the tokenizer has no {START}, {DELIM} and {EXTRACT} tokens (GPT-1's fine-tuning tokens)"
        )
    return TaskTokens(*ids)


def fit(a: list[int], b: list[int], budget: int) -> tuple[list[int], list[int]]:
    """``a`` and ``b`` cut to ``budget`` tokens together: the longer one loses its last token first."""
    a, b = list(a), list(b)
    while len(a) + len(b) > budget:
        (a if len(a) >= len(b) else b).pop()
    return a, b


def transform(shape: str, t: TaskTokens, a: list[int], b: list[int] | None, max_length: int) -> list:
    """Figure 1's sequence(s) of ids for the token ids of one text ``a`` (classification) or of two parts
    ``a``, ``b``: one list, or for similarity the two orders."""
    if shape == "classification":
        return [t.start, *a[: max_length - 2], t.extract]
    a, b = fit(a, b or [], max_length - 3)
    ab = [t.start, *a, t.delim, *b, t.extract]
    if shape == "similarity":
        return [ab, [t.start, *b, t.delim, *a, t.extract]]
    return ab  # entailment; one choice of a multiple choice


def encode_texts(
    items: Sequence[str | tuple[str, str]], tok: Tokenizer, shape: str, max_length: int
) -> list[list[int] | list[list[int]]]:
    """The input ids of texts (classification) or pairs (entailment, similarity)."""
    t = task_tokens(tok)
    pairs = [(x, None) if isinstance(x, str) else tuple(x) for x in items]
    if shape != "classification" and any(b is None for _, b in pairs):
        raise DataError(f"{shape}: expects pairs of texts")
    ids_a = tok.ids_batch([a for a, _ in pairs])
    ids_b = tok.ids_batch([b or "" for _, b in pairs])
    return [transform(shape, t, a, b, max_length) for a, b in zip(ids_a, ids_b, strict=True)]


def encode_task(examples: Sequence, tok: Tokenizer, shape: str, max_length: int) -> list[Feature]:
    """Features of GLUE examples (TextExample) or SWAG questions (ChoiceExample)."""
    if shape == "choice":
        t = task_tokens(tok)
        contexts = tok.ids_batch([e.context for e in examples])
        answers = tok.ids_batch([f"{e.start} {ending}".strip() for e in examples for ending in e.endings])
        out, i = [], 0
        for e, context in zip(examples, contexts, strict=True):
            out.append(
                {
                    "input_ids": [
                        transform(shape, t, context, answers[i + k], max_length)
                        for k in range(len(e.endings))
                    ]
                }
            )
            i += len(e.endings)
    else:
        texts = [
            e.text_a if e.text_b is None or shape == "classification" else (e.text_a, e.text_b)
            for e in examples
        ]
        out = [{"input_ids": ids} for ids in encode_texts(texts, tok, shape, max_length)]
    for feature, e in zip(out, examples, strict=True):
        if e.label is not None:
            feature["labels"] = e.label
    return out


def feature_length(feature: Feature) -> int:
    ids = feature["input_ids"]
    return max(len(x) for x in ids) if isinstance(ids[0], list) else len(ids)


def collate(
    features: Sequence[Feature], pad_token_id: int, shape: str, *, lm: bool = True
) -> dict[str, torch.Tensor]:
    """A batch padded to its longest sequence: input_ids and attention_mask (B, T), or (B, 2, T) for
    similarity and (B, C, T) for multiple choice; the task's labels (tagging: per token); with ``lm`` the
    auxiliary LM's labels; for
    multiple choice mc_token_ids (B, C), the position of each [extract] (see the module docstring for names)."""
    nested = isinstance(features[0]["input_ids"][0], list)
    rows = [x for f in features for x in f["input_ids"]] if nested else [f["input_ids"] for f in features]
    ids, mask = pad_sequences(rows, pad_token_id)  # (N, T)
    mask = mask.long()
    lm_labels = ids.masked_fill(mask == 0, IGNORE_INDEX)
    extract = mask.sum(dim=-1) - 1  # (N,): the [extract] ends each sequence
    if nested:
        B = len(features)
        ids, mask, lm_labels, extract = (x.view(B, -1, *x.shape[1:]) for x in (ids, mask, lm_labels, extract))
    batch = {"input_ids": ids, "attention_mask": mask}
    if "labels" in features[0] and shape == "tokens":  # a tag id per token (B, T), −100 on padding
        batch["labels"], _ = pad_sequences([f["labels"] for f in features], IGNORE_INDEX)
    elif "labels" in features[0]:
        dtype = torch.float if isinstance(features[0]["labels"], float) else torch.long
        labels = torch.tensor([f["labels"] for f in features], dtype=dtype)  # (B,)
        batch["mc_labels" if shape == "choice" else "labels"] = labels
    if shape == "choice":
        batch["mc_token_ids"] = extract  # (B, C)
    if lm:
        batch["labels" if shape == "choice" else "lm_labels"] = lm_labels
    return batch
