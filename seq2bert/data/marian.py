"""The tokenizer of a MarianMT checkpoint directory, through the ``sentencepiece`` library.

A Marian directory holds ``source.spm`` and ``target.spm`` (SentencePiece models) and ``vocab.json`` (piece →
model id; ``target_vocab.json`` too when the vocabularies are separate). A source text is cut into pieces by
source.spm — a leading language code such as ``>>fr<<`` is kept whole — the pieces become ids through
vocab.json (unknown pieces: ``<unk>``), and ``</s>`` ends the sequence. Ids decode back through the
vocabulary and SentencePiece, as transformers' MarianTokenizer does (with one shared vocabulary it decodes
with the source model, as transformers does). transformers may also normalise punctuation with sacremoses
when that package is installed; we do not.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from seq2bert.errors import CheckpointError

SPECIAL_FILES = ("tokenizer_config.json", "special_tokens_map.json", "target_vocab.json")
SPIECE_UNDERLINE = "▁"


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(
            f"{path}: missing (a MarianMT directory has vocab.json, source.spm, target.spm)"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: not valid JSON ({e})") from None


class MarianTokenizer:
    """Source texts → ids and target ids → texts for a MarianMT directory (see the module docstring)."""

    def __init__(self, directory: str | Path):
        import sentencepiece

        self.directory = Path(directory)
        options = {}
        if (self.directory / "tokenizer_config.json").is_file():
            options = _read_json(self.directory / "tokenizer_config.json")
        self.separate_vocabs = bool(options.get("separate_vocabs", False))
        self.encoder = {str(k): int(v) for k, v in _read_json(self.directory / "vocab.json").items()}
        target = _read_json(self.directory / "target_vocab.json") if self.separate_vocabs else self.encoder
        self.decoder = {int(v): str(k) for k, v in target.items()}
        self.unk_token = str(options.get("unk_token", "<unk>"))
        self.eos_token = str(options.get("eos_token", "</s>"))
        self.pad_token = str(options.get("pad_token", "<pad>"))
        for token in (self.unk_token, self.eos_token, self.pad_token):
            if token not in self.encoder:
                raise CheckpointError(f"{self.directory / 'vocab.json'}: no {token} token")
        self.special_ids = {self.encoder[t] for t in (self.unk_token, self.eos_token, self.pad_token)}
        self.spm = {}
        for side in ("source", "target"):
            path = self.directory / f"{side}.spm"
            if not path.is_file():
                raise CheckpointError(f"{path}: missing (a MarianMT directory has source.spm and target.spm)")
            try:
                self.spm[side] = sentencepiece.SentencePieceProcessor(model_file=str(path))
            except (OSError, RuntimeError) as e:
                raise CheckpointError(f"{path}: not a SentencePiece model ({e})") from None

    # --- ids of the special tokens; the decoder starts from the pad token, as Marian does
    @property
    def pad_token_id(self) -> int:
        return self.encoder[self.pad_token]

    @property
    def eos_token_id(self) -> int:
        return self.encoder[self.eos_token]

    @property
    def unk_token_id(self) -> int:
        return self.encoder[self.unk_token]

    @property
    def bos_token_id(self) -> int:
        return self.pad_token_id

    @property
    def vocab_size(self) -> int:
        return len(self.encoder)

    def tokenize(self, text: str) -> list[str]:
        """Source pieces, a leading language code (``>>fr<<``) kept whole."""
        code = []
        if text.startswith(">>") and (end := text.find("<<")) != -1:
            code, text = [text[: end + 2]], text[end + 2 :]
        return code + self.spm["source"].encode(text, out_type=str)

    def source_ids(self, texts: list[str]) -> list[list[int]]:
        """The model input of each source text: piece ids, then ``</s>``."""
        unk = self.unk_token_id
        return [[self.encoder.get(p, unk) for p in self.tokenize(t)] + [self.eos_token_id] for t in texts]

    def id_to_token(self, i: int) -> str:
        return self.decoder.get(int(i), self.unk_token)

    def token_to_id(self, token: str) -> int | None:
        return self.encoder.get(token)

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        """Target ids → text (specials dropped unless asked); pieces are joined by SentencePiece."""
        spm = self.spm["target" if self.separate_vocabs else "source"]
        out, pieces = "", []
        for i in ids:
            i = int(i)
            if i in self.special_ids:
                if not skip_special_tokens:  # special tokens never go through SentencePiece
                    out += spm.decode_pieces(pieces) + self.id_to_token(i) + " "
                    pieces = []
                continue
            pieces.append(self.id_to_token(i))
        return (out + spm.decode_pieces(pieces)).replace(SPIECE_UNDERLINE, " ").strip()

    def decode_batch(self, rows, skip_special_tokens: bool = True) -> list[str]:
        return [self.decode(r, skip_special_tokens) for r in rows]

    def save(self, directory: str | Path) -> None:
        """Copy the tokenizer's files (vocab.json, source.spm, target.spm and their options) to ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name in ("vocab.json", "source.spm", "target.spm", *SPECIAL_FILES):
            src = self.directory / name
            if src.is_file() and src.resolve() != (directory / name).resolve():
                shutil.copyfile(src, directory / name)
