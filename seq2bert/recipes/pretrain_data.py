"""The data side of `seq2bert pretrain` (recipes/pretrain.py): the ``data`` section of its config, the family's
defaults for its "auto" settings, the tokenizer a run trains or reads, and the masking it asks for — the
budget (``max_predictions_per_seq``), the strategy, where words start in the vocabulary (data/word_pieces.py)
and the lexicon of knowledge masking; the corpus tokenized once into the run directory, tied to the inputs
it was made from (``prepared_from``), and the held-out documents."""

from __future__ import annotations

import json
import logging
import math
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np

from seq2bert.data import gpt_bpe
from seq2bert.data.masking import STRATEGIES, MaskingConfig, check_units
from seq2bert.data.paths import require_file
from seq2bert.data.phrases import collocations
from seq2bert.data.pretraining import Corpus, prepare_corpus, shuffled, text_files
from seq2bert.data.text_files import read_text_lines
from seq2bert.data.tokenization import Tokenizer
from seq2bert.data.word_pieces import continuation_ids, reads_spaces
from seq2bert.errors import ConfigError, DataError
from seq2bert.io import read_json, write_json
from seq2bert.training.distributed import DistInfo, barrier

log = logging.getLogger("seq2bert.recipes.pretrain")  # the run's log lines


@dataclass
class PretrainDataConfig:
    """Where the text comes from and how instances are made (defaults: the original BERT recipe at 128)."""

    files: list[str] = field(default_factory=list)  # text files or folders of them (*.txt, recursively)
    # held-out text (files or folders, read as ``files`` are), all of it scored; empty: valid_fraction of the
    # documents of ``files`` held out
    valid_files: list[str] = field(default_factory=list)
    # a column to read in place of plain text: a table's (CSV, TSV, JSON Lines, Parquet, by name; each row a
    # document) or a CoNLL file's (numbered, 0: the word; -DOCSTART- between documents): data/text_columns.py
    text_column: str = ""
    # a vocab.txt, tokenizer.json, vocab.json + merges.txt or folder; empty: train one of the model's kind
    tokenizer: str = ""
    vocab_size: int = 30522
    lowercase: bool | None = None  # None: the kind's own (WordPiece uncased; GPT-2's BPE keeps the case)
    # a blank line ends a document, or the end of the file, or every line (a file of short texts, one a line)
    documents: Literal["blank_line", "file", "line"] = "blank_line"
    skip_bad: bool = False
    shard_tokens: int = 50_000_000
    max_seq_length: int = 128  # BERT: the longest instance; GPT: the length of a block
    # BERT's instances (the causal LM reads blocks and ignores them)
    short_seq_prob: float = 0.1
    masked_lm_prob: float = 0.15
    # the most positions predicted in an instance; auto: ⌈masked_lm_prob × max_seq_length⌉ (masking_config),
    # 20 at 128 as BERT's recipe, 77 at 512 — BERT's README asks for "around max_seq_length * masked_lm_prob"
    # (its runs at 512 used 76; NVIDIA's 80); a number is kept as given
    max_predictions_per_seq: int | Literal["auto"] = "auto"
    # of the positions chosen: the share [MASK]ed and the share given a random token, the rest kept; auto: the
    # family's (BERT's 0.8 / 0.1; ELECTRA's generator input 0.85 / 0)
    mask_fraction: float | Literal["auto"] = "auto"
    random_fraction: float | Literal["auto"] = "auto"
    whole_word_masking: bool = False  # the same as masking_strategy=whole_word
    # positions masked together (data/masking.py): token, whole_word, span, ngram, knowledge; auto: the
    # family's (SpanBERT span, else token)
    masking_strategy: str = "auto"
    span_p: float = 0.2  # span (SpanBERT): lengths ~ Geo(span_p) in whole words …
    span_max_words: int = 10  # … clipped at span_max_words
    ngram_max: int = 3  # ngram (ALBERT): n ≤ ngram_max whole words, p(n) ∝ 1/n
    # knowledge (ERNIE 1.0): text files of phrases / named entities, one a line, masked as whole units
    phrases: str = ""
    entities: str = ""
    phrase_ngrams: int = 0  # knowledge: also this many phrases found by n-gram statistics (data/phrases.py)
    knowledge_level: str = "entity"  # word (basic), phrase, or entity (entities, phrases and words)
    # ERNIE's stages: the level of each epoch in turn, the last one kept (e.g. [word, phrase, entity]);
    # needs masking=dynamic (static masking repeats its dupe_factor passes); empty: knowledge_level throughout
    knowledge_schedule: list[str] = field(default_factory=list)
    # NSP (BERT), sentence order (ALBERT), none (one document's sentences: SpanBERT, RoBERTa's DOC-SENTENCES;
    # ELECTRA), full_sentences (across documents: RoBERTa's FULL-SENTENCES); auto: the family's (ALBERT SOP,
    # RoBERTa full_sentences, ELECTRA none, else NSP)
    sentence_task: Literal["auto", "nsp", "sop", "none", "full_sentences"] = "auto"
    masking: Literal["auto", "static", "dynamic"] = (
        "auto"  # auto: the family's (RoBERTa dynamic, else static)
    )
    dupe_factor: int = 10
    batch_size: int = 32
    valid_fraction: float = 0.02  # documents held out for evaluation
    max_valid_instances: int = 1024  # held-out instances (GPT: blocks) scored at each evaluation

    def validate(self) -> None:
        if not 0.0 < self.masked_lm_prob < 1.0:
            raise ConfigError(f"masked_lm_prob: must be in (0, 1), got {self.masked_lm_prob}")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise ConfigError(f"short_seq_prob: must be in [0, 1], got {self.short_seq_prob}")
        if not 0.0 <= self.valid_fraction < 1.0:
            raise ConfigError(f"valid_fraction: must be in [0, 1), got {self.valid_fraction}")
        for name in (
            "max_seq_length",
            "max_predictions_per_seq",
            "dupe_factor",
            "batch_size",
            "vocab_size",
            "shard_tokens",
            "max_valid_instances",
        ):
            if getattr(self, name) != "auto" and getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.masking_strategy != "auto" and self.masking_strategy not in STRATEGIES:
            raise ConfigError(
                f"masking_strategy: expected one of {', '.join(STRATEGIES)}, got {self.masking_strategy!r}"
            )
        if self.whole_word_masking and self.masking_strategy not in ("auto", "token", "whole_word"):
            raise ConfigError(f"whole_word_masking: set, but masking_strategy is {self.masking_strategy!r}")
        check_units(
            self.span_p, self.span_max_words, self.ngram_max, (self.knowledge_level, *self.knowledge_schedule)
        )
        if self.phrase_ngrams < 0:
            raise ConfigError(f"phrase_ngrams: must be at least 0, got {self.phrase_ngrams}")
        knowledge = self.phrases or self.entities or self.knowledge_schedule or self.phrase_ngrams
        if knowledge and self.masking_strategy != "knowledge":
            raise ConfigError(
                f"phrases, entities, phrase_ngrams, knowledge_schedule: set, but masking_strategy is "
                f"{self.masking_strategy!r} (knowledge reads them)"
            )
        if self.knowledge_schedule and self.masking == "static":  # auto: known with the family (family_data)
            raise ConfigError(KNOWLEDGE_STAGES)
        if self.max_seq_length < 8:
            raise ConfigError(f"max_seq_length: must be at least 8, got {self.max_seq_length}")

    def __post_init__(self) -> None:
        self.validate()

    def text_files(self) -> list[Path]:
        out = text_files(self.files, "data.files")
        if not out:
            raise DataError("data.files: no text files to pretrain on")
        return out

    def held_out_files(self) -> list[Path]:
        return text_files(self.valid_files, "data.valid_files")


