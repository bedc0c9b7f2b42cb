"""GPT's byte-pair encodings as ``tokenizers`` pipelines, and their vocab.json + merges.txt files.

Two kinds, named as ``Tokenizer.train(kind=…)`` and ``seq2bert tokenizer train --kind`` name them:

* ``"bytelevel-bpe"`` – GPT-2 (Radford et al., 2019, §2.2 "Input Representation"): BPE over the bytes of
  the UTF-8 text, each byte shown as a printable character (``Ġ`` is the space byte). GPT-2's regex splits
  the text into letters, digits and punctuation, each piece carrying at most one leading space, and merges
  never cross pieces. No text has an unknown token and every text decodes back exactly (a literal
  ``<|endoftext|>`` in it too, unless special tokens are skipped). ``<|endoftext|>`` is the last id, the only
  special token, and the BOS, EOS and UNK of transformers' ``GPT2Tokenizer``; like GPT-2, nothing is added
  around a text.
* ``"gpt1-bpe"`` – GPT-1 (Radford et al., 2018): Sennrich et al.'s (2016) BPE within words, the last
  symbol of a word carrying the suffix ``</w>``, on text lower-cased (accents stripped) and split as BERT's
  BasicTokenizer splits it; characters outside the vocabulary become ``<unk>``. This is the pipeline of
  transformers' ``OpenAIGPTTokenizer``. GPT-1's own code cleaned the text with ftfy and split it with spaCy;
  so did transformers 4's slow tokenizer when both were installed, never its fast one, the only one left
  in transformers 5.

Both are stored as GPT-2 and GPT-1 were published: ``vocab.json`` (token → id) and ``merges.txt``
(``#version: 0.2``, then one merge ``a b`` a line, in the order they were learnt). Reading those two files
builds the same pipeline as training does, so the same tokenizer.json.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import tokenizers
from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers, processors, trainers

from seq2bert.data.text_files import one_line
from seq2bert.errors import DataError, UserError

BYTE_LEVEL, GPT1 = "bytelevel-bpe", "gpt1-bpe"
KINDS = (BYTE_LEVEL, GPT1)
ENDOFTEXT = "<|endoftext|>"  # GPT-2's document separator
UNK = "<unk>"  # GPT-1's unknown token
SUFFIX = "</w>"  # GPT-1's end-of-word suffix
SPECIAL = {BYTE_LEVEL: ENDOFTEXT, GPT1: UNK}
# fairseq's specials, which RoBERTa's byte-level BPE carries in place of <|endoftext|>: role → token
ROBERTA_SPECIAL = {"cls": "<s>", "pad": "<pad>", "sep": "</s>", "unk": "<unk>", "mask": "<mask>"}
VOCAB_FILE, MERGES_FILE = "vocab.json", "merges.txt"
MERGES_HEADER = "#version: 0.2"

Merges = list[tuple[str, str]]


def train(
    kind: str, texts: Callable[[], Iterable[str]], vocab_size: int, min_frequency: int, lowercase: bool
) -> tokenizers.Tokenizer:
    """Learn a ``kind`` vocabulary of at most ``vocab_size`` tokens (special token included) from ``texts()``
    (called once, twice for GPT-1's BPE).

    The byte-level alphabet holds all 256 bytes, so ``"bytelevel-bpe"`` needs ``vocab_size >= 257``.
    ``"gpt1-bpe"`` always lower-cases; ``"bytelevel-bpe"`` never does (``lowercase=True`` is a UserError).
    """
    special = SPECIAL[kind]
    if kind == BYTE_LEVEL:
        if lowercase:
            raise UserError(
                "lowercase=True does not apply to bytelevel-bpe: GPT-2 keeps the case of the text"
            )
        if vocab_size < 257:
            raise UserError(
                f"vocab_size={vocab_size} is too small for bytelevel-bpe: 256 bytes + {ENDOFTEXT}"
            )
        # <|endoftext|> comes last, as in GPT-2; the trainer would put it first, so it is added afterwards.
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size - 1,
            min_frequency=min_frequency,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
    else:
        # The trainer numbers the word-final symbols ("e</w>") in a hash map's order, which changes from
        # process to process, and breaks ties between merges of equal count by those numbers
        # (huggingface/tokenizers#1794): a first pass without merges finds them all, and the real one is given
        # them, sorted, so that the same text always learns the same merges (``_renumbered`` then orders ids).
        probe = pipeline(kind, {}, [], with_special=False)
        probe.train_from_iterator(
            _without(special, texts()),
            trainer=trainers.BpeTrainer(
                vocab_size=1, special_tokens=[UNK], end_of_word_suffix=SUFFIX, show_progress=False
            ),
        )
        finals = sorted(t for t in probe.get_vocab() if t.endswith(SUFFIX))
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=[UNK, *finals],
            end_of_word_suffix=SUFFIX,
            show_progress=False,
        )
    backend = pipeline(kind, {}, [], with_special=False)
    backend.train_from_iterator(_without(special, texts()), trainer=trainer)
    vocab, merges = vocab_and_merges(backend)
    vocab = _renumbered(vocab, merges, [] if kind == BYTE_LEVEL else [UNK])
    if kind == BYTE_LEVEL:
        vocab[ENDOFTEXT] = len(vocab)
    return pipeline(kind, vocab, merges)  # the pipeline a load of vocab.json + merges.txt builds


def pipeline(
    kind: str, vocab: dict[str, int], merges: Merges, with_special: bool = True
) -> tokenizers.Tokenizer:
    """The pipeline transformers' ``GPT2Tokenizer`` / ``OpenAIGPTTokenizer`` builds from these files."""
    if kind == BYTE_LEVEL:
        backend = tokenizers.Tokenizer(
            models.BPE(vocab, merges, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False)
        )
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        backend.post_processor = processors.ByteLevel(trim_offsets=False)  # offsets keep the leading space
        backend.decoder = decoders.ByteLevel()
    else:
        backend = tokenizers.Tokenizer(
            models.BPE(
                vocab,
                merges,
                unk_token=UNK,
                continuing_subword_prefix="",
                end_of_word_suffix=SUFFIX,
                fuse_unk=False,
            )
        )
        backend.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
        )
        backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        backend.decoder = decoders.BPEDecoder(suffix=SUFFIX)
    if with_special:  # like transformers, a special token missing from vocab.json gets the next id
        backend.add_special_tokens([AddedToken(SPECIAL[kind], special=True, normalized=False)])
    return backend


