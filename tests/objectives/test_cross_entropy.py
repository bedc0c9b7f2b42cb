import torch

from seq2bert.objectives.cross_entropy import IGNORE_INDEX, sequence_cross_entropy


def test_label_smoothing_matches_its_definition():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 5)
    labels = torch.tensor([[1, 2, IGNORE_INDEX], [0, 4, 3]])
    eps = 0.1
    logp = logits.log_softmax(-1)
    keep = labels.ne(IGNORE_INDEX)
    nll = -logp[keep].gather(1, labels[keep][:, None]).squeeze(1)
    uniform = -logp[keep].mean(-1)
    expected = ((1 - eps) * nll + eps * uniform).mean()
    torch.testing.assert_close(sequence_cross_entropy(logits, labels, label_smoothing=eps), expected)
    torch.testing.assert_close(sequence_cross_entropy(logits, labels), nll.mean())
