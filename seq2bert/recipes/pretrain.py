"""Recipe: pretrain a model from raw text — BERT with masked LM + next-sentence prediction (Devlin et al. 2018),
GPT / GPT-2 with the causal LM (Radford et al. 2018, 2019), ELECTRA with replaced token detection (Clark et
al. 2020), or XLNet with the permutation LM (Yang et al. 2019). One path: ``model.model_type`` picks the family, and the family its objective
(``Family.pretraining_objective``, models/registry.py).

Read top to bottom:
1. the tokenizer: a given vocab.txt / tokenizer.json / vocab.json + merges.txt, or one trained on the text, of
   the family's kind (an uncased WordPiece vocabulary for BERT, GPT-2's byte-level BPE, GPT-1's lower-cased
   BPE; RoBERTa's byte-level BPE and ALBERT's SentencePiece unigram with their specials:
   Family.train_tokenizer); a causal LM's vocabulary gets an end-of-text token if it has none;
2. the corpus: tokenized once into shards of token arrays on disk (seq2bert/data/pretraining.py), reused on
   resume — for the causal LM with the whitespace between sentences kept, so that its tokens decode to the text;
   on a byte-level BPE (RoBERTa) with the space before each sentence, as fine-tuning text has it (the data
   section, the masking and the corpus's spaces: recipes/pretrain_data.py);
3. documents split into training and held-out ones; then, by objective:
   masked_lm  instances of the sentence task (data.sentence_task: BERT's NSP pairs, ALBERT's sentence-order
              pairs, or single segments without one: SpanBERT's and RoBERTa's DOC-SENTENCES within a document,
              RoBERTa's FULL-SENTENCES across documents; by default the family's, Family.pretraining_data) and
              masks of the strategy (data.masking_strategy: token, whole_word, span, ngram, knowledge) drawn per
              epoch, or once for dupe_factor passes (data.masking: static, dynamic; auto the family's); loss = MLM + NSP / SOP (the MLM head only at masked positions); held-out MLM loss /
              accuracy and NSP / SOP loss / accuracy;
   causal_lm  (also BERT with model.is_decoder: the paper's "LTR & No NSP" ablation, BertLMHeadModel)
              the documents as one stream, each followed by the end-of-text token, cut into contiguous blocks
              of data.max_seq_length tokens read in a random order (data/lm.py: "randomly sampled, contiguous
              sequences", GPT-1 Sect. 4.1); loss = L_1 (Eq. 1); held-out perplexity per token and per word; at
              the end, greedy and sampled continuations of fixed prompts (``samples``) in the log and results.json;
   replaced_token_detection  the masked LM's instances (single segments: ELECTRA's sentence task is none), a
              generator's samples in the masked positions and a discriminator over every position
              (recipes/pretrain_electra.py, the ``electra`` section); loss = L_MLM + λ L_Disc;
   permutation_lm  XLNet's: the stream in blocks as causal_lm's, each framed A <sep> B <sep> <cls>, about 1/K of
              its tokens predicted in a random factorisation order by the two-stream attention
              (recipes/pretrain_permutation.py, the ``permutation`` section); loss = Eq. 5's NLL; held-out
              accuracy and perplexity of the predicted tokens;
With ``init.checkpoint`` (``--init DIR``) the run continues a checkpoint's own objective on the new text with
its own tokenizer, in place of steps 1 and 4's new vocabulary and model (recipes/pretrain_init.py): the held-out
loss of the checkpoint as given (``valid_before_*``) and at the end in results.json. Held-out text is
data.valid_files (``--valid FILE``) when given, else data.valid_fraction of the documents; data.text_column
(``--text-column``) reads a column of a .tsv / .csv (each row a document) or of a CoNLL file.

4. every checkpoint is a Hugging Face directory (BertForPreTraining, GPT2LMHeadModel, …: config.json,
   model.safetensors, the tokenizer's files) plus the trainer state, so transformers' ``from_pretrained``
   reads it and ``seq2bert pretrain … --resume`` continues a killed run exactly.

    seq2bert pretrain ../shared/data/corpus --out runs/bert-mini --set train.max_minutes=55
    seq2bert pretrain ../shared/data/corpus --out runs/gpt2-mini --set model.model_type=gpt2
    seq2bert pretrain ../shared/data/corpus --out runs/xlnet-mini --set model.model_type=xlnet
    seq2bert pretrain ../shared/data/sst2/train.tsv --text-column sentence --init MODEL_DIR --out runs/tapt
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seq2bert.data.lm import Blocks, TokenStream
from seq2bert.data.pretraining import Corpus, PretrainingData
from seq2bert.data.text_columns import check_column
from seq2bert.data.tokenization import KINDS as TOKENIZER_KINDS
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import ConfigError, DataError
from seq2bert.models import registry
from seq2bert.models.family import Family, PretrainingTerms, max_input_length, next_sentence_terms
from seq2bert.models.pretrained import load_hf_weights, write_hf_files, write_tokenizer
from seq2bert.nn.embeddings import init_sinusoidal_
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.recipes import pretrain_electra, pretrain_init, pretrain_permutation
from seq2bert.recipes.pretrain_causal import (
    SampleConfig,
    continuations,
    evaluate_causal_lm,
    left_to_right,
    words_per_token,
)
from seq2bert.recipes.pretrain_data import (
    PretrainDataConfig,
    build_tokenizer,
    corpus_sentences,
    family_data,
    file_stamp,
    held_out,
    held_out_corpus,
    inputs_of,
    masking_config,
    prepared_from,
    tokenized_corpus,
    with_end_of_text,
)
from seq2bert.recipes.pretrain_electra import ElectraSettings
from seq2bert.recipes.pretrain_init import Start
from seq2bert.recipes.pretrain_permutation import PermutationSettings
from seq2bert.training import checkpoint as ckpt
from seq2bert.training.config import TrainConfig
from seq2bert.training.distributed import DistInfo, cleanup, setup
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
class InitConfig:
    """How the weights start where a choice is left: ``positions`` "normal" (the family's own start: BERT's
    learned positions N(0, 0.02²)) or "sinusoidal" (the same learned table started from Vaswani's sinusoids
    at that scale, nn/embeddings.py init_sinusoidal_). Measured on the books with BERT-mini (`python
    docs/objectives.py --positions CHECKPOINT…`): from a random table, MLM + NSP left neighbouring positions
    unrelated (cosine ~0.05) for 8,500 steps and predicted from a bag of words; LTR, whose mask orders the
    positions, had them alike (0.8) by step 3,000. Started sinusoidal, MLM wore the order down (0.37 by
    step 1,000) without leaving its plateau sooner."""

    positions: str = "normal"
    # a checkpoint (or run) directory whose pretraining continues: its objective, tokenizer and model, the
    # model section unread (recipes/pretrain_init.py; `seq2bert pretrain FILES --init DIR`)
    checkpoint: str = ""

    def validate(self) -> None:
        if self.positions not in ("normal", "sinusoidal"):
            raise ConfigError(f"init.positions: normal or sinusoidal, got {self.positions!r}")

    def __post_init__(self) -> None:
        self.validate()

    def apply(self, model: nn.Module, std: float) -> None:
        if self.positions == "sinusoidal":
            tables = [getattr(m, "position_embeddings", None) for m in model.modules()]
            tables = [t for t in tables if isinstance(t, nn.Embedding)]
            if not tables:
                raise ConfigError(
                    f"init.positions=sinusoidal: {type(model).__name__} has no learned position "
                    "table (position_embeddings) to start; leave init.positions=normal"
                )
            for table in tables:
                init_sinusoidal_(table, std)


# the model section: the config of any registered family with a "pretraining" head (a plugin's too), chosen by
# its model_type when the configuration is read; BERT-mini by default, and each model at its family's "mini"
# size (Family.presets: BERT-mini's 4 layers, 256 units, 4 heads) when model.model_type switches to it
PretrainModelConfig = registry.model_section(
    lambda f: "pretraining" in f.heads, default="bert", preset="mini"
)


def bert_mini() -> Any:
    return registry.get("bert").presets["mini"]()


@dataclass
class PretrainConfig:
    model: PretrainModelConfig = field(default_factory=bert_mini)
    data: PretrainDataConfig = field(default_factory=PretrainDataConfig)
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            lr=1e-4,
            weight_decay=0.01,
            schedule="linear",
            warmup_steps=1000,
            max_epochs=1,
            metric="main",  # the objective's: MLM accuracy (BERT), perplexity (GPT), disc_loss (ELECTRA)
        )
    )
    samples: SampleConfig = field(default_factory=SampleConfig)
    electra: ElectraSettings = field(default_factory=ElectraSettings)  # replaced token detection's pair
    permutation: PermutationSettings = field(default_factory=PermutationSettings)  # the permutation LM's K
    init: InitConfig = field(default_factory=InitConfig)


@dataclass
class Objective:
    """What a pretraining objective gives the run: its batches (``plan.batches(epoch)``, ``plan.collate``), the
    loss of a batch, the held-out evaluation, and the metric that picks the best checkpoint ("main"); when the
    objective trains the family's ``pretrainer`` rather than its "pretraining" head, that module's options and
    how its checkpoints are written and read (None: the head's Hugging Face directory)."""

    plan: Any
    loss: Callable[[nn.Module, dict], torch.Tensor]
    evaluate: Callable[[nn.Module], dict]
    metric: str
    higher_is_better: bool = True
    pretrainer_options: dict | None = None  # None: the "pretraining" head is the model
    save_model: Callable[[nn.Module, Path], None] | None = None
    load_model: Callable[[nn.Module, Path], None] | None = None
    begin_step: Callable[[nn.Module, int], None] | None = None  # called before each training step


@torch.no_grad()
def evaluate_pretraining(
    model,
    data: PretrainingData,
    indices: list[int],
    device,
    options: dict | None = None,
    terms: Callable[[Any], PretrainingTerms] = next_sentence_terms,
) -> dict:
    """MLM loss and accuracy over the held-out masked tokens, NSP (or SOP: ``data.sentence_task``) loss and
    accuracy over the held-out pairs, SpanBERT's SBO loss over the span tokens; ``loss`` is their sum, the
    training objective (MLM alone without a sentence task). ``options``: the family's pretraining forward
    options; ``terms``: where its output keeps each loss (Family.pretraining_terms)."""
    mlm_loss = nsp_loss = correct = total = nsp_correct = pairs = sbo_loss = 0.0
    for start in range(0, len(indices), data.batch_size):
        batch = {k: v.to(device) for k, v in data.collate(indices[start : start + data.batch_size]).items()}
        out = terms(model(**batch, **(options or {})))
        targets = batch["labels"][batch["labels"].ne(IGNORE_INDEX)]
        n = targets.numel()
        mlm_loss += float(out.mlm_loss) * n
        if out.span_loss is not None:  # SpanBERT: the same tokens predicted from their spans
            sbo_loss += float(out.span_loss) * n
        logits = out.mlm_logits  # (N, V) at the labelled positions, or (B, T, V)
        if logits.dim() == 3:
            logits = logits[batch["labels"].ne(IGNORE_INDEX)]
        correct += float((logits.argmax(-1) == targets).sum())
        total += n
        if data.label_key in batch:
            label = batch[data.label_key]  # NSP's, or SOP's (ALBERT)
            nsp_correct += float((out.sentence_logits.argmax(-1) == label).sum())
            nsp_loss += float(out.sentence_loss) * label.numel()
            pairs += label.numel()
    result = {"mlm_loss": mlm_loss / max(total, 1), "mlm_accuracy": 100.0 * correct / max(total, 1)}
    if data.span_boundaries:
        result["sbo_loss"] = sbo_loss / max(total, 1)
    if data.sentence_task in ("nsp", "sop"):
        task = data.sentence_task
        result |= {
            f"{task}_loss": nsp_loss / max(pairs, 1),
            f"{task}_accuracy": 100.0 * nsp_correct / max(pairs, 1),
        }
    sentence_loss = result.get(f"{data.sentence_task}_loss", 0.0)
    return {**result, "loss": result["mlm_loss"] + sentence_loss + result.get("sbo_loss", 0.0)}


def sentence_task(family: Family, setting: str) -> tuple[str, str, bool]:
    """The masked LM's sentence task for data.sentence_task = ``setting`` (auto: the family's — NSP for BERT,
    SOP for ALBERT, none for ELECTRA and SpanBERT), the model's name for its labels, and whether the batches
    carry span boundaries (a pretraining model that reads them: SpanBERT's SBO, Family.span_boundaries)."""
    pairs = family.sentence_pairs
    task = (
        setting
        if setting != "auto"
        else {"next_sentence": "nsp", "sentence_order": "sop", "none": "none"}[pairs]
    )
    label_key = "sentence_order_label" if pairs == "sentence_order" else "next_sentence_label"
    sbo = family.span_boundaries
    if task == "full_sentences" and (sbo or family.pretraining_objective == "replaced_token_detection"):
        raise ConfigError(
            f"data.sentence_task: full_sentences is RoBERTa's packing; {family.model_type} trains "
            "on one document's sentences (none)"
        )
    return task, label_key, sbo


def masked_instances(
    cfg: PretrainConfig,
    corpus: Corpus,
    train_docs,
    valid_docs,
    tok: Tokenizer,
    dist: DistInfo,
    sentence_task: str,
    label_key: str,
    span_boundaries: bool = False,
    valid_corpus: Corpus | None = None,
) -> tuple[PretrainingData, PretrainingData, list[int]]:
    """Instances of ``sentence_task`` with masked tokens, drawn per pass (``label_key``: the model's name for
    the pair labels; ``span_boundaries``: the batches carry each masked token's span boundaries, for
    SpanBERT's SBO): the training ones, the held-out ones (of ``valid_corpus``, data.valid_files, when given)
    and the held-out instances scored."""
    sentences = corpus_sentences(corpus, train_docs) if cfg.data.phrase_ngrams else []
    masking = masking_config(cfg.data, tok, sentences)
    masking_kind = cfg.data.masking if cfg.data.masking != "auto" else "static"
    common = dict(
        short_seq_prob=cfg.data.short_seq_prob,
        masking=masking_kind,
        dupe_factor=cfg.data.dupe_factor,
        sentence_task=sentence_task,
        label_key=label_key,
        span_boundaries=span_boundaries,
    )
    train = PretrainingData(
        corpus,
        train_docs,
        masking,
        batch_size=cfg.data.batch_size,
        seed=cfg.train.seed,
        rank=dist.rank,
        world=dist.world_size,
        **common,
    )
    if not len(train.table(0)):
        raise DataError(
            f"{', '.join(cfg.data.files)}: no training instances of data.sentence_task={sentence_task} "
            f"in {len(train_docs)} documents"
        )
    valid = PretrainingData(
        valid_corpus or corpus,
        valid_docs,
        masking,
        batch_size=cfg.data.batch_size,
        seed=cfg.train.seed + 1,
        shuffle=False,
        **common,
    )
    indices = [i for b in valid.batches(0) for i in b][: cfg.data.max_valid_instances]
    return train, valid, indices


def masked_lm(
    train: PretrainingData,
    valid: PretrainingData,
    indices: list[int],
    device,
    family: Family,
    start: Start | None = None,
) -> Objective:
    """BERT's objective and its variants': MLM + the instances' sentence task (the family's forward options
    and where its output keeps each loss: Family.pretraining_options, pretraining_terms; of a continued
    checkpoint's masked LM, ``start``'s)."""
    options = (
        family.pretraining_options if start is None else start.forward_options(family.pretraining_options)
    )
    terms = family.pretraining_terms if start is None else start.terms()
    return Objective(
        plan=train,
        loss=lambda m, batch: m(**batch, **options).loss,
        evaluate=lambda m: evaluate_pretraining(m, valid, indices, device, options, terms),
        metric="mlm_accuracy",
    )


def causal_lm(
    cfg: PretrainConfig,
    corpus: Corpus,
    train_docs,
    valid_docs,
    tok: Tokenizer,
    dist: DistInfo,
    device,
    valid_corpus: Corpus | None = None,
) -> Objective:
    """GPT's objective: contiguous blocks of the documents' stream, each document followed by its end of text
    (held out: ``valid_docs`` of ``valid_corpus``, data.valid_files, when given)."""
    L, B, eot = cfg.data.max_seq_length, cfg.data.batch_size, tok.eos_token_id
    train = Blocks(
        TokenStream(corpus, train_docs, eot),
        L,
        B,
        seed=cfg.train.seed,
        rank=dist.rank,
        world=dist.world_size,
        source="the training documents",
    )
    valid = Blocks(
        TokenStream(valid_corpus or corpus, valid_docs, eot),
        L,
        B,
        shuffle=False,
        source="the held-out documents",
    )
    indices = list(range(min(len(valid), cfg.data.max_valid_instances)))
    words = words_per_token(tok, valid.stream, len(indices) * L)
    return Objective(
        plan=train,
        loss=lambda m, batch: m(**batch, loss_only=True).loss,  # the LM head fused with its loss
        evaluate=lambda m: evaluate_causal_lm(m, valid, indices, device, words),
        metric="perplexity",
        higher_is_better=False,
    )


def permutation_lm(
    cfg: PretrainConfig,
    corpus: Corpus,
    train_docs,
    valid_docs,
    tok: Tokenizer,
    dist: DistInfo,
    device,
    valid_corpus: Corpus | None = None,
) -> Objective:
    """XLNet's objective (recipes/pretrain_permutation.py): framed blocks of the documents' stream, about 1/K
    of each block predicted (held out: ``valid_docs`` of ``valid_corpus``, data.valid_files, when given)."""
    L, B, k = cfg.data.max_seq_length, cfg.data.batch_size, cfg.permutation.k
    train = pretrain_permutation.blocks(
        corpus,
        train_docs,
        tok,
        L,
        B,
        k,
        seed=cfg.train.seed,
        rank=dist.rank,
        world=dist.world_size,
        source="the training documents",
    )
    valid = pretrain_permutation.blocks(
        valid_corpus or corpus,
        valid_docs,
        tok,
        L,
        B,
        k,
        seed=cfg.train.seed + 1,
        shuffle=False,
        source="the held-out documents",
    )
    indices = list(range(min(len(valid), cfg.data.max_valid_instances)))
    return Objective(
        plan=train,
        loss=pretrain_permutation.loss,
        evaluate=lambda m: pretrain_permutation.evaluate(m, valid, indices, device),
        metric=pretrain_permutation.METRIC,
    )


def replaced_token_detection(
    cfg: PretrainConfig,
    train: PretrainingData,
    valid: PretrainingData,
    indices: list[int],
    device,
    family,
    tok: Tokenizer,
) -> Objective:
    """ELECTRA's objective (recipes/pretrain_electra.py) on the masked instances."""
    s = cfg.electra
    return Objective(
        plan=train,
        loss=pretrain_electra.loss,
        evaluate=lambda m: pretrain_electra.evaluate(
            m, valid, indices, device, s.disc_weight, cfg.train.seed + 2
        ),
        metric=pretrain_electra.METRIC,
        higher_is_better=False,
        pretrainer_options=dict(
            generator_size=s.generator_size,
            disc_weight=s.disc_weight,
            balanced=s.balanced,
            tie_weights=s.tie_weights,
            two_stage_steps=s.two_stage_steps,
        ),
        save_model=partial(pretrain_electra.save_pair, family, tok),
        load_model=partial(pretrain_electra.load_pair, family),
        begin_step=pretrain_electra.begin_step if s.two_stage_steps else None,
    )


def before_start(cfg: PretrainConfig, out_dir: Path) -> None:
    """What a run refuses before its directory is made: an ``out_dir`` among its text files and folders, a
    model larger than the machine's memory; with init.checkpoint, the settings it cannot be given with."""
    d = cfg.data
    check_out_dir(
        out_dir, (*d.files, *d.valid_files, d.tokenizer, d.phrases, d.entities, cfg.init.checkpoint)
    )
    if d.text_column:  # each file has the column (a table's header names it)
        for path in (*d.text_files(), *d.held_out_files()):
            check_column(path, d.text_column)
    if cfg.init.checkpoint:
        pretrain_init.check_settings(cfg, bert_mini())
        start = pretrain_init.open_checkpoint(cfg.init.checkpoint)
        check_model_fits(lambda: registry.build_model(start.config), start.config, cfg.train.optimizer)
    else:
        check_model_fits(lambda: registry.build_model(cfg.model), cfg.model, cfg.train.optimizer)


@ckpt.holds_run_dir(check=before_start)
def pretrain(
    cfg: PretrainConfig, out_dir: str | Path, *, resume: bool = False, progress_bar: bool = True
) -> dict:
    """Pretrain; returns a results row (parameters, steps, tokens/s, the objective's held-out metrics; for a
    causal LM also ``samples``). With init.checkpoint, continue that checkpoint's pretraining
    (recipes/pretrain_init.py): the row also has the held-out metrics of the checkpoint as given,
    ``valid_before_*``."""
    out_dir = Path(out_dir)
    if not resume:
        ckpt.check_fresh_run_dir(out_dir)
    files = cfg.data.text_files()
    start = pretrain_init.open_checkpoint(cfg.init.checkpoint) if cfg.init.checkpoint else None
    if start is None:
        family = registry.family_of(cfg.model)  # the builder, checkpoint layout and objective of the model
        lm_head = left_to_right(family, cfg.model, cfg.data.sentence_task)  # a causal LM's, or None
        objective_kind = "causal_lm" if lm_head else family.pretraining_objective
    else:  # the checkpoint's own family, head and objective
        family, lm_head, objective_kind = start.family, start.head, start.objective
        cfg = replace(cfg, data=pretrain_init.data_settings(start, cfg.data))
        if objective_kind == "replaced_token_detection":  # ELECTRA's pair at its generator's own width
            size = pretrain_electra.generator_size_of(start.path, start.config)
            cfg = replace(cfg, electra=replace(cfg.electra, generator_size=size))
    cfg = replace(cfg, data=family_data(cfg.data, family.pretraining_data))  # its defaults for "auto"
    causal = objective_kind == "causal_lm"
    stream = causal or objective_kind == "permutation_lm"  # blocks of the documents' stream
    if objective_kind == "replaced_token_detection" and cfg.train.average_last > 1:
        raise ConfigError(
            "train.average_last: ELECTRA's pair is not averaged (model.safetensors is one network)"
        )
    if not stream:
        task, label_key, sbo = sentence_task(family, cfg.data.sentence_task)
    model_section = cfg.model if start is None else start.config
    positions = max_input_length(model_section)
    if positions is not None and cfg.data.max_seq_length > positions:
        raise ConfigError(
            f"data.max_seq_length: {cfg.data.max_seq_length} is longer than the model's {positions} positions"
        )
    dist, device = setup(cfg.train.device)
    seed_everything(cfg.train.seed)
    # what the tokenizer and corpus below are made from: one left by another attempt is made again
    if start is not None:
        tokenizer_source = start.source()
    elif cfg.data.tokenizer:
        tokenizer_source = {"file": file_stamp(Path(cfg.data.tokenizer))}
    else:
        tokenizer_source = {
            "trained": family.model_type,
            "vocab_size": cfg.data.vocab_size,
            "lowercase": cfg.data.lowercase,
        }
    prepared_from(out_dir, inputs_of(files, cfg.data, tokenizer_source, causal), resume, dist)
    # 1. the tokenizer (kept with the run: a resumed run must see the same ids)
    tok_dir = out_dir / "tokenizer"
    if start is not None:  # the checkpoint's own: no new vocabulary
        tok = start.tokenizer
    elif (tok_dir / "tokenizer.json").is_file():
        tok = Tokenizer.load(tok_dir)
    elif (
        family.train_tokenizer is not None and not cfg.data.tokenizer
    ):  # the family's own (RoBERTa's, ALBERT's)
        log.info(
            "training a %s vocabulary of %d on %d files", family.model_type, cfg.data.vocab_size, len(files)
        )
        tok = family.train_tokenizer(files, cfg.data.vocab_size)
    else:
        tok = build_tokenizer(
            cfg.data, files, family.tokenizer if family.tokenizer in TOKENIZER_KINDS else "wordpiece"
        )
        tok = with_end_of_text(tok) if causal else tok
    if dist.is_main and start is None:
        tok.save(tok_dir)
    # 2. the corpus, tokenized once (and the held-out files, data.valid_files)
    corpus = tokenized_corpus(files, tok, out_dir / "corpus", cfg.data, causal, dist, progress_bar)
    valid_corpus = held_out_corpus(cfg.data, tok, out_dir, causal, dist, progress_bar)
    # 3. held-out documents, and the objective's batches and evaluation
    train_docs, valid_docs = held_out(
        corpus, cfg.data, cfg.train.seed, least=1 if stream else 2, valid=valid_corpus
    )
    if objective_kind == "permutation_lm":  # XLNet's specials are at the ids of its config's defaults
        objective = permutation_lm(cfg, corpus, train_docs, valid_docs, tok, dist, device, valid_corpus)
        special = {}
    elif causal:
        objective = causal_lm(cfg, corpus, train_docs, valid_docs, tok, dist, device, valid_corpus)
        special = dict(bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
    else:
        data = masked_instances(
            cfg, corpus, train_docs, valid_docs, tok, dist, task, label_key, sbo, valid_corpus
        )
        if objective_kind == "replaced_token_detection":
            objective = replaced_token_detection(cfg, *data, device, family, tok)
        else:
            objective = masked_lm(*data, device, family, start)
        # a model that names its first and last tokens (RoBERTa: <s>, </s>) takes the tokenizer's
        special = {
            k: v
            for k, v in (("bos_token_id", tok.cls_token_id), ("eos_token_id", tok.sep_token_id))
            if getattr(cfg.model, k, None) is not None and v is not None
        }
    # 4. the model and the engine
    seed_everything(cfg.train.seed)
    if start is not None and objective.pretrainer_options is not None:  # ELECTRA's pair, both networks read
        model_cfg, kept = start.config, None
        model = family.pretrainer(model_cfg, **objective.pretrainer_options)
        pretrain_electra.load_continued(family, model, start.path)
    elif start is not None:  # the checkpoint's weights; a head it lacks initialised, said
        model_cfg = start.config
        model = start.model()
        kept = start.kept(model)  # the checkpoint's pooler, stored as it was
    else:
        kept = None
        model_cfg = replace(cfg.model, vocab_size=tok.vocab_size, pad_token_id=tok.pad_token_id, **special)
        if objective.pretrainer_options is not None:  # more than the "pretraining" head: ELECTRA's pair
            model = family.pretrainer(model_cfg, **objective.pretrainer_options)
        else:
            model = family.make(model_cfg, family.architecture_for(lm_head or "pretraining"))
        cfg.init.apply(model, getattr(model_cfg, "initializer_range", 0.02))  # BERT's N(0, 0.02²) scale
    torch.manual_seed(cfg.train.seed + dist.rank)
    if objective.begin_step is not None and dist.enabled:  # DDP expects a gradient of every parameter
        raise ConfigError("electra.two_stage_steps: one process only (not with torchrun)")
    train_cfg = cfg.train
    if train_cfg.metric == "main":
        train_cfg = replace(train_cfg, metric=objective.metric, higher_is_better=objective.higher_is_better)

    def write_extra(directory: Path) -> None:
        write_tokenizer(family, tok, directory, model_cfg)  # the family's files (tokenizer_config.json)
        if start is not None:
            start.write_tokenizer_files(directory)  # the checkpoint's own, as they are
        write_run_config(directory, cfg)

    trainer = Trainer(
        model,
        train_cfg,
        plan=objective.plan,
        collate=objective.plan.collate,
        out_dir=out_dir,
        evaluate=objective.evaluate,
        write_extra=write_extra,
        loss_fn=objective.loss,
        count_tokens=lambda batch: int(batch["attention_mask"].sum()),
        device=device,
        dist=dist,
        progress_bar=progress_bar,
        save_model=objective.save_model or partial(write_hf_files, family, extra=kept),
        load_model=objective.load_model or partial(load_hf_weights, family),
        plot_curves=plot_training_curves,
        begin_step=partial(objective.begin_step, model) if objective.begin_step else None,
    )
    log.info(
        "%s: %s parameters; %s tokens in %d documents",
        type(model).__name__,
        f"{count_parameters(model):,}",
        f"{corpus.info['tokens']:,}",
        corpus.num_documents,
    )
    before = {}
    if start is not None:  # the held-out loss of the checkpoint as given
        before = pretrain_init.held_out_before(trainer, objective.evaluate, out_dir, resume, dist.is_main)
    result = trainer.fit(resume=resume)
    row = {
        "model": f"{family.model_type} ({model_cfg.num_hidden_layers}/{model_cfg.hidden_size})",
        **({"init": str(start.path)} if start is not None else {}),
        "params": count_parameters(model),
        **trained(result),
        **{f"valid_before_{k}": v for k, v in before.items()},
        **{f"valid_{k}": v for k, v in result.progress.last_eval.items()},
        "run_dir": str(out_dir),
    }
    if dist.is_main:
        if causal and cfg.samples.max_new_tokens and cfg.samples.prompts:
            row["samples"] = continuations(model, tok, cfg.samples, device)
        write_results(out_dir, row)
    cleanup()
    return row
