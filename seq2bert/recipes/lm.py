"""Recipe: train a recurrent language model on raw text, with truncated back-propagation through time — one
path for the language models of the registry (``model.model_type``): the recurrent LM (``rnn-lm``, the
default) and ELMo's biLM (``elmo``: a forward and a backward LM, models/elmo/).

Read top to bottom:
1. the tokenizer: a given one, or a vocabulary trained on the text (the model's kind by default: BPE for
   the rnn-lm; for ELMo whole words — every word of the text up to data.input_words, each read by its
   spelling, of which the data.vocab_size most frequent are the softmax's and the rest predict [UNK]);
2. the corpus: tokenized once into shards (the reader of the BERT pretraining, seq2bert/data/pretraining.py,
   so the same gigabyte scale holds), documents split into training and held-out ones (or held-out files);
3. each part is one token stream cut into B parallel rows and segments of T tokens (seq2bert/data/lm.py);
   for ELMo each sentence stands between <S> and </S> ([BOS], [EOS]), and the backward LM reads the
   stream reversed, cut the same way;
4. the engine trains on the segments in order; the recurrent state at the end of a segment starts the next
   one, detached (truncated BPTT), and is saved with every checkpoint, so a resumed run continues exactly;
   gradient norms are clipped (train.clip_norm; Pascanu et al. 2013);
5. evaluation: perplexity exp(−(1/N) Σ log p(w_t | w_<t)) over the held-out stream, per token and per
   whitespace-separated word (comparable across vocabularies); for ELMo the forward and the backward
   perplexity (valid_forward_perplexity, valid_backward_perplexity) and their mean (valid_perplexity).

With ``init`` (``--init RUN_OR_DIR``) the run continues a language model of this recipe — an LSTM LM, an
ELMo biLM with its softmax — on new text, with the checkpoint's own vocabulary and weights (ULMFiT's
target-task LM fine-tuning, Howard & Ruder 2018, Sect. 3.2): no tokenizer is trained and the model section is
not read; the held-out perplexity of the checkpoint as given is measured before the first step
(``valid_before_*`` in results.json, beside the final ``valid_*``).

    seq2bert train-lm ../shared/data/corpus --out runs/lm --set train.max_minutes=55
    seq2bert train-lm ../shared/data/corpus --out runs/elmo --set model.model_type=elmo
    seq2bert train-lm my-domain.txt --init runs/lm --out runs/lm-domain
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from seq2bert.data.characters import char_table
from seq2bert.data.lm import BiStreamBatches, StreamBatches, TokenStream
from seq2bert.data.pretraining import Corpus, prepare_corpus, shuffled, text_files
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import CheckpointError, ConfigError, DataError
from seq2bert.io import save_tensors
from seq2bert.models import registry
from seq2bert.models.family import max_input_length
from seq2bert.models.pretrained import checkpoint_dir, load_hf_weights, write_hf_files
from seq2bert.models.registry import LMModelConfig
from seq2bert.models.rnn_lm.config import RNNLMConfig
from seq2bert.models.rnn_lm.model import detach
from seq2bert.models.weight_only import weight_only_int8
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.recipes.pretrain_init import copy_tokenizer_files, held_out_before
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.config import TrainConfig
from seq2bert.training.distributed import cleanup, setup
from seq2bert.training.run import (
    check_model_fits,
    check_out_dir,
    count_parameters,
    seed_everything,
    trained,
    write_results,
    write_run_config,
)
from seq2bert.training.trainer import Trainer
from seq2bert.viz.curves import plot_training_curves

log = logging.getLogger(__name__)


@dataclass
class LMDataConfig:
    files: list[str] = field(default_factory=list)  # text files or folders of them (*.txt, recursively)
    valid_files: list[str] = field(default_factory=list)  # held-out text; empty: valid_fraction of documents
    tokenizer: str = ""  # a tokenizer.json / vocab.txt / folder; empty: train one on the text
    # auto: the model's kind (bpe for the rnn-lm, word for elmo)
    tokenizer_kind: Literal["auto", "bpe", "wordpiece", "word"] = "auto"
    vocab_size: int = 0  # the output vocabulary; 0: the model's (16,000 BPE pieces; elmo: 20,000 words)
    input_words: int = 1_000_000  # elmo: words of the text read by their spelling (at most; all it has)
    lowercase: bool = False
    documents: Literal["blank_line", "file"] = "file"  # a book per file
    skip_bad: bool = False
    shard_tokens: int = 50_000_000
    valid_fraction: float = 0.05
    batch_size: int = 32  # parallel streams B
    bptt: int = 64  # segment length T
    max_valid_tokens: int = 500_000  # of the held-out stream scored at each evaluation (0: all)

    def validate(self) -> None:
        for name in ("batch_size", "bptt", "shard_tokens", "input_words"):
            if getattr(self, name) < 1:
                raise ConfigError(f"data.{name}: must be at least 1, got {getattr(self, name)}")
        if self.vocab_size < 0:
            raise ConfigError(
                f"data.vocab_size: must be at least 1 (or 0: the model's), got {self.vocab_size}"
            )
        if not 0.0 <= self.valid_fraction < 1.0 or self.max_valid_tokens < 0:
            raise ConfigError("data.valid_fraction must be in [0, 1) and data.max_valid_tokens >= 0")

    def __post_init__(self) -> None:
        self.validate()


@dataclass
class LMConfig:
    model: LMModelConfig = field(default_factory=RNNLMConfig)  # chosen by model.model_type (rnn-lm, elmo)
    data: LMDataConfig = field(default_factory=LMDataConfig)
    init: str = ""  # a checkpoint or run of this recipe to continue (its model and vocabulary); "": new
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            lr=2e-3, weight_decay=0.0, clip_norm=0.25, max_epochs=1, metric="perplexity", log_every=50
        )
    )


def vocabulary(data: LMDataConfig, model) -> tuple[str, int]:
    """The tokenizer kind and output vocabulary size: data's, or the model's own (``lm_vocabulary``)."""
    kind, size = type(model).lm_vocabulary
    kind = kind if data.tokenizer_kind == "auto" else data.tokenizer_kind
    if type(model).bidirectional and kind != "word":
        raise ConfigError(
            f"data.tokenizer_kind: {model.model_type} predicts words: expected 'word', got {kind!r}"
        )
    return kind, data.vocab_size or size


def build_tokenizer(data: LMDataConfig, files: list[Path], model) -> Tokenizer:
    """A given tokenizer, or one trained on ``files``: for a model that spells its input (elmo), every word
    up to data.input_words (its softmax keeps the most frequent: the first ids)."""
    kind, size = vocabulary(data, model)
    if data.tokenizer:
        tok = Tokenizer.from_file(data.tokenizer)
        if type(model).bidirectional and type(tok.backend.model).__name__ != "WordLevel":
            raise DataError(f"{data.tokenizer}: {model.model_type} needs a word vocabulary (data.tokenizer)")
        return tok
    spelled = type(model).bidirectional
    size, min_frequency = (max(size, data.input_words), 1) if spelled else (size, 2)
    log.info("training a %s vocabulary of %d on %d files", kind, size, len(files))
    return Tokenizer.train(
        files, kind=kind, vocab_size=size, min_frequency=min_frequency, lowercase=data.lowercase
    )


def model_config(model, tok: Tokenizer, vocab_size: int):
    """The model's config with the vocabulary's sizes and ids: the rnn-lm predicts every token of the
    tokenizer (the separator ends documents); a biLM the first ``vocab_size`` words (<S> = [BOS],
    </S> = [EOS])."""
    if not type(model).bidirectional:
        return replace(
            model,
            vocab_size=tok.vocab_size,
            pad_token_id=tok.pad_token_id or 0,
            eos_token_id=separator_id(tok),
        )
    tokens = {
        "pad_token_id": "[PAD]",
        "unk_token_id": "[UNK]",
        "bos_token_id": "[BOS]",
        "eos_token_id": "[EOS]",
    }
    ids = {name: tok.token_to_id(token) for name, token in tokens.items()}
    missing = [name for name, i in ids.items() if i is None]
    if missing:
        raise DataError(f"the tokenizer has no {', '.join(missing)} ([PAD], [UNK], [BOS], [EOS] are needed)")
    return replace(model, vocab_size=min(vocab_size, tok.vocab_size), **ids)


def stream_batches(
    corpus: Corpus,
    documents,
    tok: Tokenizer,
    model,
    batch_size: int,
    bptt: int,
    source: str,
    table: np.ndarray | None = None,
):
    """The TBPTT segments of ``documents``: one stream, or a biLM's two (the text and the text reversed, each
    sentence between <S> and </S>, the tokens spelled: ``table``, data/characters.char_table)."""
    if not type(model).bidirectional:
        return StreamBatches(
            TokenStream(corpus, documents, separator_id(tok)), batch_size, bptt, source=source
        )
    stream = TokenStream(
        corpus, documents, separator_id(tok), sentence_markers=(model.bos_token_id, model.eos_token_id)
    )
    table = char_table(tok, model.max_characters_per_token) if table is None else table
    return BiStreamBatches(
        stream,
        batch_size,
        bptt,
        char_table=table,
        vocab_size=model.vocab_size,
        unk_token_id=model.unk_token_id,
        source=source,
    )


def separator_id(tok: Tokenizer) -> int:
    """The token that ends a document in the stream: [SEP] or </s> or [EOS], whichever the vocabulary has."""
    for name in ("sep_token_id", "eos_token_id"):
        value = getattr(tok, name, None)
        if value is not None:
            return int(value)
    raise DataError("the tokenizer has no [SEP] / [EOS] token to end documents with")


def prepared(
    files: list[Path],
    tok: Tokenizer,
    directory: Path,
    data: LMDataConfig,
    progress: bool,
    spaces: bool = False,
) -> Corpus:
    if not (directory / "corpus.json").is_file():
        prepare_corpus(
            files,
            tok,
            directory,
            documents=data.documents,
            shard_tokens=data.shard_tokens,
            skip_bad=data.skip_bad,
            progress=progress,
            spaces=spaces,
        )
    return Corpus(directory)


@torch.no_grad()
def evaluate_stream(
    model,
    batches: StreamBatches,
    device,
    max_tokens: int = 0,
    words: float | None = None,
    *,
    unscored_id: int | None = None,
) -> dict:
    """Perplexity of the model on a held-out stream read in order with the state carried over: per token
    and, when the stream's word count is known (``words`` per scored token), per word. A target equal to
    ``unscored_id`` is read as context but not scored (a text's own placeholder for unknown words)."""
    was_training = model.training
    model.eval()
    nll, n, state = 0.0, 0, None
    for [i] in batches.batches(0):
        batch = {k: v.to(device) for k, v in batches.collate([i]).items()}
        out = model(batch["input_ids"], state=state)
        state = out.state
        logits = out.logits.float()
        labels = batch["labels"]
        if unscored_id is not None:
            labels = labels.masked_fill(labels.eq(unscored_id), IGNORE_INDEX)
        nll += float(F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="sum"))
        n += int(labels.ne(IGNORE_INDEX).sum())
        if max_tokens and n >= max_tokens:
            break
    model.train(was_training)
    result = {"loss": nll / max(n, 1), "perplexity": math.exp(min(nll / max(n, 1), 50.0)), "tokens": n}
    if words:
        result["word_perplexity"] = math.exp(min(nll / max(n * words, 1e-9), 50.0))
    return result


