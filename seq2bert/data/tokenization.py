"""Subword tokenizers: train, load, save and apply vocabularies.

The Hugging Face ``tokenizers`` library is the engine; this module only assembles its pipelines
(normalizer → pre-tokenizer → model → post-processor → decoder) and wraps them in a small API.

Five kinds of vocabulary can be trained (:meth:`Tokenizer.train`):

* ``"wordpiece"`` – BERT (Devlin et al., 2019): ``BertNormalizer`` + ``BertPreTokenizer`` + WordPiece with the
  ``##`` continuation prefix (Wu et al., 2016).
* ``"bpe"`` – SentencePiece-like byte-pair encoding (Sennrich et al., 2016; Kudo & Richardson, 2018): NFC
  normalisation, spaces kept as ``▁`` (Metaspace), so ``decode(encode(x)) == x`` for ordinary text
  (text without leading whitespace whose characters were all seen in training).
* ``"word"`` – a whole-word vocabulary for teaching: split on whitespace, unknown words become ``[UNK]``.
* ``"bytelevel-bpe"`` – GPT-2's byte-level BPE, ``<|endoftext|>`` its last id; ``"gpt1-bpe"`` – GPT-1's
  lower-cased BPE with ``</w>`` and ``<unk>``. Both live in :mod:`seq2bert.data.gpt_bpe`, add no special
  tokens around a text (as transformers' ``GPT2Tokenizer`` and ``OpenAIGPTTokenizer`` do not) and are saved
  as vocab.json + merges.txt next to tokenizer.json.

BPE and word training are deterministic. WordPiece training is not, run to run, in the engine itself
(huggingface/tokenizers#1794: hash-map order assigns the ids of ``##`` pieces, which break merge ties);
save a trained WordPiece vocabulary rather than expecting to retrain the same one.

The other trained vocabularies start with :data:`SPECIAL_TOKENS` (ids 0..6), and add ``[CLS] A [SEP]`` or
``[CLS] A [SEP] B [SEP]`` (token type ids 0 for A, 1 for B) when asked for special tokens.

:meth:`Tokenizer.from_file` also reads a BERT ``vocab.txt`` (building exactly the pipeline of transformers'
``BertTokenizerFast``), GPT's ``vocab.json`` + ``merges.txt``, or any ``tokenizer.json``.

Truncation and padding are per call. The engine applies them on a private, cached copy of the backend,
so the shared backend never carries them and :meth:`Tokenizer.encode` has no hidden state.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tokenizers
from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers

from seq2bert.data import gpt_bpe
from seq2bert.data.paths import MISSING, kind_of
from seq2bert.data.special_tokens import SPECIAL_TOKENS, set_bert_template
from seq2bert.data.text_files import PathLike, one_line, read_text_lines, training_texts
from seq2bert.data.vocab_training import train_with_specials
from seq2bert.errors import DataError, UserError

logger = logging.getLogger(__name__)

KINDS = ("bpe", "wordpiece", "word", *gpt_bpe.KINDS)
TRUNCATION_STRATEGIES = ("longest_first", "only_first", "only_second")
BERT_SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ROBERTA_SPECIAL = gpt_bpe.ROBERTA_SPECIAL
_MAX_CACHED_BACKENDS = 8


@dataclass
class Encoding:
    """One encoded text or text pair; every list has one entry per token."""

    ids: list[int]
    type_ids: list[int]
    attention_mask: list[int]
    offsets: list[tuple[int, int]]  # character span in the original text of its token; (0, 0) for specials
    tokens: list[str]
    sequence_ids: list[int | None]  # 0 / 1 for the first / second text, None for specials and pads
    word_ids: list[int | None]
    truncated: bool = False  # tokens were cut to max_length

    @classmethod
    def from_backend(cls, enc: tokenizers.Encoding) -> Encoding:
        return cls(
            ids=list(enc.ids),
            type_ids=list(enc.type_ids),
            attention_mask=list(enc.attention_mask),
            offsets=[tuple(o) for o in enc.offsets],
            tokens=list(enc.tokens),
            sequence_ids=list(enc.sequence_ids),
            word_ids=list(enc.word_ids),
            truncated=bool(enc.overflowing),
        )

    def __len__(self) -> int:
        return len(self.ids)


class BatchEncoding(dict):
    """``{"input_ids", "token_type_ids", "attention_mask"}`` (lists of lists or ``torch.LongTensor`` of shape
    (B, T)), plus the per-example :class:`Encoding` objects in ``.encodings``."""

    def __init__(self, data: dict[str, Any], encodings: list[Encoding]) -> None:
        super().__init__(data)
        self.encodings = encodings


class Tokenizer:
    """A ``tokenizers.Tokenizer`` with per-call truncation and padding.

    The tokenizer takes ownership of ``backend``: any truncation or padding stored in it is switched off,
    and it should not be mutated afterwards (cached copies made for truncation/padding would not see it).
    Of a stored padding only its side is kept (``padding_side``: XLNet pads on the left), for every padded
    call and for :meth:`save`.
    """

    def __init__(self, backend: tokenizers.Tokenizer) -> None:
        stored = backend.padding or {}
        self.padding_side: str = stored.get("direction", "right").lower()
        if backend.truncation is not None or backend.padding is not None:
            logger.info("ignoring the truncation/padding stored in the tokenizer; they are set per call")
            backend.no_truncation()
            backend.no_padding()
        self._backend = backend
        self._variants: dict[tuple[Any, ...], tokenizers.Tokenizer] = {}
        self._lock = threading.Lock()

    @classmethod
    def padded_on(cls, backend: tokenizers.Tokenizer, side: str) -> Tokenizer:
        """A tokenizer that pads on ``side`` ("left" or "right")."""
        tokenizer = cls(backend)
        tokenizer.padding_side = side
        return tokenizer

    def _with_padding(self, backend: tokenizers.Tokenizer, length: int | None) -> None:
        backend.enable_padding(
            direction=self.padding_side,
            pad_id=self.pad_token_id,
            pad_token=self.id_to_token(self.pad_token_id),
            length=length,
        )

    @property
    def backend(self) -> tokenizers.Tokenizer:
        """The underlying ``tokenizers.Tokenizer`` (read only: see the class docstring)."""
        return self._backend

    def __getstate__(self) -> dict[str, Any]:
        return {"backend": self._backend.to_str(), "padding_side": self.padding_side}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._backend = tokenizers.Tokenizer.from_str(state["backend"])
        self.padding_side = state.get("padding_side", "right")
        self._variants = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        model = type(self._backend.model).__name__
        return f"Tokenizer(model={model}, vocab_size={self.vocab_size})"

    # ------------------------------------------------------------------ training

    @classmethod
    def train(
        cls,
        files_or_texts: PathLike | Iterable[PathLike],
        kind: str = "bpe",
        vocab_size: int = 8000,
        min_frequency: int = 2,
        lowercase: bool = False,
    ) -> Tokenizer:
        """Train a ``kind`` vocabulary (one of :data:`KINDS`) of at most ``vocab_size`` entries
        (BPE and WordPiece keep every character seen, even if the alphabet alone is larger).
        ``lowercase`` does not apply to the GPT kinds: see :func:`seq2bert.data.gpt_bpe.train`.

        ``files_or_texts`` is one path (``str`` or ``Path``), or an iterable whose ``Path`` items are files
        and whose ``str`` items are texts. Files are UTF-8, plain or ``.gz``, one text per line.
        """
        if kind not in KINDS:
            raise UserError(f"kind={kind!r} is not a tokenizer kind; expected one of {', '.join(KINDS)}")
        if not isinstance(vocab_size, int) or vocab_size <= len(SPECIAL_TOKENS):
            raise UserError(f"vocab_size={vocab_size!r} must be an integer above {len(SPECIAL_TOKENS)}")
        if not isinstance(min_frequency, int) or min_frequency < 1:
            raise UserError(f"min_frequency={min_frequency!r} must be a positive integer")

        counter = [0]
        # a one-shot iterator of texts is kept: WordPiece and GPT-1's BPE read the texts twice
        source = list(files_or_texts) if isinstance(files_or_texts, Iterator) else files_or_texts

        def texts() -> Iterator[str]:
            counter[0] = 0
            return _counted(training_texts(source), counter)

        if kind in gpt_bpe.KINDS:
            backend = gpt_bpe.train(kind, texts, vocab_size, min_frequency, lowercase)
        else:
            backend = train_with_specials(texts, kind, vocab_size, min_frequency, lowercase)
        if counter[0] == 0:
            raise DataError("no text to train the tokenizer on (the input has no non-empty lines)")
        size = backend.get_vocab_size()
        logger.info("trained a %s vocabulary of %d tokens on %d texts", kind, size, counter[0])
        return cls(backend)

    # ------------------------------------------------------------------ loading and saving

    @classmethod
    def from_file(cls, path: PathLike, lowercase: bool | None = None) -> Tokenizer:
        """Load a ``tokenizer.json``, GPT's ``vocab.json`` + ``merges.txt`` (either names both), a BERT
        ``vocab.txt``, or a directory holding one of them (in that order of preference).

        For ``vocab.txt``, ``lowercase=None`` means the ``do_lower_case`` of a ``tokenizer_config.json``
        beside it, else True (the uncased default).
        """
        path = Path(path)
        if path.is_dir():
            for name in ("tokenizer.json", gpt_bpe.VOCAB_FILE, gpt_bpe.MERGES_FILE, "vocab.txt"):
                if (path / name).is_file():
                    return cls.from_file(path / name, lowercase)
            raise DataError(
                f"{path}: expected a tokenizer.json, a vocab.json + merges.txt or a vocab.txt in this "
                "directory"
            )
        if not path.is_file():
            found = kind_of(path)
            raise DataError(
                f"{path}: {'no such file' if found == MISSING else found}; expected a tokenizer.json, a "
                "vocab.json + merges.txt, a vocab.txt or a directory"
            )
        if path.suffix == ".json" or path.name == gpt_bpe.MERGES_FILE:
            if lowercase is not None:
                raise UserError(f"lowercase= applies to a vocab.txt only; {path} sets its own normalizer")
            if path.name in (gpt_bpe.VOCAB_FILE, gpt_bpe.MERGES_FILE):
                return cls(gpt_bpe.load(path.parent))
            try:
                backend = tokenizers.Tokenizer.from_file(str(path))
            except Exception as err:  # the engine raises a bare Exception on malformed files
                raise DataError(f"{path}: not a valid tokenizer.json ({one_line(err)})") from err
            return cls(backend)
        return cls(_bert_from_vocab(path, lowercase))

    def save(self, directory: PathLike) -> None:
        """Write ``directory/tokenizer.json`` atomically (a temporary file, then ``os.replace``); for GPT's
        BPE vocabularies also vocab.json + merges.txt, the files transformers' GPT tokenizers read."""
        from seq2bert.io import umask_mode  # imports torch; only needed here

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tokenizer.", suffix=".json.tmp")
        os.fchmod(fd, umask_mode())  # the mode of the user's other files, not mkstemp's 0600
        os.close(fd)
        backend = self._backend
        if self.padding_side != "right":  # the side travels in tokenizer.json
            backend = tokenizers.Tokenizer.from_str(backend.to_str())
            self._with_padding(backend, None)
        try:
            backend.save(tmp, pretty=True)
            os.replace(tmp, directory / "tokenizer.json")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        gpt_bpe.save(self._backend, directory)

    @classmethod
    def load(cls, directory: PathLike) -> Tokenizer:
        """Read what :meth:`save` wrote."""
        return cls.from_file(directory)

    # ------------------------------------------------------------------ encoding

    def encode(
        self,
        text: str,
        pair: str | None = None,
        *,
        add_special_tokens: bool = True,
        max_length: int | None = None,
        truncation: str | None = None,
        padding: str | None = None,
    ) -> Encoding:
        """Encode a text, or a pair of texts, optionally truncated and/or padded to ``max_length``.

        ``truncation`` is None, "longest_first" (trim the longer text, token by token), "only_first" or
        "only_second"; ``padding`` is None or "max_length".
        """
        backend = self._configured(
            max_length, truncation, padding, ("max_length",), [pair is not None], add_special_tokens
        )
        try:
            enc = backend.encode(text, pair, add_special_tokens=add_special_tokens)
        except Exception as err:  # the engine raises a bare Exception
            _raise_if_truncation_error(err, max_length, truncation)
            raise
        return Encoding.from_backend(enc)

    def encode_batch(
        self,
        texts: Sequence[str] | Sequence[tuple[str, str]],
        *,
        add_special_tokens: bool = True,
        max_length: int | None = None,
        truncation: str | None = None,
        padding: str | None = None,
        return_tensors: str | None = None,
    ) -> BatchEncoding:
        """Encode texts or ``(text, pair)`` tuples in parallel; ``padding``: None, "longest", "max_length".

        ``return_tensors="pt"`` gives ``torch.LongTensor`` of shape (B, T) (the rows must have equal length).
        """
        if return_tensors not in (None, "pt"):
            raise UserError(f"return_tensors={return_tensors!r} is not supported; expected None or 'pt'")
        inputs: list[str | tuple[str, str]] = []
        for i, item in enumerate(texts):
            if isinstance(item, str):
                inputs.append(item)
            elif isinstance(item, tuple | list) and len(item) == 2 and all(isinstance(t, str) for t in item):
                inputs.append((item[0], item[1]))
            else:
                raise UserError(f"texts[{i}] must be a str or a (text, pair) tuple of str, not {item!r:.80}")
        pairs = sorted({isinstance(item, tuple) for item in inputs})
        allowed = ("longest", "max_length")
        backend = self._configured(max_length, truncation, padding, allowed, pairs, add_special_tokens)
        try:
            encs = backend.encode_batch(inputs, add_special_tokens=add_special_tokens) if inputs else []
        except Exception as err:  # the engine raises a bare Exception
            _raise_if_truncation_error(err, max_length, truncation)
            raise
        encodings = [Encoding.from_backend(e) for e in encs]
        data: dict[str, Any] = {
            "input_ids": [e.ids for e in encodings],
            "token_type_ids": [e.type_ids for e in encodings],
            "attention_mask": [e.attention_mask for e in encodings],
        }
        if return_tensors == "pt":
            import torch

            if len({len(e) for e in encodings}) > 1:
                raise UserError("return_tensors='pt' needs rows of equal length; pass padding='longest'")
            data = {k: torch.tensor(v, dtype=torch.long) for k, v in data.items()}  # (B, T)
        return BatchEncoding(data, encodings)

    def ids_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of each text, without special tokens, truncation or padding: the fast path for
        tokenizing a corpus (no offsets, no per-token Python objects)."""
        backend = self._configured(None, None, None, (), [False], False)
        return (
            [e.ids for e in backend.encode_batch_fast(list(texts), add_special_tokens=False)] if texts else []
        )

    def encode_words(
        self, sentences: Sequence, *, max_length: int | None = None, add_special_tokens: bool = True
    ) -> list[Encoding]:
        """Encode sentences already split into words (CoNLL), or ``(words, words)`` tuples (pairs): each word
        is split into sub-words on its own, so ``word_ids`` index the given words (of the text that
        ``sequence_ids`` names). ``max_length``: truncate (special tokens kept; pairs: the longer first).
        ``add_special_tokens=False``: the bare sub-words (what a translation encoder read).

        A byte-level BPE (GPT-2's, RoBERTa's) keeps a word's leading space in its first piece ("Ġrejects"),
        so every word after a text's first is given one: the words are read as the running text they
        come from, not as pieces never seen in pretraining ("rej", "ects")."""
        truncation = "longest_first" if max_length is not None else None
        pairs = sorted({isinstance(s, tuple) for s in sentences}) or [False]
        backend = self._configured(max_length, truncation, None, (), pairs, add_special_tokens)
        spaced = self._spaces_in_pieces()
        words = [(spaced(s[0]), spaced(s[1])) if isinstance(s, tuple) else spaced(s) for s in sentences]
        try:
            encs = (
                backend.encode_batch(words, is_pretokenized=True, add_special_tokens=add_special_tokens)
                if words
                else []
            )
        except Exception as err:  # the engine raises a bare Exception
            _raise_if_truncation_error(err, max_length, truncation)
            raise
        return [Encoding.from_backend(e) for e in encs]

    def _spaces_in_pieces(self):
        """How encode_words passes a text's words: with a space before each but the first when the
        pre-tokenizer is byte-level without a prefix space (the space belongs to the next word's piece)."""
        pre = self._backend.pre_tokenizer
        if not isinstance(pre, pre_tokenizers.ByteLevel) or pre.add_prefix_space:
            return list
        return lambda words: [w if i == 0 else f" {w}" for i, w in enumerate(words)]

    def decode(self, ids: Sequence[int] | Any, skip_special_tokens: bool = True) -> str:
        """Turn ids (a list, or a 1-D tensor/array) back into text."""
        return self._backend.decode(_int_list(ids), skip_special_tokens=skip_special_tokens)

    def decode_batch(
        self, batch_ids: Sequence[Sequence[int]] | Any, skip_special_tokens: bool = True
    ) -> list[str]:
        """Decode each row of ``batch_ids`` (a list of lists, or a 2-D tensor/array)."""
        rows = [_int_list(row) for row in batch_ids]
        return self._backend.decode_batch(rows, skip_special_tokens=skip_special_tokens)

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text``, without special tokens."""
        return self._backend.encode(text, add_special_tokens=False).tokens

    def token_to_id(self, token: str) -> int | None:
        return self._backend.token_to_id(token)

    def id_to_token(self, i: int) -> str | None:
        return self._backend.id_to_token(i)

    # ------------------------------------------------------------------ properties

    @property
    def vocab_size(self) -> int:
        return self._backend.get_vocab_size(with_added_tokens=True)

    @property
    def pad_token_id(self) -> int | None:
        """``[PAD]``, else ``<pad>`` (fairseq's specials: RoBERTa's byte-level BPE, ALBERT's SentencePiece)."""
        return self._first_id("[PAD]", ROBERTA_SPECIAL["pad"])

    @property
    def unk_token_id(self) -> int | None:
        """``[UNK]``, else ``<unk>`` (GPT-1's, RoBERTa's, ALBERT's), else GPT-2's ``<|endoftext|>``."""
        return self._first_id("[UNK]", gpt_bpe.UNK, gpt_bpe.ENDOFTEXT)

    @property
    def cls_token_id(self) -> int | None:
        """``[CLS]``, else ``<cls>`` (XLNet's, which also has ``<s>``), else ``<s>``."""
        return self._first_id("[CLS]", "<cls>", ROBERTA_SPECIAL["cls"])

    @property
    def sep_token_id(self) -> int | None:
        """``[SEP]``, else ``<sep>`` (XLNet's, which also has ``</s>``), else ``</s>``."""
        return self._first_id("[SEP]", "<sep>", ROBERTA_SPECIAL["sep"])

    @property
    def mask_token_id(self) -> int | None:
        """``[MASK]``, else ``<mask>``."""
        return self._first_id("[MASK]", ROBERTA_SPECIAL["mask"])

    @property
    def bos_token_id(self) -> int | None:
        """The id of ``[BOS]`` if the vocabulary has it, else of ``[CLS]`` (or ``<s>``), else of
        ``<|endoftext|>``."""
        return self._first_id("[BOS]", "[CLS]", ROBERTA_SPECIAL["cls"], gpt_bpe.ENDOFTEXT)

    @property
    def eos_token_id(self) -> int | None:
        """The id of ``[EOS]`` if the vocabulary has it, else of ``[SEP]`` (or ``</s>``), else of
        ``<|endoftext|>``."""
        return self._first_id("[EOS]", "[SEP]", ROBERTA_SPECIAL["sep"], gpt_bpe.ENDOFTEXT)

    def _first_id(self, *tokens: str) -> int | None:
        return next((i for i in map(self.token_to_id, tokens) if i is not None), None)

    # ------------------------------------------------------------------ internals

    def _configured(
        self,
        max_length: int | None,
        truncation: str | None,
        padding: str | None,
        allowed_padding: tuple[str, ...],
        pairs: list[bool],
        add_special_tokens: bool,
    ) -> tokenizers.Tokenizer:
        """Validate the per-call options; return a backend that applies them (cached, never mutated again)."""
        if truncation is not None and truncation not in TRUNCATION_STRATEGIES:
            allowed = ", ".join(TRUNCATION_STRATEGIES)
            raise UserError(f"truncation={truncation!r} is not a strategy; expected None or one of {allowed}")
        if padding is not None and padding not in allowed_padding:
            allowed = ", ".join(allowed_padding)
            raise UserError(f"padding={padding!r} is not supported; expected None or one of {allowed}")
        if max_length is None:
            if truncation is not None:
                raise UserError(f"truncation={truncation!r} needs max_length")
            if padding == "max_length":
                raise UserError("padding='max_length' needs max_length")
        else:
            if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 1:
                raise UserError(f"max_length={max_length!r} must be a positive integer")
            if truncation is None and padding != "max_length":
                raise UserError(
                    f"max_length={max_length} does nothing without truncation= or padding='max_length'"
                )
            if truncation is not None and add_special_tokens:
                for is_pair in pairs:
                    n = self._backend.num_special_tokens_to_add(is_pair)
                    if max_length < n:
                        what = "a pair" if is_pair else "a single text"
                        raise UserError(f"max_length={max_length} < the {n} special tokens of {what}")
        if padding is not None and self.pad_token_id is None:
            raise UserError(f"padding={padding!r} needs a [PAD] token, which this vocabulary lacks")
        if truncation is None and padding is None:
            return self._backend

        key = (max_length, truncation, padding)
        with self._lock:
            backend = self._variants.get(key)
            if backend is None:
                backend = tokenizers.Tokenizer.from_str(self._backend.to_str())
                if truncation is not None:
                    backend.enable_truncation(max_length, stride=0, strategy=truncation)
                if padding is not None:
                    self._with_padding(backend, max_length if padding == "max_length" else None)
                if len(self._variants) >= _MAX_CACHED_BACKENDS:
                    self._variants.pop(next(iter(self._variants)))
                self._variants[key] = backend
        return backend


# ---------------------------------------------------------------------- pipelines


def _bert_from_vocab(path: Path, lowercase: bool | None) -> tokenizers.Tokenizer:
    """The pipeline transformers' ``BertTokenizerFast`` builds from a ``vocab.txt``."""
    vocab: dict[str, int] = {}
    for index, token in enumerate(
        read_text_lines(path)
    ):  # like transformers' load_vocab: a later duplicate wins
        vocab[token] = index
    missing = [t for t in ("[UNK]", "[CLS]", "[SEP]") if t not in vocab]
    if missing:
        raise DataError(f"{path}: not a BERT vocab.txt (one token a line); it lacks {', '.join(missing)}")

    options = _bert_options(path.parent / "tokenizer_config.json")
    if lowercase is None:
        lowercase = bool(options.get("do_lower_case", True))
    backend = tokenizers.Tokenizer(
        models.WordPiece(
            vocab, unk_token="[UNK]", max_input_chars_per_word=100, continuing_subword_prefix="##"
        )
    )
    backend.normalizer = normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=bool(options.get("tokenize_chinese_chars", True)),
        strip_accents=options.get("strip_accents"),
        lowercase=lowercase,
    )
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece(prefix="##")
    set_bert_template(backend)
    backend.add_special_tokens(
        [
            AddedToken(t, special=True, normalized=False, lstrip=False, rstrip=False, single_word=False)
            for t in BERT_SPECIAL_TOKENS
            if t in vocab
        ]
    )
    return backend


def _bert_options(config: Path) -> dict[str, Any]:
    """``do_lower_case``, ``strip_accents`` and ``tokenize_chinese_chars`` of a tokenizer_config.json."""
    if not config.is_file():
        return {}
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(f"{config}: not a readable JSON tokenizer config ({one_line(err)})") from err
    if not isinstance(data, dict):
        raise DataError(f"{config}: expected a JSON object")
    keys = ("do_lower_case", "strip_accents", "tokenize_chinese_chars")
    options = {k: data[k] for k in keys if data.get(k) is not None}
    for key, value in options.items():
        if not isinstance(value, bool):
            raise DataError(f"{config}: {key} must be true, false or null, not {value!r}")
    return options


# ---------------------------------------------------------------------- small helpers


def _counted(texts: Iterable[str], counter: list[int]) -> Iterator[str]:
    for text in texts:
        counter[0] += 1
        yield text


def _int_list(ids: Any) -> list[int]:
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    return [int(i) for i in ids]


def _raise_if_truncation_error(err: Exception, max_length: int | None, truncation: str | None) -> None:
    """Turn the engine's truncation failures (e.g. only_second, second text too short) into UserError."""
    if truncation is not None and "Truncation error" in str(err):
        raise UserError(
            f"cannot truncate to max_length={max_length} with truncation={truncation!r}: {one_line(err)}"
        ) from err
