"""BERT pretraining data, faithful to the original recipe (google-research/bert create_pretraining_data.py),
at any corpus size.

1. ``prepare_corpus``: raw text files → documents (a file each, or separated by blank lines) → sentences
   → WordPiece ids, written once, with a progress bar, into shards of flat binary arrays (``np.memmap`` opens them):

       shard-00000/tokens.bin      uint16 (or uint32) token ids of every sentence, back to back
       shard-00000/sentences.bin   int64 offsets into tokens: sentence s is tokens[sentences[s]:sentences[s+1]]
       shard-00000/documents.bin   int64 offsets into sentences: document d is sentences[documents[d]:…[d+1]]
       corpus.json                 counts, dtype, shards, what was skipped

   Files are streamed line by line and the offsets written as they come, so memory stays flat whatever
   the corpus size. Binary files, undecodable lines and empty documents are errors that name the file and
   line, or, with ``skip_bad``, counted skips.

2. ``instance_table`` (seq2bert/data/instances.py): the instances of one pass over the corpus, as rows of
   sentence indices, for the sentence task: BERT's next-sentence pairs (``nsp``, Devlin et al. Sect. 3.1,
   Task #2, as the released create_instances_from_document), ALBERT's sentence-order pairs (``sop``), or
   single segments of full sentences without a sentence task (``none``: within a document, RoBERTa's
   DOC-SENTENCES, SpanBERT; ``full_sentences``: across documents, RoBERTa's FULL-SENTENCES).

3. ``PretrainingData.collate``: [CLS] A [SEP] B [SEP] (``none``: [CLS] A [SEP]), the pair truncated at
   random ends to fit, then the
   masked-LM positions (Task #1, seq2bert/data/masking.py): 15 % of the tokens (at most
   max_predictions_per_seq), of which 80 % become [MASK], 10 % a random token and 10 % stay; single
   tokens, whole words, spans, n-grams or knowledge units as the config's masking strategy says. Masks are
   drawn from a generator seeded by (seed, pass, instance), so a run resumes exactly. ``masking="static"``
   repeats dupe_factor different maskings of the corpus (the original's dupe_factor, without storing the
   copies); ``"dynamic"`` draws a new one every epoch (Liu et al. 2019, RoBERTa).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from seq2bert.config import atomic_write_text
from seq2bert.data.instances import SENTENCE_TASKS, instance_table, packed_tokens, truncate_pair
from seq2bert.data.masking import MaskingConfig, mask_tokens
from seq2bert.data.paths import MISSING, kind_of, require_file
from seq2bert.data.text_columns import column_paragraphs, is_table
from seq2bert.data.text_files import lines_of
from seq2bert.errors import DataError
from seq2bert.io import write_dir_atomically
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.objectives.span_boundary import boundary_targets

log = logging.getLogger(__name__)

# a sentence ends at . ! ? (and closing quotes / brackets) followed by space and a capital, digit or quote
SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+(?=[\"'“‘(\[]?[A-Z0-9])")
MAX_PARAGRAPH_CHARS = 1_000_000  # a paragraph without blank lines is cut into pieces of this size
FLUSH_SENTENCES = 16_384  # sentences tokenized per call (in parallel) and written per batch


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph (a rule-based splitter for English: good enough to cut NSP segments)."""
    return [s.strip() for s in SENTENCE_END.split(" ".join(text.split())) if s.strip()]


@dataclass
class Skipped:
    binary_files: int = 0
    bad_lines: int = 0
    empty_documents: int = 0


GUTENBERG_START, GUTENBERG_END = b"*** START OF", b"*** END OF"


def gutenberg_body(path: Path) -> tuple[int, int]:
    """The lines (first, last) that hold the book in a Project Gutenberg file — between its ``*** START OF``
    and ``*** END OF`` markers, without the header and the licence — or (1, ∞) for any other file."""
    first, last = 1, float("inf")
    with open(path, "rb") as f:
        for number, raw in enumerate(lines_of(f), 1):
            if raw.startswith(GUTENBERG_START) and first == 1:
                first = number + 1
            elif raw.startswith(GUTENBERG_END) and first > 1:
                last = number - 1
                break
    return first, last  # type: ignore[return-value]


