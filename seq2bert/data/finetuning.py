"""Fine-tuning inputs for the four task shapes of BERT (Devlin et al. 2018, Figure 4) and multiple choice.

Every example becomes one *feature* (a dict of int lists) — several for a long SQuAD context — and a batch
pads its features to its own longest one (dynamic padding); the length-bucketed sampler of batching.py keeps
that padding small.

    sequence   [CLS] A [SEP] (B [SEP])          label: class id, or a float (regression)
    tokens     [CLS] w_1 … w_n [SEP]            labels: the tag id on each word's first sub-token, −100
                                                on the others and on [CLS] / [SEP] ("we use the
                                                representation of the first sub-token", Sect. 5.3)
    qa         [CLS] question [SEP] window [SEP]  start / end token (data/qa.py makes the windows)
    choice     C × ([CLS] context [SEP] start + ending_c [SEP])   label: the right choice

``words=True`` (a model that also reads a frozen encoder's vectors of the words, models/bilstm/features.py)
adds each feature's ``words`` — the words its tokens keep, one list per text, spelled as in the text (not
looked up: a word the vocabulary lacks keeps its spelling) — and ``word_index``: per token, the index of its
word among them (−1 for [CLS] and [SEP]; padded with −1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.nn.utils.rnn import pad_sequence
from tqdm.auto import tqdm

from seq2bert.data.batching import pad_sequences
from seq2bert.data.conll import TaggedSentence
from seq2bert.data.glue import TextExample
from seq2bert.data.swag import ChoiceExample
from seq2bert.data.tokenization import Encoding, Tokenizer
from seq2bert.objectives.cross_entropy import IGNORE_INDEX

Feature = dict[str, Any]
ENCODE_CHUNK = 2048  # examples per encode_batch call (one progress-bar tick)


def _chunks(items: Sequence, progress: bool, desc: str):
    with tqdm(total=len(items), desc=desc, unit="ex", disable=not progress, mininterval=1.0) as bar:
        for start in range(0, len(items), ENCODE_CHUNK):
            chunk = items[start : start + ENCODE_CHUNK]
            yield chunk
            bar.update(len(chunk))


def aligned_words(enc: Encoding, texts: Sequence[str]) -> tuple[list[list[str]], list[int]]:
    """(the words of each text that ``enc`` keeps, as spelled in the text; per token the index of its word
    among them all, −1 for special tokens), from the tokens' offsets into their texts."""
    spans: dict[tuple[int, int], list[int]] = {}  # (text, word) → its [start, end) in the text
    for s, w, (start, end) in zip(enc.sequence_ids, enc.word_ids, enc.offsets, strict=True):
        if s is not None and w is not None:
            spans.setdefault((s, w), [start, end])[1] = end
    index = {key: i for i, key in enumerate(sorted(spans))}
    words = [[texts[s][a:b] for (s, _), (a, b) in sorted(spans.items()) if s == t] for t in range(len(texts))]
    return words, [
        -1 if w is None else index[(s, w)] for s, w in zip(enc.sequence_ids, enc.word_ids, strict=True)
    ]


def encode_sequences(
    examples: Sequence[TextExample],
    tok: Tokenizer,
    max_length: int,
    *,
    progress: bool = False,
    words: bool = False,
) -> list[Feature]:
    """Single sentences or pairs, the longer text of a pair trimmed first when over ``max_length``."""
    out: list[Feature] = []
    for chunk in _chunks(examples, progress, "encoding"):
        texts = [e.text_a if e.text_b is None else (e.text_a, e.text_b) for e in chunk]
        batch = tok.encode_batch(texts, max_length=max_length, truncation="longest_first")
        for e, enc in zip(chunk, batch.encodings, strict=True):
            feature: Feature = {"input_ids": enc.ids, "token_type_ids": enc.type_ids}
            if words:
                feature["words"], feature["word_index"] = aligned_words(
                    enc, [t for t in (e.text_a, e.text_b) if t is not None]
                )
            if e.label is not None:
                feature["labels"] = e.label
            out.append(feature)
    return out