KNOWLEDGE_STAGES = "knowledge_schedule: needs masking=dynamic (static masking repeats its passes)"


def family_data(data: PretrainDataConfig, defaults: dict) -> PretrainDataConfig:
    """The data section with the family's ``defaults`` (Family.pretraining_data) for the settings left at
    "auto" (data.sentence_task, data.masking, …); the settings that depend on them checked (ERNIE's stages
    need dynamic masking: RoBERTa's by default, static for the others' auto)."""
    out = replace(data, **{k: v for k, v in defaults.items() if getattr(data, k) == "auto"})
    if out.knowledge_schedule and out.masking != "dynamic":
        raise ConfigError(KNOWLEDGE_STAGES)
    return out


def build_tokenizer(data: PretrainDataConfig, files: list[Path], kind: str) -> Tokenizer:
    """data.tokenizer, or a ``kind`` vocabulary trained on ``files``."""
    if data.tokenizer:
        return Tokenizer.from_file(data.tokenizer)
    lowercase = data.lowercase if data.lowercase is not None else kind == "wordpiece"
    log.info(
        "training a%s %s vocabulary of %d on %d files",
        "n uncased" if lowercase else "",
        kind,
        data.vocab_size,
        len(files),
    )
    return Tokenizer.train(files, kind=kind, vocab_size=data.vocab_size, lowercase=lowercase)