@torch.no_grad()
def evaluate_windows(
    model,
    ids: torch.Tensor,
    unscored: torch.Tensor,
    window: int,
    device,
    words: float | None = None,
    batch_size: int = 16,
) -> dict:
    """Perplexity of a decoder-only model (GPT) on a long stream ``ids`` (N,): windows of ``window`` tokens
    sliding by half a window, each target scored once — in the first window every token after the first, in
    the next ones the second half, so that each scored token has at least half a window of context (a
    Transformer carries no state from one window to the next). A target where ``unscored`` (N,) is true is
    read as context but not scored."""
    was_training = model.training
    model.eval()
    stride = max(window // 2, 1)
    starts = [0, *range(stride, max(len(ids) - window, 0) + stride, stride)]
    starts = sorted({min(s, max(len(ids) - window, 0)) for s in starts})
    nll, n, scored_to = 0.0, 0, 0  # scored_to: the stream positions up to which targets are scored
    for b in range(0, len(starts), batch_size):
        rows = starts[b : b + batch_size]
        inputs = torch.stack([ids[s : s + window] for s in rows]).to(device)  # (B, W)
        logits = model(input_ids=inputs).logits[:, :-1].float()  # (B, W − 1, V): the next tokens
        for row, s in zip(logits, rows, strict=True):
            first = max(scored_to, s + 1)  # the first target of this window not scored yet
            targets = torch.arange(first, s + len(inputs[0]))
            if not len(targets):
                continue
            keep = ~unscored[targets]
            labels = ids[targets][keep].to(device)
            nll += float(F.cross_entropy(row[targets - s - 1][keep.to(device)], labels, reduction="sum"))
            n += int(keep.sum())
            scored_to = int(targets[-1]) + 1
    model.train(was_training)
    result = {"loss": nll / max(n, 1), "perplexity": math.exp(min(nll / max(n, 1), 50.0)), "tokens": n}
    if words:
        result["word_perplexity"] = math.exp(min(nll / max(n * words, 1e-9), 50.0))
    return result


def placeholder_targets(ids: np.ndarray, tok: Tokenizer, placeholder: str) -> tuple[np.ndarray, int]:
    """Where the pieces of ``placeholder`` stand in ``ids``, for a tokenizer without [UNK] (byte-level BPE
    spells any text): a boolean mask (N,) of the tokens of each occurrence, spelled after a space or not, and
    how many occurrences it found."""
    mask, found = np.zeros(len(ids), dtype=bool), 0
    spellings = {tuple(p) for p in tok.ids_batch([" " + placeholder, placeholder]) if p}
    for spelling in sorted(spellings, key=len, reverse=True):  # the spelling after a space may hold the other
        k = len(spelling)
        if k > len(ids):
            continue
        windows = np.lib.stride_tricks.sliding_window_view(ids, k)  # (N − k + 1, k)
        for start in np.flatnonzero((windows == np.asarray(spelling)).all(1)):
            if not mask[start + k - 1]:  # not already a longer spelling's end
                mask[start : start + k] = True
                found += 1
    return mask, found


@torch.no_grad()
def evaluate_bistream(model, batches: BiStreamBatches, device, max_tokens: int = 0) -> dict:
    """A biLM's held-out perplexities, each LM reading its stream in order with its state carried: forward,
    backward, and their mean (ELMo's "average of the forward and backward perplexities")."""
    was_training = model.training
    model.eval()
    nll, n, state = {"forward": 0.0, "backward": 0.0}, 0, None
    for [i] in batches.batches(0):
        batch = {k: v.to(device) for k, v in batches.collate([i]).items()}
        out = model(**batch, state=state)
        state = out.state
        for d, logits, labels in (
            ("forward", out.forward_logits, batch["labels"]),
            ("backward", out.backward_logits, batch["backward_labels"]),
        ):
            nll[d] += float(F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), reduction="sum"))
        n += batch["labels"].numel()
        if max_tokens and n >= max_tokens:
            break
    model.train(was_training)
    ppl = {d: math.exp(min(v / max(n, 1), 50.0)) for d, v in nll.items()}
    return {
        "loss": (nll["forward"] + nll["backward"]) / max(2 * n, 1),
        "forward_perplexity": ppl["forward"],
        "backward_perplexity": ppl["backward"],
        "perplexity": (ppl["forward"] + ppl["backward"]) / 2,
        "tokens": n,
    }


