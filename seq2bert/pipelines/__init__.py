"""Pipelines over a checkpoint directory of any family in the registry: for encoders, sentence embeddings
(pooled contextual vectors), fill-mask, and the fine-tuned task shapes — text classification, token
classification (entities with character spans) and extractive question answering; for encoder-decoders,
translation.

    seq2bert.embed(["A man is eating."], model="all-MiniLM-L6-v2/", normalize=True)   # (n, hidden)
    seq2bert.fill_mask("Paris is the [MASK] of France.", model="my-bert/", top_k=5)
    seq2bert.classify(["a gripping film"], model="runs/sst2/best")        # [{"label", "score"}]
    seq2bert.tag("EU rejects German call", model="runs/ner/best")         # [{"entity_group", "word", …}]
    seq2bert.answer("What does NUS mean?", context, model="runs/squad/best")  # {"answer", "score", …}
    seq2bert.pipelines.choose([(context, [a, b, c, d])], model="runs/swag/best")  # [{"choice", "score", …}]

    seq2bert.translate(["ein Hund läuft ."], model="runs/m30k")          # ["a dog runs ."]

and for decoder-only language models, text generation:

    seq2bert.generate(["Once upon a time"], model="gpt2/", max_new_tokens=40)   # [" there was …"]

and, over a file's rows, whichever of them the model's config.json calls for (pipelines/predict.py):

    seq2bert.pipelines.predict_file("runs/sst2", "reviews.csv", "labelled.jsonl")   # {"rows", "shape", "out"}

``model`` is a checkpoint directory (or a ``(model, tokenizer)`` pair already loaded); the registry finds
the class with the head the pipeline needs.
"""

from seq2bert.pipelines.encoders import POOLING, embed, fill_mask, mean_pool, sentence_modules, word_vectors
from seq2bert.pipelines.generation import generate, prompt_ids, translate
from seq2bert.pipelines.loading import _KEPT, ENCODER, KEEP, _base, _load, int8_model, said_truncated
from seq2bert.pipelines.predict import predict_file
from seq2bert.pipelines.tasks import answer, answers, choose, classify, tag

__all__ = [
    "ENCODER",
    "POOLING",
    "KEEP",
    "_KEPT",
    "_base",
    "_load",
    "answer",
    "answers",
    "choose",
    "classify",
    "embed",
    "fill_mask",
    "generate",
    "int8_model",
    "mean_pool",
    "predict_file",
    "prompt_ids",
    "said_truncated",
    "sentence_modules",
    "tag",
    "translate",
    "word_vectors",
]