def with_end_of_text(tok: Tokenizer) -> Tokenizer:
    """A causal LM's vocabulary ends each document with its end-of-text token ([EOS], [SEP] or <|endoftext|>,
    Tokenizer.eos_token_id); one without (GPT-1's BPE) gets <|endoftext|>, GPT-2's, added."""
    if tok.eos_token_id is not None:
        return tok
    return Tokenizer(gpt_bpe.with_special(tok.backend, [gpt_bpe.ENDOFTEXT]))


def lexicon(path: str, tok: Tokenizer, key: str) -> tuple[tuple[int, ...], ...]:
    """The token ids of each line (a phrase or entity) of a text file, as the corpus holds them: for a
    byte-level BPE, which reads the space before a word, both after a space (mid-sentence: "ĠNew ĠYork") and
    without (a document's first words: "New ĠYork"); none for an empty path."""
    if not path:
        return ()
    require_file(Path(path), key, "a text file of phrases or entities, one a line")
    lines = [line.strip() for line in read_text_lines(Path(path)) if line.strip()]
    if reads_spaces(tok.backend):
        lines = [x for line in lines for x in (" " + line, line)]
    return tuple(dict.fromkeys(tuple(ids) for ids in tok.ids_batch(lines) if ids))


def corpus_spaces(tok: Tokenizer, causal: bool) -> dict:
    """How the corpus keeps the whitespace between sentences (data/pretraining.py ``prepare_corpus``): a causal
    LM's text as it is, so that its tokens decode to it; a masked LM on a byte-level BPE (RoBERTa), with a
    space before each sentence and paragraph but a document's first, as fine-tuning text has them (without,
    a sentence's first word would be stored as "The", not "ĠThe", and FULL-SENTENCES would read "end.The");
    other vocabularies ignore the whitespace."""
    if causal:
        return dict(spaces=True, paragraph_break="\n\n")
    return dict(spaces=reads_spaces(tok.backend), paragraph_break=" ")


PHRASE_SENTENCES = 200_000  # the sentences whose n-gram statistics give data.phrase_ngrams phrases


def corpus_sentences(corpus: Corpus, documents, limit: int = PHRASE_SENTENCES) -> list[list[int]]:
    """The sentences of the first ``documents``, up to ``limit``, as lists of token ids."""
    out: list[list[int]] = []
    for d in documents:
        first, last = int(corpus.doc_sentences[d]), int(corpus.doc_sentences[d + 1])
        last = min(last, first + limit - len(out))
        tokens = corpus.tokens(first, last).tolist()
        for n in corpus.lengths[first:last].tolist():
            out.append(tokens[:n])
            tokens = tokens[n:]
        if len(out) >= limit:
            break
    return out