def iter_paragraphs(path: Path, documents: str, skip_bad: bool, skipped: Skipped) -> Iterator[str | None]:
    """The paragraphs of one file in order, None at each document boundary: every blank line
    (``documents="blank_line"``), every line (``"line"``: a file of sentences or short texts, each its own
    document) or only the end of the file (``"file"``). Streams line by line; of a
    Project Gutenberg book only the text between its START and END markers is read."""
    with open(path, "rb") as f:
        if b"\x00" in f.read(8192):
            if not skip_bad:
                raise DataError(f"{path}: a binary file (NUL bytes), not text")
            skipped.binary_files += 1
            return
        first, last = gutenberg_body(path)
        f.seek(0)
        para: list[str] = []
        size, in_document = 0, False
        for number, raw in enumerate(lines_of(f), 1):  # LF, CRLF or an old Mac OS file's CR
            if number < first:
                continue
            if number > last:
                break
            try:
                line = raw.decode("utf-8").strip().lstrip("\ufeff")  # a byte-order mark opens many files
            except UnicodeDecodeError as e:
                if not skip_bad:
                    raise DataError(
                        f"{path}:{number}: not valid UTF-8 ({e.reason} at byte {e.start})"
                    ) from None
                skipped.bad_lines += 1
                continue
            if line and documents == "line":
                yield line
                yield None
                continue
            if line:
                para.append(line)
                size += len(line)
                if size < MAX_PARAGRAPH_CHARS:
                    continue
            if para:
                yield " ".join(para)
                para, size, in_document = [], 0, True
            if not line and documents == "blank_line" and in_document:  # several blank lines: one boundary
                yield None
                in_document = False
        if para:
            yield " ".join(para)
            in_document = True
        if in_document:
            yield None


class ShardWriter:
    """Appends sentences to the current document of the current shard; a new shard starts at the first
    document boundary after ``shard_tokens`` tokens (a document never straddles two shards)."""

    def __init__(self, root: Path, dtype: np.dtype, shard_tokens: int):
        self.root, self.dtype, self.shard_tokens = root, dtype, shard_tokens
        self.shards: list[dict] = []
        self.files: dict = {}
        self.open_sentences = 0  # sentences of the document being written
        self._open()

    def _open(self) -> None:
        directory = self.root / f"shard-{len(self.shards):05d}"
        directory.mkdir(parents=True)
        self.files = {
            name: open(directory / f"{name}.bin", "wb") for name in ("tokens", "sentences", "documents")
        }
        self.files["sentences"].write(np.zeros(1, np.int64).tobytes())
        self.files["documents"].write(np.zeros(1, np.int64).tobytes())
        self.shards.append({"name": directory.name, "tokens": 0, "sentences": 0, "documents": 0})

    def add_sentences(self, sentences: list[list[int]]) -> None:
        """Append sentences (lists of token ids; empty ones are dropped) to the open document."""
        lengths = np.fromiter(map(len, sentences), np.int64, len(sentences))
        if not lengths.all():
            sentences = [x for x in sentences if x]
            lengths = lengths[lengths > 0]
        if not len(lengths):
            return
        shard = self.shards[-1]
        ends = shard["tokens"] + np.cumsum(lengths)
        self.files["tokens"].write(
            np.fromiter(chain.from_iterable(sentences), self.dtype, int(lengths.sum()))
        )
        self.files["sentences"].write(ends.tobytes())
        shard["tokens"] = int(ends[-1])
        shard["sentences"] += len(lengths)
        self.open_sentences += len(lengths)

    def end_document(self) -> bool:
        """Close the current document; False (nothing written) when it had no sentence."""
        if not self.open_sentences:
            return False
        shard = self.shards[-1]
        shard["documents"] += 1
        self.files["documents"].write(np.array([shard["sentences"]], np.int64).tobytes())
        self.open_sentences = 0
        if shard["tokens"] >= self.shard_tokens:
            self._close()
            self._open()
        return True

    def _close(self) -> None:
        for f in self.files.values():
            f.close()

    def close(self) -> list[dict]:
        self._close()
        return self.shards


