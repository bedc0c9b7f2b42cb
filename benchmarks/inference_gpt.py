"""Generation at the memory-bandwidth limit: GPT-2 small against transformers, and speculative decoding against
our own greedy decoding — the GPT parts of ``python benchmarks/inference.py`` (``gpt``, ``speculative``).

gpt: GPT-2 small (124 M parameters, random weights), 8 prompts × 32 tokens, 64 new tokens, greedy and beam 4;
new tokens/s of
- ours: fp32; the default (``seq2bert.generate`` on a directory: a bf16-weights copy where the CPU computes
  bf16 natively, else fp32); int8 weights (``int8=True``: int8 weights, and int8 activations where the CPU
  has VNNI / AMX; bf16 between the layers where native); int4 weights (``int4=True``: groups of 32, the
  kernel that pays for one prompt at a time: ``--gpt-batch 1``); with ``--compile``, the int8 twin's stack under
  torch.compile (its first call, the warm-up, compiles: minutes);
- transformers: ``generate`` as it comes (fp32), and its best — the model's weights cast to bf16 where
  native (what its users do: ``model.to(torch.bfloat16)``).
Ours in fp32 must give transformers' fp32 tokens exactly; the others' agreement with it is printed. Beside
them, the bound memory sets: a STREAM-like copy measures the bandwidth (GB/s, bytes read and written), each
way's bytes read per greedy step (its Linear weights and output layer, the embeddings' rows it looks up are
negligible, and the key/value cache at mid-decode) give tokens/s ≤ batch × bandwidth / bytes, and each figure
is stated as a share of its own bound.

speculative: a model directory and its draft (``seq2bert distill``), the first ``--prompt-tokens`` tokens of
paragraphs of the ``--prompts`` files (books the model was not trained on: its held-out documents; the first
paragraphs of each, past the Project Gutenberg header), one prompt at a time (batch 1: the latency
speculative decoding is for), greedy: new tokens/s without and with the draft, outputs compared token for
token, the acceptance rate α̂ and the tokens per pass of the model. A translation run as ``--target`` (and its
draft) translates the first ``--n-prompts`` lines of ``--prompts``, a source file (e.g. Multi30k's
test_2016_flickr.de.gz), one sentence at a time, greedily, the same way.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import torch
from common import timed

from seq2bert.decoding.generation import generate, strip_special
from seq2bert.decoding.speculative import Acceptance, speculative_search
from seq2bert.models.weight_only import int8_twin, weight_only_int8
from seq2bert.nn.weight_only import Int4Linear, Int8Linear
from seq2bert.pipelines.loading import bf16_copy
from seq2bert.precision import native_bf16


def bandwidth(megabytes: int = 512, repeats: int = 5) -> float:
    """GB/s of a large copy (bytes read + bytes written), the best of ``repeats``: STREAM's "copy"."""
    a = torch.empty(megabytes * 2**20, dtype=torch.uint8)
    a.fill_(1)
    b = torch.empty_like(a)
    b.copy_(a)
    best = min(timed(lambda: b.copy_(a), 1)[0] for _ in range(repeats))
    return 2 * a.numel() / best / 1e9


def step_bytes(model: torch.nn.Module, rows: int, context: int) -> int:
    """Bytes one greedy step reads: every Linear weight (int8 with its scales, or float), the output layer,
    and the key/value cache of ``rows`` rows at ``context`` positions (2 × layers × d × rows × context)."""
    weights = 0
    for m in model.modules():
        if isinstance(m, Int8Linear):
            weights += m.weight.numel() + m.scale.numel() * m.scale.element_size()
        elif isinstance(m, Int4Linear):
            weights += m.packed.numel() * m.packed.element_size() + m.scales.numel() * m.scales.element_size()
        elif isinstance(m, torch.nn.Linear):
            weights += m.weight.numel() * m.weight.element_size()
    c = model.config
    cache = 2 * c.n_layer * c.n_embd * rows * context * 4  # the keys kept in fp32, the values as computed
    return weights + cache