def max_predictions(data: PretrainDataConfig) -> int:
    """data.max_predictions_per_seq; auto: ⌈masked_lm_prob × max_seq_length⌉ (rounded first: 0.15 × 100 is
    15.000000000000002 in floating point)."""
    if data.max_predictions_per_seq != "auto":
        return data.max_predictions_per_seq
    return math.ceil(round(data.masked_lm_prob * data.max_seq_length, 6))


def masking_config(
    data: PretrainDataConfig, tok: Tokenizer, sentences: list[list[int]] = (), default_strategy: str = "token"
) -> MaskingConfig:
    """The masking the data section asks for; ``sentences`` (token ids): the text whose n-gram statistics give
    ``data.phrase_ngrams`` phrases; ``default_strategy``: the family's, for masking_strategy=auto."""
    continuation = continuation_ids(tok.backend)  # where words start: data/word_pieces.py
    phrases = lexicon(data.phrases, tok, "data.phrases")
    if data.phrase_ngrams and sentences:
        found = collocations(sentences, set(continuation).__contains__, top=data.phrase_ngrams)
        log.info(
            "%d phrases from n-gram statistics, e.g. %s", len(found), [tok.decode(list(p)) for p in found[:5]]
        )
        phrases += tuple(found)
    return MaskingConfig(
        max_seq_length=data.max_seq_length,
        masked_lm_prob=data.masked_lm_prob,
        max_predictions_per_seq=max_predictions(data),
        mask_fraction=0.8 if data.mask_fraction == "auto" else data.mask_fraction,
        random_fraction=0.1 if data.random_fraction == "auto" else data.random_fraction,
        whole_word_masking=data.whole_word_masking,
        strategy=default_strategy if data.masking_strategy == "auto" else data.masking_strategy,
        cls_token_id=tok.cls_token_id,
        sep_token_id=tok.sep_token_id,
        mask_token_id=tok.mask_token_id,
        pad_token_id=tok.pad_token_id,
        vocab_size=tok.vocab_size,
        continuation=continuation,
        span_p=data.span_p,
        span_max_words=data.span_max_words,
        ngram_max=data.ngram_max,
        knowledge_level=data.knowledge_level,
        knowledge_schedule=tuple(data.knowledge_schedule),
        phrases=phrases,
        entities=lexicon(data.entities, tok, "data.entities"),
    )


PREPARED = "prepared.json"  # what a run's tokenizer/ and corpus/ were made from
VALID_CORPUS = "valid-corpus"  # data.valid_files, tokenized


def file_stamp(path: Path) -> list:
    """[resolved path, size, modification time]: what tells one input file from another."""
    if not path.exists():
        raise DataError(f"{path}: no such file")
    stat = path.stat()
    return [str(path.resolve()), stat.st_size, stat.st_mtime_ns]


def inputs_of(files: list[Path], data: PretrainDataConfig, tokenizer: dict, causal: bool) -> dict:
    """The fingerprint of a prepared corpus: its text files (and held-out ones), the tokenizer's source and how
    the text is read."""
    return {
        "files": [file_stamp(f) for f in files],
        **({"valid_files": [file_stamp(f) for f in data.held_out_files()]} if data.valid_files else {}),
        **({"text_column": data.text_column} if data.text_column else {}),
        "tokenizer": tokenizer,
        "documents": data.documents,
        "skip_bad": data.skip_bad,
        "shard_tokens": data.shard_tokens,
        "causal": causal,
    }


