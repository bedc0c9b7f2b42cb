"""Pipelines of the fine-tuned task shapes: text classification (BERT's or GPT-1's), token classification
(entities with character spans) and extractive question answering."""

from __future__ import annotations

from pathlib import Path

import torch

from seq2bert.data import gpt_finetuning as gpt
from seq2bert.data.batching import pad_sequences
from seq2bert.data.finetuning import aligned_words
from seq2bert.data.qa import strip_span
from seq2bert.io import read_json
from seq2bert.models import registry
from seq2bert.pipelines.loading import (
    _device,
    _load,
    inference_precision,
    one_text,
    pad_id,
    positions,
    said_truncated,
    sorted_batches,
    text_list,
)
from seq2bert.tasks.files import THRESHOLD_KEY


def _word_features(net, encodings, texts) -> dict[str, torch.Tensor]:
    """For a model that also reads a frozen encoder's vectors of the words (a BiLSTM with ``features``):
    each token's word (``word_index``) and the encoder's inputs of the words, spelled as in the texts;
    {} for any other model."""
    if not getattr(getattr(net.config, "features", None), "encoder", None):
        return {}
    aligned = [
        aligned_words(e, [t] if isinstance(t, str) else list(t))
        for e, t in zip(encodings, texts, strict=True)
    ]
    word_index, _ = pad_sequences([index for _, index in aligned], -1)
    return {"word_index": word_index, **net.feature_inputs([words for words, _ in aligned])}


@torch.no_grad()
def classify(
    texts,
    model,
    *,
    top_k: int | None = 1,
    batch_size: int = 32,
    max_length: int = 512,
    int8: bool = False,
    bf16: bool | str = "auto",
) -> list:
    """Labels of texts or ``(text, pair)`` tuples with a fine-tuned sequence classifier: BERT's, or a GPT's
    (GPT-1's input transformations; a similarity model reads each pair in both orders).

    Each text gets [{"label", "score"}, …]: the ``top_k`` most probable labels (softmax), best first —
    just the best one as a dict when ``top_k`` is 1; a regression model (one output, e.g. STS-B) gives
    {"label": its label name, "score": the predicted value}; a multi-label model (problem_type
    multi_label_classification) the labels whose σ(z) reaches its threshold (the one tuned on valid, kept in
    config.json), best first — every label with its σ when ``top_k`` is None. An encoder reads the texts in batches of similar
    length; a classifier computes in bf16 where the device computes bf16 natively (``bf16="auto"``;
    loading.inference_precision), in fp32 with ``bf16=False``; a text whose two most probable labels are within
    ``BF16_TIE`` of each other in bf16 is classified again in fp32, so its label does not depend on bf16's
    rounding or on its batch (a label can still differ from fp32's where bf16 moves a probability by more than
    BF16_TIE / 2: far beyond the 0.02 measured on SST-2 with all-MiniLM-L6-v2).
    A regression model computes in fp32 unless bf16 is asked for: bf16 would round its value to 8 significant
    bits."""
    if isinstance(texts, str) or (isinstance(texts, tuple) and len(texts) == 2):
        return classify(
            [texts], model, top_k=top_k, batch_size=batch_size, max_length=max_length, int8=int8, bf16=bf16
        )[0]
    texts = text_list(texts, "classify: texts", pairs=True)
    net, tok, directory = _load(model, ("sequence", "similarity"), int8)
    max_length = positions(net.config, max_length)
    labels = net.config.id2label
    out: list = [None] * len(texts)
    if len(labels) == 1 and bf16 == "auto":  # regression: its value is the output, not a choice among labels
        bf16 = False
    multi = multi_label_threshold(net.config, directory)
    with inference_precision(net, bf16, kept=directory is not None) as run:
        for indices, batch in _classifier_batches(net, tok, texts, batch_size, max_length):
            inputs = {k: v.to(_device(net)) for k, v in batch.items()}
            logits = run(**inputs).logits  # (B, K)
            if logits.dtype == torch.bfloat16 and logits.size(-1) > 1:
                logits = _near_ties_in_fp32(net, inputs, logits.float())
            for i, row in zip(indices, logits.float(), strict=True):
                if row.numel() == 1:  # regression
                    out[i] = {"label": labels[0], "score": float(row[0])}
                    continue
                if multi is not None:  # σ of each label; those at or above the run's threshold, best first
                    probs = row.sigmoid()
                    order = probs.argsort(descending=True).tolist()
                    out[i] = [
                        {"label": labels[j], "score": float(probs[j])}
                        for j in order
                        if top_k is None or probs[j] >= multi
                    ]
                    continue
                probs = row.softmax(-1)
                k = min(top_k or probs.numel(), probs.numel())
                best = [
                    {"label": labels[int(j)], "score": float(p)} for p, j in zip(*probs.topk(k), strict=True)
                ]
                out[i] = best[0] if top_k == 1 else best
    return out


