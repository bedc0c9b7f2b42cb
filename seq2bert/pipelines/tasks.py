"""Pipelines of the fine-tuned task shapes: text classification (BERT's or GPT-1's; single-label, multi-label or
regression), token classification (entities with character spans), extractive question answering and
multiple choice."""

from __future__ import annotations

import torch

from seq2bert.data import gpt_finetuning as gpt
from seq2bert.data.batching import pad_sequences
from seq2bert.data.finetuning import aligned_words
from seq2bert.data.qa import strip_span
from seq2bert.errors import CheckpointError, UserError
from seq2bert.io import read_json
from seq2bert.models import registry
from seq2bert.pipelines.loading import (
    _device,
    _load,
    inference_precision,
    length_batches,
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
    config.json: ``label_threshold``; 0.5 without one), best first, ``top_k`` of them at most unless it is 1 —
    every label with its σ when ``top_k`` is None; computed in fp32 unless bf16 is asked for. An encoder reads the texts in batches of similar
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
    multi = getattr(net.config, "problem_type", None) == MULTI_LABEL
    threshold = label_threshold(net.config, directory) if multi else None
    if (len(labels) == 1 or multi) and bf16 == "auto":  # its values are the output, not a choice among labels
        bf16 = False
    with inference_precision(net, bf16, kept=directory is not None) as run:
        for indices, batch in _classifier_batches(net, tok, texts, batch_size, max_length):
            inputs = {k: v.to(_device(net)) for k, v in batch.items()}
            logits = run(**inputs).logits  # (B, K)
            if logits.dtype == torch.bfloat16 and logits.size(-1) > 1 and not multi:
                logits = _near_ties_in_fp32(net, inputs, logits.float())
            for i, row in zip(indices, logits.float(), strict=True):
                if multi:  # each label on its own: σ(z_k) ≥ threshold
                    out[i] = _labels_over(row.sigmoid(), labels, threshold, top_k)
                    continue
                if row.numel() == 1:  # regression
                    out[i] = {"label": labels[0], "score": float(row[0])}
                    continue
                probs = row.softmax(-1)
                k = min(top_k or probs.numel(), probs.numel())
                best = [
                    {"label": labels[int(j)], "score": float(p)} for p, j in zip(*probs.topk(k), strict=True)
                ]
                out[i] = best[0] if top_k == 1 else best
    return out


MULTI_LABEL = "multi_label_classification"
THRESHOLD_KEYS = (
    THRESHOLD_KEY,
    "threshold",
)  # config.json's keys of a multi-label threshold (fine-tuning writes the first)


def label_threshold(config, directory) -> float:
    """The probability a multi-label model's label must reach to be given: the config's threshold (a
    ``THRESHOLD_KEYS`` field of the config, or key of the directory's config.json; fine-tuning tunes it on
    the validation set), else 0.5."""
    found = next((getattr(config, k) for k in THRESHOLD_KEYS if getattr(config, k, None) is not None), None)
    if found is None and directory is not None:
        raw = read_json(registry.checkpoint_dir(directory) / "config.json")
        found = next((raw[k] for k in THRESHOLD_KEYS if raw.get(k) is not None), None)
    if found is None:
        return 0.5
    if isinstance(found, bool) or not isinstance(found, (int, float)) or not 0 <= found <= 1:
        raise CheckpointError(
            f"{directory}: config.json threshold: expected a probability in [0, 1], got {found!r}"
        )
    return float(found)


