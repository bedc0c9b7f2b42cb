"""RoBERTa's tokenizer: GPT-2's byte-level BPE (Liu et al. 2019, Sect. 4.4; seq2bert/data/gpt_bpe.py) with
fairseq's specials and BERT's framing in them:

    one text   <s> A </s>                pair   <s> A </s></s> B </s>       (no token types: all 0)

<s> (the classifier reads its final state), <pad>, </s>, <unk> and <mask> — which takes the space before
it, so that "a <mask>." masks the word " b" would be, as transformers' RobertaTokenizer does. A checkpoint
directory carries vocab.json + merges.txt, as RoBERTa was published, and/or a tokenizer.json (read first);
saving writes the three and the tokenizer_config.json of transformers' RobertaTokenizer. ``train_tokenizer``
learns one on text in fairseq's layout: <s> <pad> </s> <unk> = 0 1 2 3, the BPE's tokens, <mask> last.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tokenizers
from tokenizers import AddedToken, processors

from seq2bert.data import gpt_bpe
from seq2bert.data.tokenization import Tokenizer
from seq2bert.data.tokenizer_files import save_with_config
from seq2bert.errors import DataError
from seq2bert.models.roberta.config import RobertaConfig

SPECIAL = gpt_bpe.ROBERTA_SPECIAL


def roberta_pipeline(vocab: dict[str, int], merges: gpt_bpe.Merges) -> tokenizers.Tokenizer:
    """The pipeline of transformers' RobertaTokenizer for a vocab.json + merges.txt: a special absent from
    the vocabulary gets the next id."""
    backend = gpt_bpe.pipeline(gpt_bpe.BYTE_LEVEL, vocab, merges, with_special=False)
    mask = SPECIAL["mask"]
    backend.add_special_tokens(
        [AddedToken(t, special=True, normalized=False, lstrip=t == mask) for t in SPECIAL.values()]
    )
    cls, sep = SPECIAL["cls"], SPECIAL["sep"]
    backend.post_processor = processors.RobertaProcessing(
        (sep, backend.token_to_id(sep)),
        (cls, backend.token_to_id(cls)),
        trim_offsets=True,
        add_prefix_space=False,
    )
    return backend


def load_tokenizer(path: Path) -> Tokenizer | None:
    """The tokenizer of a RoBERTa directory — tokenizer.json, else vocab.json + merges.txt — or None."""
    path = Path(path)
    if (path / "tokenizer.json").is_file():
        return Tokenizer.from_file(path / "tokenizer.json")
    if not (path / gpt_bpe.VOCAB_FILE).is_file():
        return None
    vocab, merges = gpt_bpe.read_files(path)
    try:
        return Tokenizer(roberta_pipeline(vocab, merges))
    except Exception as err:  # the engine raises a bare Exception
        raise DataError(
            f"{path}: {gpt_bpe.VOCAB_FILE} + {gpt_bpe.MERGES_FILE} do not make a BPE ({err})"
        ) from err


def save_tokenizer(tokenizer: Any, directory: Path, config: RobertaConfig) -> None:
    """tokenizer.json, vocab.json + merges.txt (Tokenizer.save) and the tokenizer_config.json of
    transformers' RobertaTokenizer."""
    save_with_config(
        tokenizer,
        directory,
        "RobertaTokenizer",
        SPECIAL,
        bos_token=SPECIAL["cls"],
        eos_token=SPECIAL["sep"],
        add_prefix_space=False,
        trim_offsets=True,
        model_max_length=config.max_input_length,
    )


def train_tokenizer(files: list[Path], vocab_size: int) -> Tokenizer:
    """A byte-level BPE of ``vocab_size`` entries trained on ``files`` (GPT-2's, data/gpt_bpe.py) with RoBERTa's
    specials in place of <|endoftext|>: <s> <pad> </s> <unk> first, <mask> last."""
    head = [SPECIAL[role] for role in ("cls", "pad", "sep", "unk")]
    # GPT-2's training keeps one id for <|endoftext|>: vocab_size − 4 leaves vocab_size − 5 for the BPE
    trained = Tokenizer.train(files, kind=gpt_bpe.BYTE_LEVEL, vocab_size=vocab_size - 4)
    vocab, merges = gpt_bpe.vocab_and_merges(trained.backend)
    learned = sorted((i, t) for t, i in vocab.items() if t != gpt_bpe.ENDOFTEXT)
    ids = {t: i for i, t in enumerate([*head, *(t for _, t in learned)])}
    return Tokenizer(roberta_pipeline(ids, merges))  # <mask>: the next id