def multi_label_threshold(config, directory) -> float | None:
    """A multi-label classifier's decision threshold on σ(z): the one its fine-tuning tuned on valid
    (config.json's ``multi_label_threshold``), else 0.5; None for any other classifier."""
    if getattr(config, "problem_type", None) != "multi_label_classification":
        return None
    path = Path(directory) / "config.json" if directory is not None else None
    kept = read_json(path).get(THRESHOLD_KEY) if path is not None and path.is_file() else None
    return 0.5 if kept is None else float(kept)


# bf16 moves a label's probability by up to about 0.02 (all-MiniLM-L6-v2 fine-tuned on SST-2: a sentence alone
# against the same sentence padded in a batch of 64), so it can only reorder two labels closer than that; those
# closer than this are classified again in fp32 — under 1 % of SST-2's dev sentences
BF16_TIE = 0.1


def _near_ties_in_fp32(net, inputs: dict, logits: torch.Tensor) -> torch.Tensor:
    """``logits`` (B, K) computed in bf16, with the rows whose two most probable labels are within ``BF16_TIE``
    computed again by the fp32 model: those rows of the batch alone, or the whole batch when an input is not
    one row per text (a similarity model reads each pair in both orders)."""
    top = logits.softmax(-1).topk(2, dim=-1).values
    near = (top[:, 0] - top[:, 1] < BF16_TIE).nonzero().flatten()
    if not near.numel():
        return logits
    rows = len(logits)
    by_row = all(torch.is_tensor(v) and v.dim() > 0 and len(v) == rows for v in inputs.values())
    with torch.autocast(logits.device.type, enabled=False):  # a model passed in runs under autocast
        if by_row:
            logits[near] = net(**{k: v[near] for k, v in inputs.items()}).logits.float()
        else:
            logits = net(**inputs).logits.float()
    return logits


def _classifier_batches(net, tok, texts: list, batch_size: int, max_length: int):
    """(indices of the texts, the model's inputs) of each batch: an encoder's in batches of similar length
    (loading.length_batches); a decoder's (GPT-1's input transformations) and a BiLSTM's with a frozen
    encoder's features in the texts' order."""
    if registry.family_of(net).kind == "decoder":
        for start in range(0, len(texts), batch_size):
            chunk = texts[start : start + batch_size]
            yield range(start, start + len(chunk)), _decoder_inputs(net, tok, chunk, max_length)
        return
    if not getattr(getattr(net.config, "features", None), "encoder", None):
        yield from sorted_batches(tok, texts, batch_size, max_length, pad_id(tok, net.config))
        return
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        batch = tok.encode_batch(
            chunk, max_length=max_length, truncation="longest_first", padding="longest", return_tensors="pt"
        )
        said_truncated(batch.encodings, max_length)
        yield range(start, start + len(chunk)), {**batch, **_word_features(net, batch.encodings, chunk)}


def _decoder_inputs(net, tok, items: list, max_length: int) -> dict:
    """A decoder's classifier reads texts through GPT-1's input transformations (data/gpt_finetuning.py):
    [start] text [extract], a pair as [start] A [delim] B [extract] — in both orders for a similarity model."""
    family = registry.family_of(net)
    similarity = family.architecture_of(net) == family.heads.get("similarity")
    rows = [
        gpt.encode_texts(
            [x],
            tok,
            "similarity" if similarity else "classification" if isinstance(x, str) else "entailment",
            max_length,
        )[0]
        for x in items
    ]
    shape = "similarity" if similarity else "classification"
    return gpt.collate([{"input_ids": r} for r in rows], net.config.pad_token_id, shape, lm=False)