def _labels_over(probs: torch.Tensor, labels: dict, threshold: float, top_k: int | None) -> list[dict]:
    """[{"label", "score"}, …] of the labels whose probability reaches ``threshold``, best first (every label
    with its probability when ``top_k`` is None)."""
    over = [(float(p), labels[k]) for k, p in enumerate(probs.tolist()) if top_k is None or p >= threshold]
    over.sort(key=lambda x: -x[0])
    if top_k not in (None, 1):
        over = over[:top_k]
    return [{"label": label, "score": p} for p, label in over]


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
def tag(
    text: str,
    model,
    *,
    aggregate: bool = True,
    max_length: int = 512,
    int8: bool = False,
    batch_size: int = 32,
) -> list[dict]:
    """Named entities (or any tags) of ``text`` with a …ForTokenClassification directory (an encoder's, or a
    decoder's, GPT2ForTokenClassification, which reads no token types); of a list of texts, a list each (the
    texts read ``batch_size`` at a time, in batches of similar length).

    Each word — as the tokenizer's pre-tokenizer splits it — is labelled by its first sub-token (the
    fine-tuning convention). ``aggregate``: consecutive B-X, I-X, … words become one entity
    {"entity_group": "X", "score": mean word probability, "word": the text span, "start", "end"}, character
    offsets into ``text``; otherwise one {"entity", "score", "word", "start", "end"} per word not tagged O."""
    single = isinstance(text, str)
    texts = [text] if single else text_list(text, "tag: text (a string, or a list of them)")
    net, tok, _ = _load(model, "tokens", int8)
    max_length = positions(net.config, max_length)
    encodings = tok.encode_batch(texts, max_length=max_length, truncation="longest_first").encodings
    said_truncated(encodings, max_length)
    out: list = [None] * len(texts)
    device = _device(net)
    decoder = registry.family_of(net).kind == "decoder"
    for indices, batch in length_batches(encodings, batch_size, pad_id(tok, net.config)):
        words = _word_features(net, [encodings[i] for i in indices], [texts[i] for i in indices])
        inputs = {k: v.to(device) for k, v in {**batch, **words}.items()}
        types = inputs.pop("token_type_ids")
        logits = net(
            inputs.pop("input_ids"),
            inputs.pop("attention_mask"),
            *([] if decoder else [types]),
            **inputs,
        ).logits  # (B, T, K)
        for row, i in enumerate(indices):
            probs = logits[row, : len(encodings[i])].float().softmax(-1)
            out[i] = _entities(texts[i], encodings[i], probs, net.config.id2label, aggregate)
    return out[0] if single else out