def with_special(backend: tokenizers.Tokenizer, tokens: Iterable[str]) -> tokenizers.Tokenizer:
    """A copy of ``backend`` with ``tokens`` added as special tokens after its vocabulary (those it lacks):
    GPT-1's fine-tuning tokens, or an end-of-text token for a vocabulary without one."""
    copy = tokenizers.Tokenizer.from_str(backend.to_str())
    missing = [t for t in tokens if copy.token_to_id(t) is None]
    copy.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in missing])
    return copy


def kind_of(backend: tokenizers.Tokenizer) -> str | None:
    """The GPT kind of ``backend``: a byte-level BPE (GPT-2's, RoBERTa's…), GPT-1's BPE, or None."""
    if not isinstance(backend.model, models.BPE):
        return None
    if isinstance(backend.pre_tokenizer, pre_tokenizers.ByteLevel):
        return BYTE_LEVEL
    if backend.model.end_of_word_suffix == SUFFIX:
        return GPT1
    return None


def vocab_and_merges(backend: tokenizers.Tokenizer) -> tuple[dict[str, int], Merges]:
    """The BPE model's vocabulary (in id order) and merges (in rank order)."""
    model = json.loads(backend.to_str())["model"]
    vocab = dict(sorted(model["vocab"].items(), key=lambda item: item[1]))
    # tokenizers < 0.20 serialised a merge as "a b", later versions as ["a", "b"]
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else (m[0], m[1]) for m in model["merges"]]
    return vocab, merges


# ---------------------------------------------------------------------- files


def read_files(directory: Path) -> tuple[dict[str, int], Merges]:
    """``directory``'s vocab.json and merges.txt, checked: each problem is a one-line DataError naming the
    file (and line)."""
    vocab = _read_vocab(directory / VOCAB_FILE)
    return vocab, _read_merges(directory / MERGES_FILE, vocab)


