"""Pretraining step throughput of the BERT-like families: ours against transformers' classes, in one run.

``--family`` picks the pretraining step (bert by default):

    bert     BertForPreTraining: MLM + NSP
    roberta  RobertaForMaskedLM: MLM only — no NSP, no token types (Liu et al. 2019, Sect. 4.2)
    albert   AlbertForPreTraining: MLM + SOP (``sentence_order_label``), one layer shared by all
    electra  the generator (ElectraForMaskedLM, 1/4 of the discriminator's width) and the discriminator
             (ElectraForPreTraining), their embeddings shared, loss = L_MLM + 50 · L_Disc, the generator's
             samples at the masked positions not back-propagated: ours is the ElectraPretrainer that
             `seq2bert pretrain --set model.model_type=electra` trains, with the recipe's settings
             (ElectraSettings); transformers has no such class, so theirs is its two classes composed the
             same way here (TransformersElectra)

Same config, same weights (theirs built by transformers, loaded into ours by the family's Hugging Face
conversion), same batch (random tokens, 15 % of positions labelled for the masked LM, random NSP / SOP labels
where the model has a sentence task), dropout off — the script checks that the losses agree before it times
anything (ELECTRA's: the generator's, the discriminator's and their sum, both sides drawing the replacements
with our sampler from generators seeded alike; when timed, theirs draws with torch.multinomial, ours by
inverse transform sampling, both from torch's global generator). One training
step = forward, backward, fused AdamW update. Ours is the family's "pretraining" architecture with its
``pretraining_options`` as `seq2bert pretrain` trains it: the masked-LM head only at the labelled positions
(``sparse_prediction``), and the last encoder layer's queries, W^O and feed-forward only there (and at [CLS]
for a sentence task); transformers computes both at every position. ELECTRA's discriminator scores every
position in both libraries; the sparse path is the generator's, and the sampling of its replacements
(objectives/replaced_token_detection.py: one uniform per position, where torch.multinomial draws V).

For each precision (fp32, and bf16 autocast where the CPU computes bf16 natively) it prints tokens/s of
both and their ratio, and the achieved GFLOP/s of ours against the machine's matmul peak measured here: for
bert the FLOPs counted by hand (``step_flops``), for the other families those torch's FLOP counter sees in
one of our steps (matmuls and attention, forward and backward; ``common.counted_flops``; for bert-mini it
counts ~5 % fewer than the hand count).

    python benchmarks/bert_pretraining.py                         # bert-mini (4/256), seq 128, batch 32
    python benchmarks/bert_pretraining.py --size base --batch 8   # bert-base (12/768)
    python benchmarks/bert_pretraining.py --family roberta        # RoBERTa at seq2bert pretrain's size (4/256)
    python benchmarks/bert_pretraining.py --family albert         # ALBERT-mini (4/256, E = 128, shared layer)
    python benchmarks/bert_pretraining.py --family electra        # ELECTRA-Small with 4 layers, generator 1/4
    python benchmarks/bert_pretraining.py --family electra --quick  # a tiny model and batch: a smoke run

"mini" is the size `seq2bert pretrain` trains each family at (its Family.presets["mini"]).
"""

from __future__ import annotations

import argparse
import inspect
import platform
import statistics
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial

import torch
import transformers
from common import counted_flops, matmul_peak, seconds
from torch import nn

from seq2bert.models import registry
from seq2bert.models.albert.config import albert_base, albert_mini
from seq2bert.models.bert.config import bert_base, bert_small, bert_tiny
from seq2bert.models.bert.model import prediction_rows
from seq2bert.models.electra.config import electra_base, electra_small
from seq2bert.models.roberta.config import roberta_base, roberta_mini
from seq2bert.objectives.replaced_token_detection import sample_replacements
from seq2bert.precision import native_bf16
from seq2bert.recipes.pretrain_electra import ElectraSettings