def text_files(paths: list[str], key: str) -> list[Path]:
    """The text files of ``paths``: files as given, folders as their *.txt files (recursively, sorted), each
    file once (``distinct_files``); a path that is neither a file nor a folder (it does not exist, it is
    /dev/null), or a folder without *.txt files, is a DataError naming it, what it is, and the config ``key``
    it came from."""
    out = []
    for f in paths:
        p = Path(f)
        found = kind_of(p)
        if found == "a folder":
            inside = sorted(q for q in p.rglob("*.txt") if q.is_file())
            if not inside:
                raise DataError(f"{p}: no text files (*.txt) in this folder ({key})")
            out += inside
        elif found == "a file":
            out.append(p)
        elif found == MISSING:
            raise DataError(f"{p}: {MISSING} ({key})")
        else:
            raise DataError(f"{p}: {found} ({key}: expected a text file or a folder of *.txt files)")
    return distinct_files(out, key)


def distinct_files(paths: list[Path], key: str) -> list[Path]:
    """``paths`` with each file once, in order: the same file given twice (``pretrain a.txt a.txt``, a folder
    and a file in it, a link to it) would double its documents. Read once, with one warning naming the
    files and how many times each was given — the run reads what was named, as a set of files; doubling a
    file's weight is a copy's job, not a repeated argument's."""
    seen: dict[tuple[int, int], Path] = {}
    repeats: dict[Path, int] = {}
    out = []
    for p in paths:
        st = p.stat()
        first = seen.setdefault((st.st_dev, st.st_ino), p)
        if first is p:
            out.append(p)
        else:
            repeats[first] = repeats.get(first, 1) + 1
    if repeats:
        shown = ", ".join(f"{p} ({n} times)" for p, n in list(repeats.items())[:5])
        log.warning(
            "%s: %d file(s) given more than once, each read once: %s%s",
            key,
            len(repeats),
            shown,
            ", …" if len(repeats) > 5 else "",
        )
    return out


