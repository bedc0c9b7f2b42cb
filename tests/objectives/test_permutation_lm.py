"""The permutation LM's masks (objectives/permutation_lm.py) against the paper's definition written out with
loops over a factorisation order z, and in the model: the prediction of x_{z_t} depends on x_{z<t} and on
nothing at or after z_t (Eq. 4's p(x_{z_t} | x_{z<t})) — checked by changing those tokens; XLNet's pretraining
batches (data/permutation.py): the frame, the left padding, draws fixed by (seed, pass, block)."""

import math

import numpy as np
import pytest
import torch

from seq2bert.data.lm import TokenStream
from seq2bert.data.permutation import PermutationBlocks
from seq2bert.data.pretraining import Corpus, prepare_corpus
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.xlnet.config import xlnet_tiny
from seq2bert.models.xlnet.model import XLNetLMHeadModel
from seq2bert.objectives.cross_entropy import IGNORE_INDEX
from seq2bert.objectives.permutation_lm import permutation_inputs, predicted_tokens


@pytest.mark.parametrize("k", [1.0, 2.5, 6.0])
def test_about_one_in_k_predictable_tokens_is_predicted_never_a_functional_one(k):
    rng = np.random.default_rng(0)
    predictable = np.ones(20, dtype=bool)
    predictable[[4, 18, 19]] = False
    seen = set()
    for _ in range(200):
        order = predicted_tokens(predictable, k, rng)
        assert len(order) == math.ceil(17 / k) and len(set(order.tolist())) == len(order)
        assert predictable[order].all()
        seen.update(order.tolist())
    assert seen == set(np.flatnonzero(predictable).tolist())  # every predictable token gets its turn
    assert len(predicted_tokens(np.zeros(5, dtype=bool), k, rng)) == 0


def reference_visibility(T: int, z: list[int], c: int) -> tuple[np.ndarray, np.ndarray]:
    """What each query may read under the order z cut at c, from the definitions: the query stream of
    z_t (t > c) reads x_{z<t}; the content stream reads x_{z≤t}; the first c of z read each other (the
    context), never a predicted token."""
    place = {pos: t for t, pos in enumerate(z)}
    query = np.zeros((T, T), dtype=bool)
    content = np.zeros((T, T), dtype=bool)
    for i in range(T):
        for j in range(T):
            if place[i] < c:  # a context token: the whole context
                query[i, j] = content[i, j] = place[j] < c
            else:
                query[i, j] = place[j] < place[i]
                content[i, j] = place[j] <= place[i]
    return query, content


def test_perm_mask_and_target_mapping_realise_the_factorisation_order():
    rng = np.random.default_rng(1)
    T = 9
    ids = torch.randint(10, 50, (3, T))
    orders = [predicted_tokens(np.ones(T, dtype=bool), k, rng) for k in (3.0, 1.0, 4.0)]
    got = permutation_inputs(ids, orders)
    P = max(len(o) for o in orders)
    assert got["perm_mask"].shape == (3, T, T) and got["target_mapping"].shape == (3, P, T)
    for b, order in enumerate(orders):
        context = [i for i in rng.permutation(T).tolist() if i not in order.tolist()]
        z = context + order.tolist()  # the context in any order, then the predicted ones
        query, content = reference_visibility(T, z, len(context))
        visible = got["perm_mask"][b].numpy() == 0
        assert (visible == query).all()  # the query stream: transformers' perm_mask as it is
        assert ((visible | np.eye(T, dtype=bool)) == content).all()  # the content stream adds itself
        for p, position in enumerate(order.tolist()):
            assert got["target_mapping"][b, p].tolist() == [float(i == position) for i in range(T)]
            assert got["labels"][b, p] == ids[b, position]
        assert (got["labels"][b, len(order) :] == IGNORE_INDEX).all()
        assert (got["target_mapping"][b, len(order) :] == 0).all()