def words_per_token(tok: Tokenizer, files: list[Path], limit: int = 2_000_000) -> float:
    """Whitespace words per token on (the first ``limit`` characters of) ``files``: the factor that turns a
    per-token perplexity into a per-word one, exp(NLL / words)."""
    text = ""
    for f in files:
        text += f.read_text(encoding="utf-8", errors="replace")[: limit - len(text)]
        if len(text) >= limit:
            break
    ids = tok.ids_batch([line for line in text.splitlines() if line.strip()])
    tokens = sum(len(i) for i in ids)
    return len(text.split()) / max(tokens, 1)


def before_start(cfg: LMConfig, out_dir: Path) -> None:
    """What a run refuses before its directory is made: an ``out_dir`` among its text files and folders, a
    model larger than the machine's memory; with ``init``, a new vocabulary's or model's settings."""
    check_out_dir(out_dir, (*cfg.data.files, *cfg.data.valid_files, cfg.data.tokenizer, cfg.init))
    if cfg.init:
        new = LMDataConfig()
        for key in ("tokenizer", "tokenizer_kind", "vocab_size", "input_words", "lowercase"):
            if getattr(cfg.data, key) != getattr(new, key):
                raise ConfigError(
                    f"data.{key}: --init continues the checkpoint with its own vocabulary; a new "
                    "vocabulary's settings cannot be given with it"
                )
        if cfg.model != RNNLMConfig():
            raise ConfigError(
                "model: --init continues the checkpoint's own model; the model section is unread"
            )
        init_model(cfg.init)
    else:
        check_model_fits(lambda: registry.build_model(cfg.model), cfg.model, cfg.train.optimizer)