def prepare_corpus(
    files: list[str | Path],
    tokenizer,
    out_dir: str | Path,
    *,
    documents: str = "blank_line",
    shard_tokens: int = 50_000_000,
    skip_bad: bool = False,
    progress: bool = True,
    spaces: bool = False,
    paragraph_break: str = "\n\n",
    text_column: str = "",
) -> dict:
    """Tokenize ``files`` once into ``out_dir`` (see the module docstring); returns corpus.json's content.
    Written into a temporary folder renamed at the end: an interrupted preparation leaves nothing half-made.

    ``spaces``: keep the whitespace between the pieces of a document in its tokens — a sentence after another
    is tokenized with its leading space, a paragraph after another after ``paragraph_break`` (a blank line)
    — so that the tokens of a document decode back to its text (what a byte-level BPE, GPT-2's, reads and
    writes; WordPiece ignores whitespace). A masked LM's byte-level corpus takes a space there too, so that
    every word but a document's first carries its "Ġ", as in fine-tuning text.

    ``text_column``: the files are tables or CoNLL files, and the text is this column of theirs (a table's
    rows each a document; data/text_columns.py), ``documents`` unread."""
    if documents not in ("blank_line", "file", "line"):
        raise DataError(f"documents: expected blank_line, file or line, got {documents!r}")
    paths = [require_file(Path(f), "", "a text file to pretrain on") for f in files]
    paths = distinct_files(paths, "files")
    dtype = np.dtype(np.uint16 if tokenizer.vocab_size <= 65536 else np.uint32)
    skipped = Skipped()
    out_dir = Path(out_dir)

    def write(tmp: Path) -> None:
        writer = ShardWriter(tmp, dtype, shard_tokens)
        bar = tqdm(
            total=sum(p.stat().st_size for p in paths),
            unit="B",
            unit_scale=True,
            desc="tokenizing",
            disable=not progress,
            mininterval=1.0,
        )
        done_bytes = 0

        def tokenized(batch: list[str | None]) -> tuple[list[str | None], list[list[int]]]:
            return batch, tokenizer.ids_batch([x for x in batch if x is not None])

        def write_batch(batch: list[str | None], ids: list[list[int]]) -> None:
            sentences = iter(ids)
            start = 0  # the sentences since the last boundary go to the shard in one write
            for i, item in enumerate(batch):
                if item is None:
                    writer.add_sentences([next(sentences) for _ in range(i - start)])
                    if not writer.end_document():
                        skipped.empty_documents += 1
                    start = i + 1
            writer.add_sentences([next(sentences) for _ in range(len(batch) - start)])

        # a batch is tokenized (by the tokenizer's threads, without the GIL) while the next one is read
        with ThreadPoolExecutor(1) as tokenizing:
            job = None
            pending: list[str | None] = []  # sentences and document boundaries, in file order

            def flush() -> None:
                nonlocal job, pending
                if job is not None:
                    write_batch(*job.result())
                job = tokenizing.submit(tokenized, pending) if pending else None
                pending = []

            for path in paths:
                size, chars = path.stat().st_size, 0
                later = False  # a paragraph after another in the same document
                paragraphs = (
                    column_paragraphs(path, text_column)
                    if text_column
                    else iter_paragraphs(path, documents, skip_bad, skipped)
                )
                split = split_sentences if not text_column or is_table(path) else lambda p: [p]
                for para in paragraphs:  # a CoNLL file's paragraphs are its sentences already
                    if para is None:
                        pending.append(None)
                        later = False
                        continue
                    sentences = split(para)
                    if spaces and sentences:
                        sentences = [
                            (paragraph_break if later else "") + sentences[0],
                            *(" " + x for x in sentences[1:]),
                        ]
                        later = True
                    pending.extend(sentences)
                    chars += len(para) + 1
                    if len(pending) >= FLUSH_SENTENCES:
                        flush()
                        bar.update(done_bytes + min(chars, size) - bar.n)  # about a byte per character
                done_bytes += size
                bar.update(done_bytes - bar.n)
            flush()
            flush()
        bar.close()
        shards = [s for s in writer.close() if s["documents"]]
        if not shards:
            raise DataError(
                f"{', '.join(map(str, paths))}: no text (the files are empty or hold only blank lines)"
            )
        info = {
            "dtype": dtype.name,
            "vocab_size": tokenizer.vocab_size,
            "documents_mode": documents,
            "text_column": text_column,
            "spaces": spaces,
            "paragraph_break": paragraph_break if spaces else None,
            "shards": shards,
            "tokens": sum(s["tokens"] for s in shards),
            "sentences": sum(s["sentences"] for s in shards),
            "documents": sum(s["documents"] for s in shards),
            "skipped": vars(skipped),
            "files": [str(p) for p in paths],
        }
        atomic_write_text(tmp / "corpus.json", json.dumps(info, indent=2) + "\n")

    write_dir_atomically(out_dir, write)
    info = json.loads((out_dir / "corpus.json").read_text())
    if any(info["skipped"].values()):
        log.warning("skipped while preparing %s: %s", out_dir, info["skipped"])
    return info