def test_each_prediction_reads_the_tokens_before_it_in_the_order_and_nothing_at_or_after_it():
    torch.manual_seed(0)
    model = XLNetLMHeadModel(xlnet_tiny(dropout=0.0)).eval()
    T = 10
    ids = torch.randint(10, 99, (1, T))
    order = predicted_tokens(np.ones(T, dtype=bool), 2.0, np.random.default_rng(3))  # 5 predicted
    inputs = permutation_inputs(ids, [order])
    labels = inputs.pop("labels")
    with torch.no_grad():
        logits = model(ids, **inputs).logits[0]  # (P, V)
        for t in range(len(order)):
            later = order[t:].tolist()  # the token predicted at step t and every one after it
            changed = ids.clone()
            changed[0, later] = (changed[0, later] + 7) % 99
            assert torch.allclose(model(changed, **inputs).logits[0, t], logits[t], atol=1e-5), t
            if t > 0:  # an earlier predicted token is read
                earlier = ids.clone()
                earlier[0, order[0]] = (earlier[0, order[0]] + 7) % 99
                assert not torch.allclose(model(earlier, **inputs).logits[0, t], logits[t], atol=1e-4)
    loss = model(ids, **inputs, labels=labels).loss
    expected = torch.nn.functional.cross_entropy(logits, ids[0, torch.from_numpy(order)])
    torch.testing.assert_close(loss, expected)


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    root = tmp_path_factory.mktemp("plm")
    words = "the a cat dog sat ran on under mat tree".split()
    rng = np.random.default_rng(0)
    docs = [" ".join(rng.choice(words, size=rng.integers(5, 30))) + "." for _ in range(8)]
    (root / "text.txt").write_text("\n\n".join(docs) + "\n")
    tok = Tokenizer.train([root / "text.txt"], kind="wordpiece", vocab_size=60)
    prepare_corpus([root / "text.txt"], tok, root / "corpus", progress=False)
    corpus = Corpus(root / "corpus")
    return TokenStream(corpus, np.arange(corpus.num_documents), tok.sep_token_id)


def test_blocks_are_framed_a_sep_b_sep_cls_padded_left_and_drawn_per_seed_pass_and_block(stream):
    sep, cls, pad = 901, 902, 900
    blocks = PermutationBlocks(stream, 16, 4, sep=sep, cls=cls, pad=pad, k=4.0, seed=5)
    assert len(blocks) == len(stream) // 13 + (len(stream) % 13 >= 2)
    text = np.concatenate([blocks.blocks.block(j) for j in range(len(blocks))])
    assert text.tolist() == stream.read(0, len(text)).tolist()
    for j in range(len(blocks)):
        ids, types, order = blocks.instance(j)
        split = int(np.flatnonzero(ids == sep)[0])
        assert ids[-1] == cls and ids[-2] == sep and ids[split] == sep and 1 <= split < len(ids) - 3
        assert np.delete(ids, [split, len(ids) - 2, len(ids) - 1]).tolist() == blocks.blocks.block(j).tolist()
        assert types.tolist() == [0] * (split + 1) + [1] * (len(ids) - split - 2) + [2]
        assert len(order) == math.ceil((len(ids) - 3) / 4.0) and not {split, len(ids) - 2} & set(
            order.tolist()
        )
    epoch0 = [i for b in blocks.batches(0) for i in b]
    epoch1 = [i for b in blocks.batches(1) for i in b]
    N = len(blocks)
    assert sorted(epoch0) == list(range(N)) and sorted(epoch1) == list(range(N, 2 * N))
    same = PermutationBlocks(stream, 16, 4, sep=sep, cls=cls, pad=pad, k=4.0, seed=5)
    for a, b in zip(blocks.instance(epoch1[0]), same.instance(epoch1[0]), strict=True):
        assert np.array_equal(a, b)  # a resumed run draws what the first attempt drew
    assert any(  # and each pass draws anew
        not np.array_equal(blocks.instance(j)[2], blocks.instance(j + N)[2]) for j in range(N)
    )
    last = N - 1
    batch = blocks.collate([0, last])
    short = len(blocks.instance(last)[0])
    T = batch["input_ids"].shape[1]
    assert batch["attention_mask"][1].tolist() == [0] * (T - short) + [1] * short  # padded on the left
    assert (batch["input_ids"][1, : T - short] == pad).all() and batch["input_ids"][1, -1] == cls
    predicted = batch["target_mapping"][1].sum(0).bool()
    assert not predicted[: T - short].any()  # no padding predicted
    assert batch["labels"].shape == batch["target_mapping"].shape[:2]