def load(directory: Path) -> tokenizers.Tokenizer:
    """The pipeline of ``directory``'s vocab.json + merges.txt: ``"gpt1-bpe"`` if some token ends in
    ``</w>``, else ``"bytelevel-bpe"``. Each problem is a one-line DataError naming the file (and line)."""
    vocab, merges = read_files(directory)
    kind = GPT1 if any(token.endswith(SUFFIX) for token in vocab) else BYTE_LEVEL
    try:
        return pipeline(kind, vocab, merges)
    except Exception as err:  # the engine raises a bare Exception
        raise DataError(
            f"{directory}: {VOCAB_FILE} + {MERGES_FILE} do not make a BPE ({one_line(err)})"
        ) from err


def save(backend: tokenizers.Tokenizer, directory: Path) -> bool:
    """Write ``directory``/vocab.json and merges.txt (each atomically) if ``backend`` is one of GPT's BPEs;
    return whether it was."""
    from seq2bert.io import atomic_write_text  # imports torch; only needed here

    if kind_of(backend) is None:
        return False
    vocab, merges = vocab_and_merges(backend)
    atomic_write_text(directory / VOCAB_FILE, json.dumps(vocab, ensure_ascii=False) + "\n")
    atomic_write_text(
        directory / MERGES_FILE, MERGES_HEADER + "\n" + "".join(f"{a} {b}\n" for a, b in merges)
    )
    return True


def _read_vocab(path: Path) -> dict[str, int]:
    if not path.is_file():
        raise DataError(f"{path}: missing; GPT's BPE needs {VOCAB_FILE} and {MERGES_FILE} side by side")
    try:
        vocab = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: cannot read ({one_line(err)})") from err
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{err.lineno}: invalid JSON ({err.msg})") from err
    if not isinstance(vocab, dict) or not all(
        isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in vocab.values()
    ):
        raise DataError(f"{path}: expected a JSON object mapping each token to its id (an integer >= 0)")
    seen: dict[int, str] = {}
    for token, i in vocab.items():
        if seen.setdefault(i, token) != token:
            raise DataError(f"{path}: {seen[i]!r} and {token!r} have the same id {i}")
    return vocab


def _read_merges(path: Path, vocab: dict[str, int]) -> Merges:
    """Merges as the engine reads them: ``#version`` lines skipped, every other line ``a b``."""
    if not path.is_file():
        raise DataError(f"{path}: missing; GPT's BPE needs {VOCAB_FILE} and {MERGES_FILE} side by side")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: cannot read ({one_line(err)})") from err
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    merges: Merges = []
    for lineno, line in enumerate(lines, start=1):
        line = line.removesuffix("\r")
        if line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise DataError(
                f"{path}:{lineno}: expected a merge, two tokens and one space between them, not {line!r:.60}"
            )
        a, b = parts
        for token in (a, b, a + b):
            if token not in vocab:
                raise DataError(
                    f"{path}:{lineno}: the merge {a!r} + {b!r} needs {token!r}, which {VOCAB_FILE} lacks"
                )
        merges.append((a, b))
    return merges


def _renumbered(vocab: dict[str, int], merges: Merges, specials: list[str]) -> dict[str, int]:
    """Ids that do not depend on the trainer's hash-map order, which numbers the word-final symbols (``x</w>``)
    differently run to run: the special tokens, the initial symbols in code-point order (word-final ones after
    the others), then the token of each merge in the order the merges were learnt."""
    made = list(dict.fromkeys(a + b for a, b in merges))
    initial = sorted(set(vocab) - set(made) - set(specials), key=lambda t: (t.endswith(SUFFIX), t))
    order = specials + initial + made
    assert sorted(order) == sorted(vocab), "a merge made a token the trainer did not keep"
    return {token: i for i, token in enumerate(order)}


def _without(special: str, texts: Iterable[str]) -> Iterator[str]:
    """The pieces of each text between occurrences of ``special`` (which the vocabulary holds already)."""
    for text in texts:
        yield from (piece for piece in text.split(special) if piece)