class Corpus:
    """A prepared corpus: documents of sentences of token ids, across shards.

    In memory: a length per sentence (4 bytes) and a first sentence per document (8 bytes). The token and
    offset arrays stay on disk and are read with positioned reads (``os.pread``) — not memory-mapped,
    because mapped pages count as the process's resident memory and would grow with the corpus."""

    def __init__(self, directory: str | Path):
        self._files: dict[tuple[int, str], int] = {}  # (shard, name) → open file descriptor
        self.directory = Path(directory)
        path = self.directory / "corpus.json"
        if not path.is_file():
            raise DataError(f"{self.directory}: not a prepared corpus (no corpus.json)")
        self.info = json.loads(path.read_text())
        self.dtype = np.dtype(self.info["dtype"])
        shards = self.info["shards"]
        # global sentence numbering: shard k's sentences follow shard k−1's
        self.sentence_base = np.cumsum([0] + [s["sentences"] for s in shards])
        self.lengths = np.empty(self.sentence_base[-1], np.uint16)  # (S,) int32 if a sentence needs it
        self.doc_sentences = np.empty(sum(s["documents"] for s in shards) + 1, np.int64)  # (D + 1,)
        doc = 0  # the first sentence of each document, then the end
        for k, shard in enumerate(shards):
            d = self.directory / shard["name"]
            base = int(self.sentence_base[k])
            lengths = _sentence_lengths(d / "sentences.bin")
            if len(lengths) and lengths.max() > np.iinfo(self.lengths.dtype).max:
                self.lengths = self.lengths.astype(np.int32)
            self.lengths[base : int(self.sentence_base[k + 1])] = lengths
            starts = np.fromfile(d / "documents.bin", dtype=np.int64)[:-1]
            self.doc_sentences[doc : doc + len(starts)] = starts + base
            doc += len(starts)
        self.doc_sentences[-1] = self.sentence_base[-1]

    @property
    def num_documents(self) -> int:
        return len(self.doc_sentences) - 1

    def _read(self, shard: int, name: str, dtype: np.dtype, start: int, count: int) -> np.ndarray:
        key = (shard, name)
        if key not in self._files:
            self._files[key] = os.open(
                self.directory / self.info["shards"][shard]["name"] / f"{name}.bin", os.O_RDONLY
            )
        data = os.pread(self._files[key], count * dtype.itemsize, start * dtype.itemsize)
        if len(data) != count * dtype.itemsize:  # a shard cut short after preparation
            shard_dir = self.directory / self.info["shards"][shard]["name"]
            raise DataError(
                f"{shard_dir / name}.bin: ends before item {start + count}; prepare the corpus again"
            )
        return np.frombuffer(data, dtype=dtype)

    def tokens(self, start: int, end: int) -> np.ndarray:
        """The tokens of sentences start … end − 1 (global numbers, within one document), concatenated."""
        if end <= start:  # no sentences (the empty B of a single segment may start past the last one)
            return np.empty(0, self.dtype)
        shard = int(np.searchsorted(self.sentence_base, start, side="right") - 1)
        local = start - int(self.sentence_base[shard])
        first = int(self._read(shard, "sentences", np.dtype(np.int64), local, 1)[0])
        n = int(self.lengths[start:end].sum())
        return self._read(shard, "tokens", self.dtype, first, n)

    def tokens_from(self, sentence: int, lo: int, hi: int) -> np.ndarray:
        """Tokens lo … hi − 1 counted from the first token of ``sentence`` (global number; within its document):
        a part of a long document without reading the rest."""
        shard = int(np.searchsorted(self.sentence_base, sentence, side="right") - 1)
        local = sentence - int(self.sentence_base[shard])
        first = int(self._read(shard, "sentences", np.dtype(np.int64), local, 1)[0])
        return self._read(shard, "tokens", self.dtype, first + lo, hi - lo)

    def sentence(self, s: int) -> np.ndarray:
        return self.tokens(s, s + 1).astype(np.int64)

    def span(self, start: int, end: int) -> list[int]:
        """The tokens of sentences start … end − 1 (global numbers, within one document), as a list."""
        return self.tokens(start, end).tolist()

    def close(self) -> None:
        for fd in self._files.values():
            os.close(fd)
        self._files.clear()

    def __del__(self) -> None:
        self.close()

    def __getstate__(self) -> dict:  # a data-loader worker opens its own files
        return {**self.__dict__, "_files": {}}


def _sentence_lengths(path: Path, chunk: int = 1 << 22) -> np.ndarray:
    """The length of every sentence of a shard (int32), from its offsets, read a chunk at a time."""
    n = path.stat().st_size // 8 - 1
    out = np.empty(n, np.int32)
    with open(path, "rb") as f:
        prev = int(np.fromfile(f, dtype=np.int64, count=1)[0])
        for start in range(0, n, chunk):
            ends = np.fromfile(f, dtype=np.int64, count=min(chunk, n - start))
            out[start : start + len(ends)] = np.diff(ends, prepend=prev)
            prev = int(ends[-1])
    return out