def _entities(text: str, enc, probs: torch.Tensor, id2label: dict, aggregate: bool) -> list[dict]:
    """The tagged words of ``text`` (its encoding ``enc``, the tags' probabilities of its tokens (T, K)), or
    their entities when ``aggregate``."""
    words: dict[int, dict] = {}  # word index → its label, score and character span
    for i, w in enumerate(enc.word_ids):
        if w is None:
            continue
        start, end = enc.offsets[i]
        if w not in words:
            p, k = probs[i].max(-1)
            words[w] = {"entity": id2label[int(k)], "score": float(p), "start": start, "end": end}
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
    Long contexts are read in overlapping windows (data/qa.py), one at a time. ``handle_impossible_answer``: ""
    when the model prefers [CLS] (SQuAD v2)."""
    question = one_text(question, "answer: question", empty=False)
    context = one_text(context, "answer: context", empty=False)
    return answers(
        [(question, context)],
        model,
        batch_size=1,
        max_seq_length=max_seq_length,
        doc_stride=doc_stride,
        max_answer_length=max_answer_length,
        handle_impossible_answer=handle_impossible_answer,
        int8=int8,
    )[0]


@torch.no_grad()
def answers(
    items,
    model,
    *,
    batch_size: int = 32,
    max_seq_length: int = 384,
    doc_stride: int = 128,
    max_answer_length: int = 30,
    handle_impossible_answer: bool = False,
    int8: bool = False,
) -> list[dict]:
    """``answer`` of each ``(question, context)`` of ``items``: the windows of all of them read ``batch_size``
    at a time, longest first (each padded to its batch's longest), then each question's best span over its
    own windows."""
    from seq2bert.data.qa import make_features, postprocess
    from seq2bert.data.squad import QAExample

    items = text_list(items, "answers: items", pairs=True)
    for i, item in enumerate(items):
        if not isinstance(item, tuple):
            raise UserError(f"answers: items[{i}]: expected a (question, context) tuple, got {item!r}")
        one_text(item[0], f"answers: items[{i}] question", empty=False)
        one_text(item[1], f"answers: items[{i}] context", empty=False)
    net, tok, _ = _load(model, "qa", int8)
    max_seq_length = positions(net.config, max_seq_length)
    examples = [
        QAExample(id=str(i), title="", context=c, question=q, answers=[]) for i, (q, c) in enumerate(items)
    ]
    features = make_features(examples, tok, max_seq_length=max_seq_length, doc_stride=doc_stride)
    starts: list = [None] * len(features)
    ends: list = [None] * len(features)
    order = sorted(range(len(features)), key=lambda i: -len(features[i].input_ids))
    pad = pad_id(tok, net.config) or 0
    for b in range(0, len(order), batch_size):
        chunk = order[b : b + batch_size]
        ids, mask = pad_sequences([features[i].input_ids for i in chunk], pad)  # (B, T)
        types, _ = pad_sequences([features[i].token_type_ids for i in chunk], 0)
        device = _device(net)
        o = net(ids.to(device), mask.long().to(device), types.to(device))
        for row, i in enumerate(chunk):
            n = len(features[i].input_ids)
            starts[i], ends[i] = o.start_logits[row, :n].float().cpu(), o.end_logits[row, :n].float().cpu()
    found = postprocess(
        examples,
        features,
        starts,
        ends,
        max_answer_length=max_answer_length,
        version_2=handle_impossible_answer,
    )
    return [
        {"answer": f.text, "score": f.probability, "start": f.start, "end": f.end}
        for f in (found[e.id] for e in examples)
    ]


@torch.no_grad()
def choose(items, model, *, batch_size: int = 32, max_length: int = 512, int8: bool = False) -> list[dict]:
    """The best choice of each ``(context, [choice, …])`` with a …ForMultipleChoice directory (BERT's SWAG
    head, Sect. 4.4): each choice is read as the pair [CLS] context [SEP] choice [SEP] (as fine-tuning reads
    it, data/finetuning.py ``encode_choices``) and scored; the scores' softmax over the choices gives
    {"choice": the best one's index, "score": its probability, "scores": every choice's}. Items of similar
    length are read together, ``batch_size`` at a time; one item (a tuple) gives one dict."""
    if isinstance(items, tuple):
        return choose([items], model, batch_size=batch_size, max_length=max_length, int8=int8)[0]
    if items is None or isinstance(items, (str, dict)):
        raise UserError(f"choose: items: expected a list of (context, [choice, …]) tuples, got {items!r}")
    items = [_choice_item(i, item) for i, item in enumerate(items)]
    net, tok, _ = _load(model, "choice", int8)
    if registry.family_of(net).kind == "decoder":
        raise UserError("choose: a decoder's multiple choice (GPT-1's double heads) is not supported here")
    max_length = positions(net.config, max_length)
    pairs = [(context, choice) for context, choices in items for choice in choices]
    encodings = tok.encode_batch(pairs, max_length=max_length, truncation="longest_first").encodings
    said_truncated(encodings, max_length)
    starts = [0]
    for _, choices in items:
        starts.append(starts[-1] + len(choices))
    rows = [encodings[starts[i] : starts[i + 1]] for i in range(len(items))]
    order = sorted(range(len(items)), key=lambda i: (len(rows[i]), -max(len(e) for e in rows[i])))
    pad = pad_id(tok, net.config)
    out: list = [None] * len(items)
    for b in range(0, len(order), batch_size):
        chunk = order[b : b + batch_size]
        for size in sorted({len(rows[i]) for i in chunk}):  # items with as many choices as each other
            same = [i for i in chunk if len(rows[i]) == size]
            flat = [e for i in same for e in rows[i]]
            ids, mask = pad_sequences([e.ids for e in flat], pad or 0)  # (B·C, T)
            types, _ = pad_sequences([e.type_ids for e in flat], 0)
            shape = (len(same), size, -1)
            logits = net(
                ids.view(shape).to(_device(net)),
                mask.long().view(shape).to(_device(net)),
                types.view(shape).to(_device(net)),
            ).logits.float()  # (B, C)
            for i, row in zip(same, logits.softmax(-1), strict=True):
                best = int(row.argmax())
                out[i] = {"choice": best, "score": float(row[best]), "scores": row.tolist()}
    return out


def _choice_item(i: int, item) -> tuple[str, list[str]]:
    """An item of ``choose``: (context, its choices: two or more strings)."""
    if (
        isinstance(item, (tuple, list))
        and len(item) == 2
        and isinstance(item[0], str)
        and isinstance(item[1], (tuple, list))
        and len(item[1]) >= 2
        and all(isinstance(c, str) for c in item[1])
    ):
        return item[0], list(item[1])
    raise UserError(
        f"choose: items[{i}]: expected (context, [choice, …]) with two or more choices, got {item!r}"
    )
