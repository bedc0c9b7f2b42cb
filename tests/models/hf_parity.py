"""What the parity tests of the families built from BERT's blocks share (test_distilbert.py,
test_mobilebert.py): transformers' random model made to count, padded batches, the comparison of one forward
of each, and a tiny `seq2bert finetune` from a directory of the family that transformers then reads."""

import numpy as np
import torch

CLOSE = dict(rtol=0, atol=1e-5)


def made_to_count(model):
    """A fresh model has zero biases and unit norms: add noise to them (in place); the model in eval mode."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model.eval()


def padded(vocab_size, left=False, type_vocab_size=0):
    """Three rows of 11 tokens, two of them padded (on the right, or on the left) with id 0: input_ids and
    attention_mask (3, 11), and random segments when the model has ``type_vocab_size`` of them."""
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(1, vocab_size, (3, 11), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    mask[2, 3:] = 0
    if left:
        mask = mask.flip(1)
    out = dict(input_ids=ids.masked_fill(mask == 0, 0), attention_mask=mask)
    if type_vocab_size:
        out["token_type_ids"] = torch.randint(0, type_vocab_size, (3, 11), generator=g)
    return out


def assert_same_forward(hf, ours, inputs, fields, *, layers, per_layer=True):
    """One forward of each on ``inputs`` (keywords both take): equal ``fields`` (those transformers returns),
    and with ``per_layer`` equal hidden states (``layers`` + 1) and attention maps. Returns the fields compared."""
    kw = dict(output_hidden_states=True, output_attentions=True) if per_layer else {}
    with torch.no_grad():
        e, o = hf(**inputs, **kw), ours(**inputs, **kw)
    compared = [name for name in fields if getattr(e, name, None) is not None]
    for name in compared:
        torch.testing.assert_close(getattr(o, name), getattr(e, name), **CLOSE, msg=name)
    if per_layer:
        assert len(o.hidden_states) == len(e.hidden_states) == layers + 1
        for a, b in zip(o.hidden_states + o.attentions, e.hidden_states + e.attentions, strict=True):
            torch.testing.assert_close(a, b, **CLOSE)
    return compared


def finetuned_sst2(tmp_path, make_model, epochs):
    """`seq2bert finetune --init` a directory of ``make_model(vocab_size)`` (random weights, a WordPiece
    vocabulary of the task's words) on SST-2-shaped data; returns (our best checkpoint's model, its tokenizer)."""
    from seq2bert.data.tokenization import Tokenizer
    from seq2bert.models import registry
    from tests.recipes.test_finetune import BAD, FILLER, GOOD, run, write_sst2

    corpus = tmp_path / "words.txt"
    words = FILLER + GOOD + BAD
    corpus.write_text("\n".join(" ".join(words[i:] + words[:i]) for i in range(len(words))) + "\n")
    tok = Tokenizer.train([corpus], kind="wordpiece", vocab_size=80, lowercase=True)
    torch.manual_seed(0)
    make_model(tok.vocab_size).save_pretrained(tmp_path / "init", tokenizer=tok)
    write_sst2(tmp_path / "sst2", np.random.default_rng(0))
    epochs = ["--set", f"train.max_epochs={epochs}"]
    assert run("sst2", tmp_path / "sst2", tmp_path / "init", tmp_path / "run", *epochs) == 0
    return registry.load(tmp_path / "run" / "best")


def assert_transformers_reads_the_classifier(ours, tok, theirs):
    """Our fine-tuned classifier and transformers' reading of its directory: equal logits, right answers."""
    enc = tok.encode_batch(
        ["a superb film", "the story was dull and poor"], padding="longest", return_tensors="pt"
    )
    inputs = dict(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
    with torch.no_grad():
        expected = theirs.eval()(**inputs).logits
        got = ours(
            **inputs, token_type_ids=enc["token_type_ids"]
        ).logits  # segments: ignored where there are none
    torch.testing.assert_close(got, expected, **CLOSE)
    assert expected.argmax(-1).tolist() == [1, 0]


def assert_the_pipelines_read_a_masked_lm(tmp_path, make_model, hf_class):
    """A directory of ``make_model(vocab_size)`` with a WordPiece vocabulary: fill-mask gives transformers'
    best tokens, embed a vector per text, and transformers' AutoTokenizer reads the vocabulary as we do."""
    import seq2bert
    from seq2bert.data.tokenization import Tokenizer

    (tmp_path / "words.txt").write_text("who is there nobody is there said the man\nhello world\n" * 5)
    tok = Tokenizer.train([tmp_path / "words.txt"], kind="wordpiece", vocab_size=60, lowercase=True)
    torch.manual_seed(0)
    make_model(tok.vocab_size).save_pretrained(tmp_path / "m", tokenizer=tok)
    text = "who is [MASK] ?"
    best = seq2bert.fill_mask(text, str(tmp_path / "m"), top_k=3)
    ids = torch.tensor([tok.encode(text).ids])
    with torch.no_grad():
        logits = hf_class.from_pretrained(tmp_path / "m").eval()(input_ids=ids).logits
    assert [r["token_id"] for r in best] == logits[0, ids[0].tolist().index(tok.mask_token_id)].topk(
        3
    ).indices.tolist()
    assert seq2bert.embed(["hello world", "who is there"], str(tmp_path / "m")).shape[0] == 2
    from transformers import AutoTokenizer

    assert (
        AutoTokenizer.from_pretrained(tmp_path / "m")("who is there")["input_ids"]
        == tok.encode("who is there").ids
    )