def prepared_from(out_dir: Path, inputs: dict, resume: bool, dist: DistInfo) -> None:
    """Tie ``out_dir``'s tokenizer/ and corpus/ to ``inputs`` (PREPARED). A fresh run finding them from other
    inputs — or from an attempt that never said what it read — makes them again (a killed or failed run leaves
    them, and they must not pass for this run's); a resumed run keeps what it trained on, saying so when
    its inputs have changed since."""
    path = out_dir / PREPARED
    before = read_json(path) if path.is_file() else None
    parts = [out_dir / "tokenizer", out_dir / "corpus", out_dir / VALID_CORPUS]
    if resume:
        if before is not None and before != json.loads(json.dumps(inputs)):
            log.warning(
                "%s: the input files or tokenizer changed since the run began; it resumes on the "
                "tokenizer and corpus it prepared then",
                out_dir,
            )
        if before is not None:
            return
    elif any(p.exists() for p in parts) and before != json.loads(json.dumps(inputs)):
        log.warning(
            "%s: a tokenizer and corpus left by an earlier attempt from other inputs; made again", out_dir
        )
        if dist.is_main:
            for p in parts:
                shutil.rmtree(p, ignore_errors=True)
    if dist.is_main:
        write_json(path, inputs)


def tokenized_corpus(
    files: list[Path],
    tok: Tokenizer,
    corpus_dir: Path,
    data: PretrainDataConfig,
    causal: bool,
    dist: DistInfo,
    progress: bool,
) -> Corpus:
    """The text tokenized once into ``corpus_dir`` (by the main process; reused when it is there already)."""
    spaces = corpus_spaces(tok, causal)
    if not (corpus_dir / "corpus.json").is_file():
        if dist.is_main:
            prepare_corpus(
                files,
                tok,
                corpus_dir,
                documents=data.documents,
                shard_tokens=data.shard_tokens,
                skip_bad=data.skip_bad,
                progress=progress,
                text_column=data.text_column,
                **spaces,
            )
        barrier(dist)
    corpus = Corpus(corpus_dir)
    if corpus.info.get("spaces", False) != spaces["spaces"]:  # a corpus of an older version, resumed
        log.warning(
            "%s: tokenized %s the spaces between sentences, unlike this version; kept for the resume",
            corpus_dir,
            "with" if corpus.info.get("spaces") else "without",
        )
    return corpus


def held_out_corpus(
    data: PretrainDataConfig, tok: Tokenizer, out_dir: Path, causal: bool, dist: DistInfo, progress: bool
) -> Corpus | None:
    """data.valid_files tokenized once into ``out_dir``/valid-corpus, as ``tokenized_corpus`` does the
    training text (None without held-out files: a fraction of the documents is held out, ``held_out``)."""
    files = data.held_out_files()
    if not files:
        return None
    return tokenized_corpus(files, tok, out_dir / VALID_CORPUS, data, causal, dist, progress)


def held_out(
    corpus: Corpus, data: PretrainDataConfig, seed: int, least: int, valid: Corpus | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(training, held-out) documents: data.valid_fraction of them, drawn with ``seed``; fewer than ``least``
    held out (BERT draws a held-out B from another held-out document: 2), the first training ones, said.
    With ``valid`` (data.valid_files' corpus): every document of ``corpus`` trains, every one of ``valid`` is
    held out."""
    if valid is not None:
        if valid.num_documents < least:
            raise DataError(
                f"{', '.join(data.valid_files)}: {valid.num_documents} held-out document(s); this objective "
                f"needs at least {least} (data.valid_files)"
            )
        return np.arange(corpus.num_documents), np.arange(valid.num_documents)
    order = shuffled(corpus.num_documents, np.random.default_rng(seed))
    n_valid = int(round(data.valid_fraction * corpus.num_documents))
    if corpus.num_documents - n_valid < 2:
        raise DataError(
            f"{', '.join(data.files)}: {corpus.num_documents} documents; pretraining needs at least 2"
        )
    valid_docs, train_docs = np.sort(order[:n_valid]), np.sort(order[n_valid:])
    if n_valid < least:
        log.warning(
            "fewer than %d held-out documents (data.valid_fraction): evaluating on training documents", least
        )
        valid_docs = train_docs[:50]
    return train_docs, valid_docs