@torch.no_grad()
def tag(text: str, model, *, aggregate: bool = True, max_length: int = 512, int8: bool = False) -> list[dict]:
    """Named entities (or any tags) of ``text`` with a BertForTokenClassification directory.

    Each word — as the tokenizer's pre-tokenizer splits it — is labelled by its first sub-token (the
    fine-tuning convention). ``aggregate``: consecutive B-X, I-X, … words become one entity
    {"entity_group": "X", "score": mean word probability, "word": the text span, "start", "end"}, character
    offsets into ``text``; otherwise one {"entity", "score", "word", "start", "end"} per word not tagged O."""
    if not isinstance(text, str):
        texts = text_list(text, "tag: text (a string, or a list of them)")
        return [tag(t, model, aggregate=aggregate, max_length=max_length, int8=int8) for t in texts]
    net, tok, _ = _load(model, "tokens", int8)
    max_length = positions(net.config, max_length)
    enc = tok.encode(text, max_length=max_length, truncation="longest_first")
    said_truncated([enc], max_length)
    ids = torch.tensor([enc.ids], device=_device(net))
    words = {k: v.to(ids.device) for k, v in _word_features(net, [enc], [text]).items()}
    probs = (
        net(ids, torch.ones_like(ids), torch.tensor([enc.type_ids], device=ids.device), **words)
        .logits[0]
        .float()
        .softmax(-1)
    )
    words: dict[int, dict] = {}  # word index → its label, score and character span
    for i, w in enumerate(enc.word_ids):
        if w is None:
            continue
        start, end = enc.offsets[i]
        if w not in words:
            p, k = probs[i].max(-1)
            words[w] = {"entity": net.config.id2label[int(k)], "score": float(p), "start": start, "end": end}
        words[w]["end"] = end
    for w in words.values():  # a piece holding the space before its word (SentencePiece's "▁") starts on it
        w["start"], w["end"] = strip_span(text, w["start"], w["end"])
    tagged = [w for w in words.values() if w["entity"] != "O"]
    for w in tagged:
        w["word"] = text[w["start"] : w["end"]]
    if not aggregate:
        return [
            {
                "entity": w["entity"],
                "score": w["score"],
                "word": w["word"],
                "start": w["start"],
                "end": w["end"],
            }
            for w in tagged
        ]
    groups: list[dict] = []
    previous_end = None
    for w in words.values():
        prefix, _, kind = w["entity"].rpartition("-") if "-" in w["entity"] else ("", "", w["entity"])
        if w["entity"] == "O":
            previous_end = None
            continue
        current = groups[-1] if groups and previous_end is not None else None
        if current is not None and prefix == "I" and current["entity_group"] == kind:
            current["end"], current["scores"] = w["end"], current["scores"] + [w["score"]]
        else:
            groups.append(
                {"entity_group": kind, "scores": [w["score"]], "start": w["start"], "end": w["end"]}
            )
        previous_end = w["end"]
    return [
        {
            "entity_group": g["entity_group"],
            "score": sum(g["scores"]) / len(g["scores"]),
            "word": text[g["start"] : g["end"]],
            "start": g["start"],
            "end": g["end"],
        }
        for g in groups
    ]


@torch.no_grad()
def answer(
    question: str,
    context: str,
    model,
    *,
    max_seq_length: int = 384,
    doc_stride: int = 128,
    max_answer_length: int = 30,
    handle_impossible_answer: bool = False,
    int8: bool = False,
) -> dict:
    """The answer to ``question`` as a span of ``context`` with a BertForQuestionAnswering directory:
    {"answer", "score" (probability of the span among the n best), "start", "end"} (character offsets).
    Long contexts are read in overlapping windows (data/qa.py). ``handle_impossible_answer``: "" when the
    model prefers [CLS] (SQuAD v2)."""
    from seq2bert.data.qa import make_features, postprocess
    from seq2bert.data.squad import QAExample

    question = one_text(question, "answer: question", empty=False)
    context = one_text(context, "answer: context", empty=False)
    net, tok, _ = _load(model, "qa", int8)
    max_seq_length = positions(net.config, max_seq_length)
    example = QAExample(id="q", title="", context=context, question=question, answers=[])
    features = make_features([example], tok, max_seq_length=max_seq_length, doc_stride=doc_stride)
    starts, ends = [], []
    for f in features:
        ids = torch.tensor([f.input_ids], device=_device(net))
        o = net(ids, torch.ones_like(ids), torch.tensor([f.token_type_ids], device=ids.device))
        starts.append(o.start_logits[0].float().cpu())
        ends.append(o.end_logits[0].float().cpu())
    found = postprocess(
        [example],
        features,
        starts,
        ends,
        max_answer_length=max_answer_length,
        version_2=handle_impossible_answer,
    )["q"]
    return {"answer": found.text, "score": found.probability, "start": found.start, "end": found.end}