def shuffled(n: int, rng: np.random.Generator) -> np.ndarray:
    """``rng.permutation(n)`` — the same order — in int32 when it fits: half the memory for millions."""
    order = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
    rng.shuffle(order)
    return order


class Batches(Sequence):
    """The batches of one epoch, made on demand from the shuffled order (a list of lists of Python ints
    would take ~36 bytes an instance: 150 MB for a 2 GB corpus); this rank's share when distributed."""

    def __init__(self, order: np.ndarray, key: int, batch_size: int, rank: int = 0, world: int = 1):
        self.order, self.key, self.batch_size, self.rank, self.world = order, key, batch_size, rank, world
        self.total = math.ceil(len(order) / batch_size)

    def __len__(self) -> int:
        return len(range(self.rank, self.total, self.world))

    def __getitem__(self, i: int) -> list[int]:  # type: ignore[override]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        b = (i % len(self)) * self.world + self.rank
        return [self.key + j for j in self.order[b * self.batch_size : (b + 1) * self.batch_size].tolist()]


class PretrainingData:
    """Batches of pretraining instances for the engine: ``batches(epoch)`` (index lists, deterministic per
    epoch) and ``collate(indices)`` (tensors for BertForPreTraining: the pairs of ``sentence_task`` labelled
    ``label_key`` — ``sentence_order_label`` for AlbertForPreTraining)."""

    def __init__(
        self,
        corpus: Corpus,
        documents: np.ndarray,
        cfg: MaskingConfig,
        *,
        batch_size: int,
        short_seq_prob: float = 0.1,
        masking: str = "static",
        dupe_factor: int = 10,
        seed: int = 0,
        shuffle: bool = True,
        rank: int = 0,
        world: int = 1,
        sentence_task: str = "nsp",
        label_key: str = "next_sentence_label",
        span_boundaries: bool = False,
    ):
        if masking not in ("static", "dynamic"):
            raise DataError(f"masking: expected static or dynamic, got {masking!r}")
        if sentence_task not in SENTENCE_TASKS:
            raise DataError(
                f"sentence_task: expected one of {', '.join(SENTENCE_TASKS)}, got {sentence_task!r}"
            )
        self.sentence_task = sentence_task
        self.corpus, self.documents, self.cfg = corpus, np.asarray(documents), cfg
        self.batch_size, self.short_seq_prob = batch_size, short_seq_prob
        self.masking, self.dupe_factor, self.seed = masking, dupe_factor, seed
        self.shuffle, self.rank, self.world = shuffle, rank, world
        self.label_key = label_key  # the model's name for the pair labels
        self.span_boundaries = span_boundaries  # SpanBERT's SBO: each target's boundaries and position
        self._tables: dict[int, np.ndarray] = {}
        self._pass_cfg: dict[int, MaskingConfig] = {}
        self.pass_of_batch: dict[int, int] = {}
        is_cont = set(cfg.continuation)
        self.is_continuation = is_cont.__contains__

    def pass_index(self, epoch: int) -> int:
        """Which masking of the corpus an epoch sees: one of dupe_factor (static) or a new one (dynamic)."""
        return epoch % self.dupe_factor if self.masking == "static" else epoch

    def table(self, epoch: int) -> np.ndarray:
        key = self.pass_index(epoch)
        if key not in self._tables:
            self._tables = {
                key: instance_table(
                    self.corpus,
                    self.documents,
                    max_seq_length=self.cfg.max_seq_length,
                    short_seq_prob=self.short_seq_prob,
                    seed=self.seed * 1000 + key,
                    sentence_task=self.sentence_task,
                )
            }
        return self._tables[key]

    def batches(self, epoch: int) -> Batches:
        """Instance indices of the epoch, shuffled, in batches; index = pass · 2⁴⁰ + row (collate decodes)."""
        n = len(self.table(epoch))
        order = shuffled(n, np.random.default_rng((self.seed, epoch))) if self.shuffle else np.arange(n)
        return Batches(order, self.pass_index(epoch) << 40, self.batch_size, self.rank, self.world)

    def instance(self, index: int) -> tuple[list[int], list[int], list[int], int, list[tuple[int, int]]]:
        """(input ids, token type ids, labels, sentence label, masked spans) of one instance: IsNext 0 /
        NotNext 1 (nsp), in order 0 / swapped 1 (sop), 0 (none); the spans (s, e) of masked positions."""
        key, row = index >> 40, index & ((1 << 40) - 1)
        table = self.table(key)  # pass_index(key) == key: it came from batches()
        a_start, a_end, b_start, b_end, label = (int(x) for x in table[row])
        rng = np.random.default_rng((self.seed, key, row))
        if key not in self._pass_cfg:  # the masking of this pass (ERNIE's stages change it)
            self._pass_cfg = {key: self.cfg.for_pass(key)}
        c = self._pass_cfg[key]
        if self.sentence_task == "full_sentences":  # <s> A </s>, A crossing documents with </s> between them
            a = packed_tokens(self.corpus, self.documents, table[row], c.max_seq_length - 2, c.sep_token_id)
            tokens = [c.cls_token_id, *a, c.sep_token_id]
            special = np.asarray(tokens) == c.sep_token_id
            special[0] = True
            inputs, labels = mask_tokens(tokens, special, c, rng, self.is_continuation)
            return inputs, [0] * len(tokens), labels, 0
        a, b = self.corpus.span(a_start, a_end), self.corpus.span(b_start, b_end)
        if self.sentence_task == "none":  # one segment: [CLS] A [SEP]
            truncate_pair(a, b, c.max_seq_length - 2, rng)
            tokens = [c.cls_token_id, *a, c.sep_token_id]
            types = [0] * len(tokens)
            special = np.zeros(len(tokens), bool)
            special[[0, len(tokens) - 1]] = True
        else:
            truncate_pair(a, b, c.max_seq_length - 3, rng)
            tokens = [c.cls_token_id, *a, c.sep_token_id, *b, c.sep_token_id]
            types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
            special = np.zeros(len(tokens), bool)
            special[[0, len(a) + 1, len(tokens) - 1]] = True
        spans: list[tuple[int, int]] = []
        inputs, labels = mask_tokens(tokens, special, c, rng, self.is_continuation, spans)
        return inputs, types, labels, label, spans

    def collate(self, indices: list[int]) -> dict[str, torch.Tensor]:
        rows = [self.instance(i) for i in indices]
        T = max(len(r[0]) for r in rows)
        pad = self.cfg.pad_token_id

        def padded(k: int, value: int) -> torch.Tensor:
            return torch.tensor([r[k] + [value] * (T - len(r[k])) for r in rows], dtype=torch.long)

        ids = padded(0, pad)
        sbo = {}
        if self.span_boundaries:  # (B, T) each, read at the labelled positions (objectives/span_boundary.py)
            targets = [boundary_targets(r[4], T) for r in rows]
            for k, name in enumerate(("span_left", "span_right", "span_position")):
                sbo[name] = torch.tensor([t[k] for t in targets], dtype=torch.long)
        return {
            "input_ids": ids,  # (B, T)
            **(
                {} if self.sentence_task == "full_sentences" else {"token_type_ids": padded(1, 0)}
            ),  # RoBERTa: none
            "attention_mask": torch.tensor([[1] * len(r[0]) + [0] * (T - len(r[0])) for r in rows]),
            "labels": padded(2, IGNORE_INDEX),
            # (B,): NSP's IsNext 0 / NotNext 1, or SOP's in order 0 / swapped 1 (BERT's binary head reads both;
            # ALBERT's reads them as sentence_order_label)
            **(
                {}
                if self.sentence_task in ("none", "full_sentences")
                else {self.label_key: torch.tensor([r[3] for r in rows])}
            ),
            **sbo,
        }