def init_model(path: str) -> tuple[torch.nn.Module, Tokenizer]:
    """The language model (train mode) and tokenizer of a checkpoint of this recipe, to continue: an LSTM LM,
    or an ELMo biLM with its softmax (``pretraining``); another family is a one-line error."""
    family = registry.family_at(path)
    if not family.stream_lm:
        other = (
            "pretrain --init" if family.huggingface and family.kind != "encoder-decoder" else "no LM recipe"
        )
        raise CheckpointError(
            f"--init {path}: a {family.model_type} checkpoint, not a language model of train-lm ({other})"
        )
    model, tok = registry.load(path, head="pretraining" if "pretraining" in family.heads else "causal_lm")
    if tok is None:
        raise CheckpointError(f"--init {path}: no tokenizer in the checkpoint")
    return model.train(), tok


@ckpt.holds_run_dir(check=before_start)
def train_lm(cfg: LMConfig, out_dir: str | Path, *, resume: bool = False, progress_bar: bool = True) -> dict:
    """Train; returns a results row (parameters, steps, tokens/s, held-out perplexity per token and word)."""
    out_dir = Path(out_dir)
    if not resume:
        ckpt.check_fresh_run_dir(out_dir)
    files = text_files(cfg.data.files, "data.files")
    if not files:
        raise DataError("data.files: no text files to train on")
    valid_files = text_files(cfg.data.valid_files, "data.valid_files")
    dist, device = setup(cfg.train.device)
    seed_everything(cfg.train.seed)
    # 1. the tokenizer, kept with the run (with init: the checkpoint's, and its model)
    tok_dir = out_dir / "tokenizer"
    start, tok = init_model(cfg.init) if cfg.init else (None, None)
    if tok is None:
        tok = (
            Tokenizer.load(tok_dir)
            if (tok_dir / "tokenizer.json").is_file()
            else build_tokenizer(cfg.data, files, cfg.model)
        )
    tok.save(tok_dir)
    if start is not None:
        model_cfg = start.config
    else:
        model_cfg = model_config(cfg.model, tok, vocabulary(cfg.data, cfg.model)[1])
    # 2. the corpus, tokenized once, and the held-out part
    corpus = prepared(files, tok, out_dir / "corpus", cfg.data, progress_bar)
    if valid_files:
        valid_corpus = prepared(valid_files, tok, out_dir / "valid-corpus", cfg.data, progress_bar)
        train_docs, valid_docs = np.arange(corpus.num_documents), np.arange(valid_corpus.num_documents)
    else:
        valid_corpus = corpus
        order = shuffled(corpus.num_documents, np.random.default_rng(cfg.train.seed))
        n_valid = int(round(cfg.data.valid_fraction * corpus.num_documents))
        if n_valid < 1 or corpus.num_documents - n_valid < 1:
            raise DataError(
                f"{', '.join(cfg.data.files)}: {corpus.num_documents} document(s), no held-out part with "
                f"data.valid_fraction={cfg.data.valid_fraction}; give data.valid_files or more documents"
            )
        valid_docs, train_docs = np.sort(order[:n_valid]), np.sort(order[n_valid:])
    bilm = type(model_cfg).bidirectional
    table = char_table(tok, model_cfg.max_characters_per_token) if bilm else None  # each word spelled
    train = stream_batches(
        corpus, train_docs, tok, model_cfg, cfg.data.batch_size, cfg.data.bptt, "data.files", table
    )
    valid = stream_batches(
        valid_corpus,
        valid_docs,
        tok,
        model_cfg,
        min(cfg.data.batch_size, 8),
        cfg.data.bptt,
        "the held-out text",
        table,
    )
    words = None if bilm else words_per_token(tok, valid_files or [files[0]])
    # 3. the model: a biLM with its softmax (the "pretraining" head), or the LM itself
    family = registry.family_of(model_cfg)
    seed_everything(cfg.train.seed)
    model = (
        start
        if start is not None
        else family.make(model_cfg, family.architecture_for("pretraining") if bilm else None)
    )
    torch.manual_seed(cfg.train.seed + dist.rank)
    # 4. truncated BPTT: the state after segment i starts segment i + 1 (reset at each epoch's first segment)
    carried: dict = {"state": None}
    latest = ckpt.latest_checkpoint(out_dir) if resume else None
    if latest is not None and (latest / "lm_state.safetensors").is_file():
        saved = load_file(str(latest / "lm_state.safetensors"))
        carried["state"] = (saved["h"], saved["c"]) if "c" in saved else saved["h"]

    def collate(indices: list[int]) -> dict:
        batch = train.collate(indices)
        batch["segment"] = torch.tensor(indices[0])
        return batch

    def loss_fn(m, batch) -> torch.Tensor:
        state = None if int(batch["segment"]) == 0 else carried["state"]
        out = m(**{k: v for k, v in batch.items() if k != "segment"}, state=state)
        carried["state"] = detach(out.state)
        return out.loss

    def evaluate(m) -> dict:
        if bilm:
            return evaluate_bistream(m, valid, device, cfg.data.max_valid_tokens)
        return evaluate_stream(m, valid, device, cfg.data.max_valid_tokens, words)

    def count_tokens(batch) -> int:  # the tokens predicted: a biLM predicts each token of text twice
        return sum(int(batch[k].ne(IGNORE_INDEX).sum()) for k in ("labels", "backward_labels") if k in batch)

    def write_extra(directory: Path) -> None:
        tok.save(directory)
        if cfg.init:  # the checkpoint's own tokenizer files, as they are
            copy_tokenizer_files(checkpoint_dir(cfg.init), directory)
        write_run_config(directory, cfg)
        state = carried["state"]
        if state is not None:  # the state the next segment starts from, for an exact resume
            tensors = {"h": state[0], "c": state[1]} if isinstance(state, tuple) else {"h": state}
            save_tensors(
                {k: v.detach().cpu().contiguous() for k, v in tensors.items()},
                str(directory / "lm_state.safetensors"),
            )

    trainer = Trainer(
        model,
        cfg.train,
        plan=train,
        collate=collate,
        out_dir=out_dir,
        evaluate=evaluate,
        write_extra=write_extra,
        loss_fn=loss_fn,
        count_tokens=count_tokens,
        device=device,
        dist=dist,
        progress_bar=progress_bar,
        save_model=lambda m, d: write_hf_files(family, m, d),
        load_model=lambda m, d: load_hf_weights(family, m, d),
        plot_curves=plot_training_curves,
    )
    log.info(
        "%s: %s parameters; %s training tokens, %s held-out",
        model_cfg.describe(),
        f"{count_parameters(model):,}",
        f"{train.tokens():,}",
        f"{valid.tokens():,}",
    )
    before = held_out_before(trainer, evaluate, out_dir, resume, dist.is_main) if cfg.init else {}
    result = trainer.fit(resume=resume)
    row = {
        "model": model_cfg.describe(),
        **({"init": str(checkpoint_dir(cfg.init))} if cfg.init else {}),
        "params": count_parameters(model),
        **trained(result),
        **{f"valid_before_{k}": v for k, v in before.items()},
        **{f"valid_{k}": v for k, v in result.progress.last_eval.items()},
        "run_dir": str(out_dir),
    }
    if dist.is_main:
        write_results(out_dir, row)
    cleanup()
    return row