def gpt(args, table) -> bool:
    import copy

    import transformers
    from gpt import make_models

    hf, ours = make_models(args.gpt_model, args.gpt_vocab)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, args.gpt_vocab - 1, (args.gpt_batch, 32), generator=g)
    mask = torch.ones_like(ids)
    native = native_bf16("cpu")
    half = torch.bfloat16 if native else torch.float32
    gbps = bandwidth()
    print(f"\ngpt: GPT-2 {args.gpt_model} (random weights), {args.gpt_batch} prompts × 32 tokens, {args.gpt_new} new tokens; "
          f"new tokens/s, median of {args.repeats}; transformers {transformers.__version__}; "
          f"memory bandwidth {gbps:.1f} GB/s (a 512 MB copy)")  # fmt: skip
    ours_ways = {
        "seq2bert fp32": ours,
        "seq2bert default": bf16_copy(ours) if native else ours,  # what seq2bert.generate runs
        "seq2bert int8 weights": int8_twin(ours, half),
        "seq2bert int4 weights": int8_twin(ours, half, 4),  # generate --int4
    }
    if args.compile:  # the int8 twin's stack under torch.compile (a copy: the twin above stays eager)
        twin = weight_only_int8(ours, half)
        twin.transformer.forward = torch.compile(twin.transformer.forward, dynamic=True)
        ours_ways["seq2bert int8 weights, compiled"] = twin
    theirs_ways = {"transformers fp32": hf}
    if native:
        theirs_ways["transformers bf16 weights"] = copy.deepcopy(hf).to(torch.bfloat16)
    ok = True
    for name, beams in (("greedy", 1), ("beam 4", 4)):
        settings = dict(num_beams=beams, max_new_tokens=args.gpt_new, do_sample=False)
        found = {}
        for way, model in ours_ways.items():
            seconds, out = timed(lambda m=model, s=settings: m.generate(ids, mask, **s), args.repeats)
            found[way] = (out[:, 32:].numel() / seconds, out)
        for way, model in theirs_ways.items():

            def call(m=model, s=settings):
                return m.generate(ids, attention_mask=mask, pad_token_id=hf.config.eos_token_id, **s)

            seconds, out = timed(call, args.repeats)
            found[way] = (out[:, 32:].numel() / seconds, out)
        reference = found["seq2bert fp32"][1]
        ok &= torch.equal(found["transformers fp32"][1], reference)
        for way, (rate, out) in found.items():
            same = int((out == reference).all(1).sum())
            line = f"  {name}, {way}: {rate:,.1f} new tokens/s; {same}/{len(out)} rows as seq2bert fp32"
            if beams == 1 and way in ours_ways:
                need = step_bytes(ours_ways[way], args.gpt_batch, 32 + args.gpt_new // 2)
                bound = args.gpt_batch * gbps * 1e9 / need
                line += f"; {need / 2**20:,.0f} MiB read per step, bound {bound:,.0f} tokens/s: {rate / bound:.0%}"
            print(line, flush=True)
        ours_best = max(v[0] for k, v in found.items() if k in ours_ways)
        theirs_best = max(v[0] for k, v in found.items() if k in theirs_ways)
        table.add(f"GPT-2 {args.gpt_model} {name}, default, new tokens/s", found["seq2bert default"][0],
                  "transformers default", found["transformers fp32"][0])  # fmt: skip
        table.add(
            f"GPT-2 {args.gpt_model} {name}, best, new tokens/s", ours_best, "transformers best", theirs_best
        )
    return ok


def held_out_prompts(paths: list[Path], tokenizer, n: int, tokens: int) -> list[list[int]]:
    """The first ``tokens`` tokens of paragraphs (blank-line separated, past a Project Gutenberg header) with
    at least that many: the first ⌈n / files⌉ of each file, ``n`` in all."""
    out = []
    each = -(-n // len(paths))
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if "*** START OF" in text:  # the book, past its licence header
            text = text.split("*** START OF", 1)[1].split("\n", 1)[-1]
        found = []
        for paragraph in re.split(r"\n\s*\n", text):
            ids = tokenizer.ids_batch([" ".join(paragraph.split())])[0]
            if len(ids) >= tokens:
                found.append(ids[:tokens])
            if len(found) == each:
                break
        out += found
    return out[:n]


def speculative(args, table) -> bool:
    """A causal LM and its draft on held-out text, or a translation run and its draft on source sentences."""
    from seq2bert.models import registry

    if registry.family_at(args.target).kind == "encoder-decoder":
        return speculative_translation(args, table)
    target, tok = registry.load(args.target, head="causal_lm")
    draft, _ = registry.load(args.draft, head="causal_lm")
    target, draft = precision(args, target.eval(), draft.eval())
    prompts = held_out_prompts(args.prompts, tok, args.n_prompts, args.prompt_tokens)
    config = target.generation_config(max_new_tokens=args.gpt_new, num_draft_tokens=args.draft_tokens)
    if not prompts:
        raise SystemExit(
            f"{' '.join(map(str, args.prompts))}: no paragraph of {args.prompt_tokens} tokens or more"
        )
    inputs = [(torch.tensor([p]), None) for p in prompts]
    books = ", ".join(p.name for p in args.prompts)
    what = f"{len(prompts)} held-out prompts of {args.prompt_tokens} tokens from {books}, {args.gpt_new} new tokens each"
    return race(args, table, target, draft, inputs, config, what, "new tokens")


def speculative_translation(args, table) -> bool:
    """Greedy translation of the first ``--n-prompts`` sources of ``--prompts`` (e.g. Multi30k's test2016
    German), one sentence at a time, by the run alone and with its draft."""
    from seq2bert.data.parallel import read_lines
    from seq2bert.decoding.generation import GREEDY, Decoding
    from seq2bert.models.alignment import source_ids, source_limit
    from seq2bert.recipes.translation import load

    target, tok, _ = load(args.target)
    draft, _, _ = load(args.draft)
    target, draft = precision(args, target, draft)
    lines = [line for path in args.prompts for line in read_lines(path) if line.strip()][: args.n_prompts]
    limit = source_limit(target.config)
    inputs = [(torch.tensor(source_ids(tok, [line], limit)), None) for line in lines]
    decoding = Decoding.of(num_draft_tokens=args.draft_tokens) if args.draft_tokens != 4 else GREEDY
    config = decoding.generation_config(tok)
    what = f"{len(lines)} source sentences of {args.prompts[0].name}"
    return race(args, table, target, draft, inputs, config, what, "target tokens")


def precision(
    args, target: torch.nn.Module, draft: torch.nn.Module
) -> tuple[torch.nn.Module, torch.nn.Module]:
    """Both models as the pipelines run them: bf16 weights where the CPU computes bf16 natively (not with
    ``--fp32``)."""
    if native_bf16("cpu") and not args.fp32:
        return bf16_copy(target), bf16_copy(draft)
    return target, draft


def race(args, table, target, draft, inputs, config, what: str, unit: str) -> bool:
    """Each input decoded greedily by ``target`` alone and with ``draft``: time, identical outputs, acceptance."""
    size = lambda m: f"{sum(p.numel() for p in m.parameters()):,}"  # noqa: E731
    print(f"\nspeculative: {args.target} ({size(target)} parameters) with the draft {args.draft} ({size(draft)}), "
          f"{what}; greedy, one input at a time, {config.num_draft_tokens} draft tokens per pass")  # fmt: skip
    plain_s = spec_s = 0.0
    same = tokens = 0
    acceptance = Acceptance()
    with torch.no_grad():
        for ids, mask in inputs:
            start = time.perf_counter()
            plain = generate(target, ids, mask, config).token_ids()[0]
            plain_s += time.perf_counter() - start
            start = time.perf_counter()
            hyps = speculative_search(target, ids, mask, config, draft=draft, acceptance=acceptance)
            spec_s += time.perf_counter() - start
            new = strip_special(
                hyps[0][0].tokens, eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id
            )
            same += int(plain == new)
            tokens += len(new)
    print(f"  greedy: {tokens / plain_s:,.1f} {unit}/s; speculative: {tokens / spec_s:,.1f} "
          f"({plain_s / spec_s:.2f}×); {same}/{len(inputs)} outputs identical; acceptance rate "
          f"{acceptance.rate:.2f}, {acceptance.tokens_per_pass:.2f} tokens per pass of the model")  # fmt: skip
    table.add(f"speculative greedy, {unit}/s (batch 1)", tokens / spec_s, "our greedy", tokens / plain_s)
    return same == len(inputs)