MINI = {t: registry.get(t).presets["mini"] for t in ("bert", "roberta", "albert", "electra")}
TINY = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512)  # bert-tiny's
SIZES = {
    "bert": {"tiny": bert_tiny, "mini": MINI["bert"], "small": bert_small, "base": bert_base},
    "roberta": {"tiny": partial(roberta_mini, **TINY), "mini": MINI["roberta"], "base": roberta_base},
    "albert": {"tiny": partial(albert_mini, **TINY), "mini": MINI["albert"], "base": albert_base},
    "electra": {"tiny": partial(electra_small, **TINY), "mini": MINI["electra"], "small": electra_small,
                "base": electra_base},
}  # fmt: skip
QUICK = dict(size="tiny", batch=4, seq=32, repeats=1, peak_n=256)
PAIR_LABELS = ("next_sentence_label", "sentence_order_label")  # BERT's NSP, ALBERT's SOP


def step_flops(cfg, batch: int, seq: int, predicted: int, last_rows: int) -> float:
    """Training FLOPs (forward + backward ≈ 3 × forward) that our BERT performs in one step: the encoder's
    matmuls, attention scores and weighted sums — its last layer's queries, W^O and feed-forward only at
    ``last_rows`` rows ([CLS] and the masked positions, ``prediction_rows``) — the pooler / NSP head, and
    the MLM head at ``predicted`` positions."""
    H, L, I, V = cfg.hidden_size, cfg.num_hidden_layers, cfg.intermediate_size, cfg.vocab_size
    tokens = batch * seq

    def layer(rows: int) -> int:  # keys and values at every position, the rest at ``rows``
        return 2 * tokens * 2 * H * H + 2 * rows * (2 * H * H + 2 * H * I) + 2 * 2 * rows * seq * H

    encoder = (L - 1) * layer(tokens) + layer(last_rows)
    heads = 2 * predicted * (H * H + H * V) + 2 * batch * (H * H + 2 * H)
    return 3 * (encoder + heads)


