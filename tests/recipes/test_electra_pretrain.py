"""ELECTRA pretraining (Clark et al. 2020): `seq2bert pretrain` with model.model_type=electra trains the generator
and the discriminator on replaced token detection — single segments, L_MLM + 50 L_Disc, the held-out metrics of
both networks — and writes the discriminator (ElectraForPreTraining) and the generator (ElectraForMaskedLM,
in generator/) as directories transformers reads with equal outputs; a killed run resumes exactly."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

import seq2bert
from seq2bert.cli import main
from tests.recipes.test_pretrain import TINY, books  # noqa: F401 (a fixture)

ELECTRA = ["--set", "model.model_type=electra", *TINY, "--set", "model.embedding_size=16"]


def test_pretrain_electra_trains_both_networks_and_writes_what_transformers_reads(books, tmp_path):  # noqa: F811
    transformers = pytest.importorskip("transformers")
    assert main(["pretrain", str(books), "--out", str(tmp_path / "a"), *ELECTRA]) == 0
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    assert results["steps"] == 6 and not any(k.startswith(("valid_nsp", "valid_sop")) for k in results)
    for key in (
        "mlm_accuracy",
        "disc_accuracy",
        "disc_replaced_accuracy",
        "disc_original_accuracy",
        "disc_auc",
    ):
        assert 0 <= results[f"valid_{key}"] <= 100, key
    log = [json.loads(line) for line in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log if r["split"] == "train"] == [1, 2, 3, 4, 5, 6]
    for r in (r for r in log if r["split"] == "valid"):  # the valid loss is the objective: L_MLM + 50 L_Disc
        assert r["mlm_loss"] > 0 and r["disc_loss"] > 0
        assert r["loss"] == pytest.approx(r["mlm_loss"] + 50 * r["disc_loss"])
    best = json.loads((tmp_path / "a" / "best" / "trainer_state.json").read_text())
    valid = {r["step"]: r for r in log if r["split"] == "valid"}
    assert best["best"] == min(r["disc_loss"] for r in valid.values())  # best/: the lowest disc_loss

    ids = torch.tensor([[2, 10, 11, 12, 3, 13, 3], [2, 14, 15, 3, 0, 0, 0]])
    mask = (ids != 0).long()
    disc = seq2bert.from_pretrained(tmp_path / "a" / "best")
    assert type(disc).__name__ == "ElectraForPreTraining" and disc.config.hidden_size == 32
    theirs = transformers.ElectraForPreTraining.from_pretrained(tmp_path / "a" / "best").eval()
    with torch.no_grad():
        torch.testing.assert_close(disc(ids, mask).logits, theirs(input_ids=ids, attention_mask=mask).logits,
                                   rtol=0, atol=1e-5)  # fmt: skip
    gen = seq2bert.from_pretrained(tmp_path / "a" / "best" / "generator")
    assert type(gen).__name__ == "ElectraForMaskedLM" and gen.config.hidden_size == 8  # 1/4 of the width
    theirs = transformers.ElectraForMaskedLM.from_pretrained(tmp_path / "a" / "best" / "generator").eval()
    with torch.no_grad():
        torch.testing.assert_close(gen(ids, mask).logits, theirs(input_ids=ids, attention_mask=mask).logits,
                                   rtol=0, atol=1e-5)  # fmt: skip
    # the embeddings are one module of both networks (Sect. 3.1)
    torch.testing.assert_close(gen.electra.embeddings.word_embeddings.weight,
                               disc.electra.embeddings.word_embeddings.weight, rtol=0, atol=0)  # fmt: skip
    assert (tmp_path / "a" / "best" / "generator" / "tokenizer.json").is_file()


TIED = [
    "--set",
    "electra.tie_weights=all",
    "--set",
    "electra.generator_size=1.0",
    "--set",
    "electra.balanced=true",
]


TWO_STAGE = ["--set", "electra.two_stage_steps=3", "--set", "electra.generator_size=1.0"]


@pytest.mark.parametrize("options", [[], TIED, TWO_STAGE], ids=["paper", "tied-balanced", "two-stage"])
def test_a_killed_electra_run_resumes_to_the_weights_of_the_uninterrupted_one(books, tmp_path, options):  # noqa: F811
    for run in ("a", "b"):
        assert main(["pretrain", str(books), "--out", str(tmp_path / run), *ELECTRA, *options]) == 0
    b = tmp_path / "b"
    for name in ("checkpoint-6", "best", "results.json"):  # b stopped after its checkpoint at step 3
        shutil.rmtree(b / name) if (b / name).is_dir() else (b / name).unlink()
    assert main(["pretrain", "--out", str(b), "--resume"]) == 0
    for network in ("", "generator"):
        a6 = load_file(tmp_path / "a" / "checkpoint-6" / network / "model.safetensors")
        b6 = load_file(b / "checkpoint-6" / network / "model.safetensors")
        assert a6.keys() == b6.keys()
        for k in a6:
            assert torch.equal(a6[k], b6[k]), (network, k)
    assert json.loads((tmp_path / "a" / "results.json").read_text())["valid_loss"] == pytest.approx(
        json.loads((b / "results.json").read_text())["valid_loss"], abs=0
    )
    disc = load_file(b / "checkpoint-6" / "model.safetensors")
    gen = load_file(b / "checkpoint-6" / "generator" / "model.safetensors")
    layers = [k for k in gen if ".layer." in k]
    if (
        options == TIED
    ):  # one encoder under both heads: the generator's directory holds the discriminator's layers
        assert layers and all(torch.equal(gen[k], disc[k]) for k in layers)
    if (
        options == TWO_STAGE
    ):  # steps 4-6 trained the discriminator, from the generator of step 3, frozen since
        gen3 = load_file(b / "checkpoint-3" / "generator" / "model.safetensors")
        own = [
            k for k in gen if "embeddings" not in k and k != "generator_lm_head.weight"
        ]  # not the shared ones
        assert layers and [k for k in own if not torch.equal(gen[k], gen3[k])] == []
        assert not any(torch.equal(gen[k], disc[k]) for k in layers if k.endswith("weight"))
        log = [json.loads(line) for line in (b / "log.jsonl").read_text().splitlines()]
        train = {r["step"]: r for r in log if r["split"] == "train"}
        assert train[3]["loss"] < 10 < train[4]["loss"]  # L_MLM alone, then L_MLM + 50 L_Disc


@pytest.mark.parametrize(
    "setting, message",
    [
        (
            "electra.generator_size=2",
            "electra.generator_size: a fraction of the discriminator's width in (0, 1]",
        ),
        ("electra.generator_size=0", "electra.generator_size"),
        ("electra.disc_weight=0", "electra.disc_weight: must be > 0"),
        (
            "electra.tie_weights=all",
            "electra.tie_weights=all: the generator shares the discriminator's encoder",
        ),
        ("electra.tie_weights=some", "electra.tie_weights"),
        (
            "electra.two_stage_steps=3",
            "electra.two_stage_steps: the discriminator starts from the generator's",
        ),
        ("electra.two_stage_steps=-1", "electra.two_stage_steps: a number of steps >= 0"),
        ("train.average_last=2", "train.average_last: ELECTRA's pair is not averaged"),
    ],
)
def test_bad_electra_settings_are_one_line_errors(books, tmp_path, capsys, setting, message):  # noqa: F811
    assert main(["pretrain", str(books), "--out", str(tmp_path / "x"), *ELECTRA, "--set", setting]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_electra_reads_bert_pairs_when_asked_and_ignores_their_labels(books, tmp_path):  # noqa: F811
    short = [
        *ELECTRA,
        "--set",
        "train.max_steps=2",
        "--set",
        "train.eval_every=2",
        "--set",
        "data.sentence_task=nsp",
    ]
    assert main(["pretrain", str(books), "--out", str(tmp_path / "p"), *short]) == 0
    results = json.loads((tmp_path / "p" / "results.json").read_text())
    assert results["steps"] == 2 and "valid_nsp_accuracy" not in results
    assert results["valid_loss"] == pytest.approx(results["valid_mlm_loss"] + 50 * results["valid_disc_loss"])


def test_the_discriminators_ranking_auc_counts_the_pairs_it_orders():
    """ROC AUC = the share of (replaced, original) pairs whose replaced token scores higher: here 3 of 4."""
    from seq2bert.recipes.pretrain_electra import ranking_auc

    scores, replaced = torch.tensor([0.1, 0.4, 0.35, 0.8]), torch.tensor([0, 0, 1, 1])
    assert ranking_auc(scores, replaced) == pytest.approx(75.0)
    assert ranking_auc(-scores, replaced) == pytest.approx(25.0)
    assert ranking_auc(scores, torch.zeros(4, dtype=torch.long)) == 50.0  # one class: no pair to order
