"""Hard (stochastic) attention (Xu et al. 2015): locations drawn as α says, the argmax at test time, the
expected context half the time; REINFORCE's gradient and moving-average baseline as Eq. 12 writes them; and
RNNsearch with hard attention trains on both terms and decodes deterministically."""

import pytest
import torch

from seq2bert.errors import ConfigError
from seq2bert.models.attention.bahdanau import RNNSearch
from seq2bert.models.attention.config import BahdanauConfig
from seq2bert.nn.attention import hard_alignment, weighted_sum
from seq2bert.objectives.reinforce import reinforce_loss


def test_locations_are_drawn_as_alpha_says_and_the_argmax_at_test_time():
    torch.manual_seed(0)
    alpha = torch.tensor([[0.1, 0.6, 0.3, 0.0]]).expand(20000, 4)
    memory = torch.arange(4.0)[None, :, None].expand(20000, 4, 1)  # h_j = j: the context names the location
    hard = hard_alignment(alpha, memory, sample=True, expected_prob=0.0)
    counts = torch.bincount(hard.context[:, 0].long(), minlength=4) / 20000
    torch.testing.assert_close(counts, torch.tensor([0.1, 0.6, 0.3, 0.0]), atol=0.015, rtol=0)
    torch.testing.assert_close(hard.log_prob, torch.log(alpha[0, hard.context[:, 0].long()]))
    entropy = -(
        0.1 * torch.log(torch.tensor(0.1))
        + 0.6 * torch.log(torch.tensor(0.6))
        + 0.3 * torch.log(torch.tensor(0.3))
    )
    torch.testing.assert_close(hard.entropy[0], entropy)
    test = hard_alignment(alpha[:2], memory[:2], sample=False)
    assert test.context[:, 0].tolist() == [1.0, 1.0] and test.log_prob.tolist() == [0.0, 0.0]


def test_half_the_rows_take_the_expected_context():
    torch.manual_seed(1)
    alpha = torch.softmax(torch.randn(4000, 5), -1)
    memory = torch.randn(4000, 5, 3)
    hard = hard_alignment(alpha, memory, sample=True, expected_prob=0.5)
    expected = torch.isclose(hard.context, weighted_sum(alpha, memory), atol=1e-6).all(-1)
    assert abs(expected.float().mean().item() - 0.5) < 0.03
    assert torch.all(hard.log_prob[expected] == 0) and torch.all(hard.log_prob[~expected] < 0)