def make_batch(
    cfg, batch: int, seq: int, g: torch.Generator, pair_label: str | None
) -> dict[str, torch.Tensor]:
    """Random tokens, 15 % of them labelled; two segments and a random ``pair_label`` when the model has a
    sentence task (None: one segment, no token types)."""
    ids = torch.randint(min(1000, cfg.vocab_size // 2), cfg.vocab_size, (batch, seq), generator=g)
    labels = torch.full_like(ids, -100)
    chosen = torch.rand(batch, seq, generator=g) < 0.15
    labels[chosen] = ids[chosen]
    out = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if pair_label is not None:
        out["token_type_ids"] = (torch.arange(seq) >= seq // 2).long().expand(batch, seq).contiguous()
    out["labels"] = labels
    if pair_label is not None:
        out[pair_label] = torch.randint(0, 2, (batch,), generator=g)
    return out


def hf_model(family, cfg, architecture: str) -> nn.Module:
    """transformers' ``architecture`` (our class names are theirs) for our ``cfg``, fresh weights."""
    hf = family.write_config(cfg, architecture)
    hf_cfg = transformers.AutoConfig.for_model(hf.pop("model_type"), **hf)
    return getattr(transformers, architecture)(hf_cfg)


def load_theirs(family, ours: nn.Module, theirs: nn.Module, architecture: str) -> None:
    """Their weights into ours, through the family's conversion."""
    state = family.read_state(theirs.state_dict(), ours.config, architecture, "transformers", False)
    ours.load_state_dict(state)


class TransformersElectra(nn.Module):
    """ELECTRA's pretraining (Clark et al. 2020, Sect. 2, Figure 2) composed of transformers' classes, as the
    released code trains it: the generator's embeddings are the discriminator's (Sect. 3.1), its output layer
    tied to them; x̂ ~ p_G at the masked positions, no gradient; loss = L_MLM + λ L_Disc."""

    def __init__(self, discriminator: nn.Module, generator: nn.Module, disc_weight: float):
        super().__init__()
        self.discriminator, self.generator, self.disc_weight = discriminator, generator, disc_weight
        shared = discriminator.electra.embeddings
        generator.electra.embeddings = shared  # word, position, token type embeddings and their LayerNorm
        generator.generator_lm_head.weight = shared.word_embeddings.weight

    def forward(
        self, input_ids, attention_mask, labels, generator: torch.Generator | None = None, sample=None
    ):
        """(L_MLM, L_Disc, L_MLM + λ L_Disc) of x^masked ``input_ids`` and the MLM ``labels`` (B, T). The
        replacements are drawn with torch.multinomial, or with ``sample(logits, generator=…)`` (the check of
        equal losses passes ours, so that both sides draw the same tokens)."""
        g = self.generator(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        masked = labels.ne(-100)  # (B, T)
        with torch.no_grad():
            if sample is not None:
                sampled = sample(g.logits[masked], generator=generator)
            else:
                probs = torch.softmax(g.logits[masked].float(), dim=-1)  # (N, V)
                sampled = torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (N,)
        original = torch.where(masked, labels, input_ids)
        corrupted = original.clone()
        corrupted[masked] = sampled
        replaced = corrupted.ne(original).long()  # 1(x^corrupt ≠ x): a sample equal to the original is real
        d = self.discriminator(input_ids=corrupted, attention_mask=attention_mask, labels=replaced)
        return g.loss, d.loss, g.loss + self.disc_weight * d.loss


@dataclass
class Step:
    """One family's pretraining step in both libraries, on one batch."""

    ours: nn.Module
    theirs: nn.Module
    our_loss: Callable[[], torch.Tensor]
    their_loss: Callable[[], torch.Tensor]
    losses: Callable[[], dict[str, tuple[float, float]]]  # name → (ours, theirs), compared before timing
    batch: dict[str, torch.Tensor]
    shape: str = ""  # what the header adds to the model's L/H


def masked_lm_step(family, cfg, args) -> Step:
    """BERT, RoBERTa, ALBERT: the family's "pretraining" architecture against transformers' class."""
    architecture = family.architecture_for("pretraining")
    torch.manual_seed(0)
    theirs = hf_model(family, cfg, architecture)
    ours = family.make(cfg, architecture)
    load_theirs(family, ours, theirs, architecture)
    forward = inspect.signature(family.architectures[architecture].forward).parameters
    pair_label = next((k for k in PAIR_LABELS if k in forward), None)
    batch = make_batch(cfg, args.batch, args.seq, torch.Generator().manual_seed(1), pair_label)

    def our_loss():
        return ours(**batch, **family.pretraining_options).loss

    def their_loss():
        return theirs(**batch).loss

    def losses():
        return {"loss": (float(our_loss()), float(their_loss()))}

    return Step(ours, theirs, our_loss, their_loss, losses, batch)


def electra_step(family, cfg, args) -> Step:
    """ELECTRA's joint step: the recipe's ElectraPretrainer against TransformersElectra."""
    settings = ElectraSettings()  # what `seq2bert pretrain` trains with by default
    ours = family.pretrainer(cfg, **asdict(settings))
    torch.manual_seed(0)
    discriminator = hf_model(family, cfg, "ElectraForPreTraining")
    generator = hf_model(family, ours.generator.config, "ElectraForMaskedLM")
    theirs = TransformersElectra(discriminator, generator, settings.disc_weight)
    load_theirs(family, ours.discriminator, discriminator, "ElectraForPreTraining")
    load_theirs(family, ours.generator, generator, "ElectraForMaskedLM")
    batch = make_batch(cfg, args.batch, args.seq, torch.Generator().manual_seed(1), None)
    ids, mask, labels = batch["input_ids"], batch["attention_mask"], batch["labels"]

    def losses():  # both sides draw the replacements with our sampler, seeded alike: the same samples
        o = ours(ids, mask, None, labels, generator=torch.Generator().manual_seed(2))
        t = theirs(ids, mask, labels, generator=torch.Generator().manual_seed(2), sample=sample_replacements)
        return {"mlm": (float(o.mlm_loss), float(t[0])), "disc": (float(o.disc_loss), float(t[1])),
                "loss": (float(o.loss), float(t[2]))}  # fmt: skip

    def our_loss():  # as recipes/pretrain_electra.py's loss(): samples from torch's global generator
        return ours(ids, mask, None, labels).loss

    def their_loss():
        return theirs(ids, mask, labels)[2]

    g = ours.generator.config
    shape = f", generator {g.num_hidden_layers}/{g.hidden_size}"
    return Step(ours, theirs, our_loss, their_loss, losses, batch, shape=shape)


def timed_steps(model, loss_fn, bf16: bool, repeats: int) -> float:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)  # both engines' default AdamW
    model.train()

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()  # warm-up
    return statistics.median(seconds(step) for _ in range(repeats))


def our_step_flops(name: str, step: Step, cfg, args) -> float:
    """FLOPs of one of our steps: counted by hand for BERT, by torch's counter for the others."""
    labels = step.batch["labels"]
    if name == "bert":
        predicted, last_rows = int(labels.ne(-100).sum()), prediction_rows(labels)[0].numel()
        return step_flops(cfg, args.batch, args.seq, predicted, last_rows)
    step.ours.train()
    flops = counted_flops(lambda: step.our_loss().backward())
    step.ours.zero_grad(set_to_none=True)
    return flops


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--family", choices=list(SIZES), default="bert")
    p.add_argument("--size", default="mini", help="tiny, mini (default), base; bert and electra: small too")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--precision", choices=["fp32", "bf16", "both"], default="both")
    p.add_argument("--quick", action="store_true", help="a tiny model and batch, one repeat: a smoke run")
    p.set_defaults(peak_n=2048)  # the size of the matmul that measures the peak
    args = p.parse_args()
    if args.quick:
        vars(args).update(QUICK)
    if args.size not in SIZES[args.family]:
        p.error(f"--size: {args.family} comes in {', '.join(SIZES[args.family])}")
    transformers.logging.set_verbosity_error()
    family = registry.FAMILIES[args.family]
    no_dropout = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # equal losses
    cfg = SIZES[args.family][args.size](**no_dropout)
    step = (electra_step if family.pretrainer is not None else masked_lm_step)(family, cfg, args)
    step.ours.eval()
    step.theirs.eval()
    with torch.no_grad():
        losses = step.losses()
    differ = {k: (a, b) for k, (a, b) in losses.items() if abs(a - b) > 1e-4 * max(1.0, abs(b))}
    if differ:
        said = ", ".join(f"{k}: ours {a:.6f}, transformers {b:.6f}" for k, (a, b) in differ.items())
        print(f"the losses differ: {said}", file=sys.stderr)
        return 1
    flops = our_step_flops(args.family, step, cfg, args)
    bf16_ok = native_bf16("cpu")
    print(
        f"machine: {platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}, "
        f"transformers {transformers.__version__}, native bf16: {bf16_ok}"
    )
    params = sum(t.numel() for t in step.ours.parameters()) / 1e6
    predicted = int(step.batch["labels"].ne(-100).sum())
    said = "; ".join(f"{k} {a:.4f} (ours) = {b:.4f} (transformers)" for k, (a, b) in losses.items())
    print(
        f"{args.family}-{args.size} ({cfg.num_hidden_layers}/{cfg.hidden_size}{step.shape}, {params:.1f} M "
        f"parameters), batch {args.batch} × {args.seq} tokens, {predicted} masked positions; {said}; median of {args.repeats} steps"
    )
    print(
        f"{'precision':<10}{'seq2bert tok/s':>16}{'transformers tok/s':>20}{'ratio':>8}{'GFLOP/s':>10}{'peak':>8}{'of peak':>9}"
    )
    precisions = {"fp32": [False], "bf16": [True], "both": [False, True]}[args.precision]
    for bf16 in precisions:
        name = "bf16" if bf16 else "fp32"
        if bf16 and not bf16_ok:
            print(
                f"{name:<10}skipped: this CPU has no native bf16 (it would be emulated, far slower than fp32)"
            )
            continue
        t_ours = timed_steps(step.ours, step.our_loss, bf16, args.repeats)
        t_hf = timed_steps(step.theirs, step.their_loss, bf16, args.repeats)
        tokens = args.batch * args.seq
        gflops = flops / t_ours / 1e9
        peak = matmul_peak(torch.bfloat16 if bf16 else torch.float32, n=args.peak_n)
        print(
            f"{name:<10}{tokens / t_ours:>16,.0f}{tokens / t_hf:>20,.0f}{t_hf / t_ours:>7.2f}x"
            f"{gflops:>10.0f}{peak:>8.0f}{100 * gflops / peak:>8.0f}%"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