def encode_tagged(
    sentences: Sequence[TaggedSentence],
    tok: Tokenizer,
    label2id: dict[str, int],
    max_length: int,
    *,
    progress: bool = False,
    words: bool = False,
) -> list[Feature]:
    """Sentences of words with a tag each. ``word_ids`` (per token: the word it starts, else −1) lets the
    predictions go back to words; words cut by ``max_length`` are not predicted (``num_words`` tells)."""
    out: list[Feature] = []
    for chunk in _chunks(sentences, progress, "encoding"):
        for s, enc in zip(
            chunk, tok.encode_words([s.words for s in chunk], max_length=max_length), strict=True
        ):
            labels, starts, previous = [], [], None
            for w in enc.word_ids:
                first = w is not None and w != previous  # the first sub-token of word w
                labels.append(
                    label2id.get(s.tags[w], IGNORE_INDEX) if first else IGNORE_INDEX
                )  # unknown tag: untrained
                starts.append(w if first else -1)
                previous = w
            out.append(
                {
                    "input_ids": enc.ids,
                    "token_type_ids": enc.type_ids,
                    "labels": labels,
                    "word_ids": starts,
                    "num_words": len(s.words),
                }
            )
            if words:
                kept = 1 + max((w for w in enc.word_ids if w is not None), default=-1)
                out[-1]["words"] = [list(s.words[:kept])]
                out[-1]["word_index"] = [-1 if w is None else w for w in enc.word_ids]
    return out


def encode_choices(
    examples: Sequence[ChoiceExample], tok: Tokenizer, max_length: int, *, progress: bool = False
) -> list[Feature]:
    """SWAG: each ending completes ``start``; the pair is (context, start + ending)."""
    out: list[Feature] = []
    for chunk in _chunks(examples, progress, "encoding"):
        pairs = [(e.context, f"{e.start} {ending}".strip()) for e in chunk for ending in e.endings]
        encs = tok.encode_batch(pairs, max_length=max_length, truncation="longest_first").encodings
        i = 0
        for e in chunk:
            choices = encs[i : i + len(e.endings)]
            i += len(e.endings)
            feature: Feature = {
                "input_ids": [c.ids for c in choices],
                "token_type_ids": [c.type_ids for c in choices],
            }
            if e.label is not None:
                feature["labels"] = e.label
            out.append(feature)
    return out


def feature_length(feature: Feature) -> int:
    ids = feature["input_ids"]
    return max(len(c) for c in ids) if ids and isinstance(ids[0], list) else len(ids)


def collate(features: Sequence[Feature], pad_token_id: int) -> dict[str, torch.Tensor]:
    """Pad a batch to its longest feature: input_ids, token_type_ids, attention_mask (B, T) — (B, C, T)
    for choices —, word_index (B, T) when the features have one, and the targets the model takes (labels,
    or start_positions / end_positions), word_layers (B, N, K, D) when computed once (recipes/scratch.py).
    ``words`` stay with the features (the model's ``feature_inputs`` makes the encoder's inputs of them)."""
    first = features[0]
    if isinstance(first["input_ids"][0], list):  # multiple choice: pad every choice to the batch's longest
        C = len(first["input_ids"])
        flat = [c for f in features for c in f["input_ids"]]
        ids, mask = pad_sequences(flat, pad_token_id)  # (B·C, T)
        types, _ = pad_sequences([c for f in features for c in f["token_type_ids"]], 0)
        batch = {
            k: v.view(len(features), C, -1)
            for k, v in (("input_ids", ids), ("attention_mask", mask.long()), ("token_type_ids", types))
        }
    else:
        ids, mask = pad_sequences([f["input_ids"] for f in features], pad_token_id)  # (B, T)
        types, _ = pad_sequences([f["token_type_ids"] for f in features], 0)
        batch = {"input_ids": ids, "attention_mask": mask.long(), "token_type_ids": types}
    if "word_index" in first:
        batch["word_index"], _ = pad_sequences([f["word_index"] for f in features], -1)
    if "word_layers" in first:  # (n, K, D) each, a frozen encoder's layers computed once: (B, N, K, D)
        batch["word_layers"] = pad_sequence([f["word_layers"] for f in features], batch_first=True)
    if "labels" in first:
        if isinstance(first["labels"], list):  # per token
            batch["labels"], _ = pad_sequences([f["labels"] for f in features], IGNORE_INDEX)
        else:
            dtype = torch.float if isinstance(first["labels"], float) else torch.long
            batch["labels"] = torch.tensor([f["labels"] for f in features], dtype=dtype)
    if "start_position" in first:
        batch["start_positions"] = torch.tensor([f["start_position"] for f in features])
        batch["end_positions"] = torch.tensor([f["end_position"] for f in features])
    return batch