def evaluate_lm(
    checkpoint: str | Path,
    files: list[str],
    *,
    bptt: int = 128,
    device: str = "cpu",
    max_unknown: float = 0.2,
    unk_token: str | None = None,
    bits: int | None = None,
) -> dict:
    """Perplexity of a language-model checkpoint (a run or its best/) on other text, with the checkpoint's
    own vocabulary: per token, and per whitespace word of the text (what a word-level result is compared
    with). A word the vocabulary lacks is spelled with the pieces it has (a subword vocabulary has no
    out-of-vocabulary words; a character it has never seen is [UNK]); with a word vocabulary it becomes
    [UNK], which the model predicts like any other token: say so when comparing. A text of which more than
    ``max_unknown`` of the tokens are [UNK] is not covered by the vocabulary, and its perplexity would mostly
    score [UNK]: an error.

    ``unk_token``: the text's own placeholder for the words its makers removed (WikiText's ``<unk>``): each
    whitespace word equal to it is read as the model's [UNK] and not counted as a word, and no [UNK] target is
    scored — the placeholder's nor any other (those are counted in ``unk_tokens``): a model trained on other
    text cannot be asked to predict a placeholder (spelled out, ``<unk>`` would cost three pieces of a string
    it has never seen). Without it every token is scored. A tokenizer without [UNK] (GPT-2's byte-level BPE)
    spells the placeholder: its pieces are read as context and not scored.

    A recurrent model reads the text as one stream of ``bptt``-token segments, its state carried across; a GPT
    (pretrained on blocks of its text) reads windows of ``bptt`` tokens sliding by half a window, each token
    scored once with at least half a window of context (``evaluate_windows``).

    ``bits`` 8 or 4: the model's int8 / int4 twin (models/weight_only.py; fp32 between the layers, and each
    token's inputs to the int8 layers int8 where the CPU has VNNI/AMX), what decoding with ``--int8`` /
    ``--int4`` reads — the perplexity it costs."""
    import tempfile

    model, tok = registry.load(checkpoint, head="causal_lm", device=device)
    if bits is not None:
        model = weight_only_int8(model, torch.float32, bits)
    if tok is None:
        raise DataError(f"{checkpoint}: no tokenizer in the checkpoint")
    paths = text_files(files, "files")
    if not paths:
        raise DataError("evaluate-lm: no text files")
    unk = getattr(tok, "unk_token_id", None)
    if unk is not None and unk == separator_id(tok):  # GPT-2's "unknown" is its end of text: no [UNK] at all
        unk = None
    decoder = getattr(model.config, "is_decoder", None)  # BERT's: pretrained left to right (LTR) or not
    if decoder is False:
        raise DataError(f"{checkpoint}: a bidirectional BERT (is_decoder false) is no left-to-right LM")
    causal = decoder or registry.family_of(model).pretraining_objective == "causal_lm"  # GPT: as pretrained
    if unk_token is not None and (not unk_token.strip() or len(unk_token.split()) > 1):
        raise DataError(f"unk_token: expected one word; got {unk_token!r}")
    with tempfile.TemporaryDirectory() as tmp:
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in paths]
        words = sum(len(t.split()) for t in texts)
        placeholders = 0
        if unk_token is not None:
            pattern = re.compile(rf"(?<!\S){re.escape(unk_token)}(?!\S)")
            placeholders = sum(len(pattern.findall(t)) for t in texts)
        if (
            unk_token is not None and unk is not None
        ):  # the placeholder becomes the tokenizer's [UNK], one token
            paths = [Path(tmp) / f"{i}.txt" for i in range(len(texts))]
            for path, text in zip(paths, texts, strict=True):
                path.write_text(pattern.sub(tok.id_to_token(unk), text), encoding="utf-8")
        data = LMDataConfig(documents="file")
        corpus = prepared(paths, tok, Path(tmp) / "corpus", data, progress=False, spaces=causal)
        stream = TokenStream(corpus, np.arange(corpus.num_documents), separator_id(tok))
        batches = StreamBatches(stream, 1, bptt, source=", ".join(files))
        ids = stream.read(0, len(stream))
        unknown = 0 if unk is None else int((ids == unk).sum())
        if unk_token is None:
            unscored = np.zeros(len(ids), dtype=bool)
        else:  # [UNK] targets; without [UNK] (byte-level BPE) the placeholder's own pieces
            unscored, found = (
                (ids == unk, placeholders) if unk is not None else placeholder_targets(ids, tok, unk_token)
            )
            if found != placeholders:
                log.warning(
                    "%s: %d of the %d %s placeholders found among the tokens (the rest are scored)",
                    ", ".join(files),
                    found,
                    placeholders,
                    unk_token,
                )
        scored = len(stream) - 1 - int(unscored[1:].sum())
        per_token = (words - placeholders) / max(scored, 1)
        if causal:  # a Transformer carries no state: sliding windows of bptt tokens
            window = min(bptt, max_input_length(model.config, bptt))
            result = evaluate_windows(
                model,
                torch.from_numpy(ids.astype(np.int64)),
                torch.from_numpy(unscored),
                window,
                torch.device(device),
                per_token,
            )
        else:
            result = evaluate_stream(
                model,
                batches,
                torch.device(device),
                0,
                per_token,
                unscored_id=unk if unk_token is not None else None,
            )
        corpus.close()
        if unknown - placeholders > max_unknown * len(stream):
            raise DataError(
                f"{', '.join(files)}: the vocabulary of {checkpoint} does not cover this text: {unknown:,} of "
                f"its {len(stream):,} tokens are [UNK] (more than {max_unknown:.0%}; --max-unknown sets the limit)"
            )
    return {
        "checkpoint": str(checkpoint),
        "words": words - placeholders,
        **result,
        "unk_tokens": unknown - (placeholders if unk is not None else 0),
        "unscored_words": placeholders,
    }