def test_the_reinforce_gradient_and_the_moving_average_baseline_are_eq_12s():
    nll = torch.tensor([[1.0, 2.0, 0.5], [0.5, 0.5, 9.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    log_prob = torch.tensor([[-0.2, -1.0, -0.3], [-0.5, -0.1, -2.0]], requires_grad=True)
    entropy = torch.tensor([[0.5, 0.4, 0.3], [0.2, 0.1, 5.0]], requires_grad=True)
    baseline = torch.zeros(2)
    loss = reinforce_loss(nll, log_prob, entropy, mask, baseline, weight=2.0, entropy_weight=0.1)
    rewards = torch.tensor([-3.5, -1.0])  # −Σ_t nll over the target tokens
    b = rewards.mean()  # the first batch starts the baseline
    assert loss.item() == 0.0  # the logged loss stays the cross-entropy: only the gradient is added
    loss.backward()
    expected = -2.0 * (rewards - b)[:, None] * mask / 5
    torch.testing.assert_close(log_prob.grad, expected)
    torch.testing.assert_close(entropy.grad, -0.1 * mask.float() / 5)
    torch.testing.assert_close(baseline, torch.stack([b, torch.tensor(1.0)]))  # 0.9 b + 0.1 mean R = b
    reinforce_loss(nll + 1, log_prob, entropy, mask, baseline)  # rewards fall by 3 and 2: mean −4.75
    torch.testing.assert_close(baseline, torch.tensor([0.9 * b.item() + 0.1 * -4.75, 2.0]))


def test_the_per_token_reward_credits_each_location_with_its_own_token():
    nll = torch.tensor([[1.0, 2.0, 0.5], [0.5, 0.5, 9.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    log_prob = torch.tensor([[-0.2, -1.0, -0.3], [-0.5, -0.1, -2.0]], requires_grad=True)
    baseline = torch.zeros(2)
    reinforce_loss(nll, log_prob, torch.zeros(2, 3), mask, baseline, weight=2.0, per_token=True).backward()
    b = -(1.0 + 2.0 + 0.5 + 0.5 + 0.5) / 5  # the mean reward of the batch's 5 target tokens
    expected = -2.0 * (-nll - b) * mask / 5  # r_bt − b for each location, the padded one untouched
    torch.testing.assert_close(log_prob.grad, expected)
    torch.testing.assert_close(baseline, torch.tensor([b, 1.0]))
    reinforce_loss(nll + 1, log_prob, torch.zeros(2, 3), mask, baseline, per_token=True)
    torch.testing.assert_close(baseline, torch.tensor([0.9 * b + 0.1 * (b - 1), 2.0]))


def model(**overrides):
    torch.manual_seed(0)
    cfg = BahdanauConfig(src_vocab_size=20, tgt_vocab_size=20, embedding_dim=8, hidden_size=8, attention_size=8,
                         maxout_size=4, **{"attention_type": "hard", **overrides})  # fmt: skip
    return RNNSearch(cfg)


def batch():
    g = torch.Generator().manual_seed(0)
    src = torch.randint(7, 20, (3, 6), generator=g)
    tgt = torch.randint(7, 20, (3, 5), generator=g)
    labels = tgt.clone()
    labels[2, 3:] = -100
    return dict(
        input_ids=src, decoder_input_ids=torch.cat([torch.full((3, 1), 5), tgt[:, :-1]], 1), labels=labels
    )


@pytest.mark.parametrize("reward", ["sequence", "token"])
def test_training_adds_reinforce_and_the_alignment_model_learns_from_it(reward):
    m = model(hard_expected_prob=0.0, hard_reward=reward).train()
    with torch.no_grad():  # the alignment model off its zero start (v_a = 0 makes α uniform)
        m.attention.v_a.weight.normal_()
    out = m(**batch())
    plain = m.eval()(**batch()).loss  # eval: argmax locations, no sampling, cross-entropy alone
    assert m.reward_baseline[1] == 1 and torch.isfinite(out.loss)
    out.loss.backward()
    # every context is an annotation, which carries no gradient to α: only REINFORCE reaches W_a, U_a, v_a
    assert m.attention.v_a.weight.grad.abs().sum() > 0 and m.attention.W_a.weight.grad.abs().sum() > 0
    again = m.eval()(**batch()).loss
    assert torch.equal(plain, again)  # deterministic at test time
    assert "reward_baseline" in m.state_dict()
    generated = m.generate(batch()["input_ids"], max_new_tokens=4)
    assert torch.equal(generated, m.generate(batch()["input_ids"], max_new_tokens=4))


def test_a_checkpoint_saved_before_hard_reward_keeps_the_reward_it_was_trained_with():
    from seq2bert import config as config_io
    from seq2bert.models import registry

    saved = config_io.to_dict(model(hard_reward="sequence", reinforce_weight=1.0).config)
    del saved["hard_reward"]  # as config.json was written before the key existed
    family = registry.FAMILIES["bahdanau"]
    assert family.read_config(saved, "config.json").hard_reward == "sequence"
    assert BahdanauConfig().hard_reward == "token"  # a new model gets the new default
    assert family.read_config({**saved, "hard_reward": "token"}, "config.json").hard_reward == "token"


def test_a_soft_model_has_no_alignment_term_and_bad_settings_are_refused():
    soft = model(attention_type="soft").train()
    assert not hasattr(soft, "reward_baseline")
    soft(**batch()).loss.backward()  # the plain cross-entropy
    with pytest.raises(ConfigError, match="attention_type"):
        model(attention_type="sharp")
    with pytest.raises(ConfigError, match="hard_expected_prob"):
        model(hard_expected_prob=1.5)
    with pytest.raises(ConfigError, match="hard_reward"):
        model(hard_reward="sentence")
