"""A corpus larger than the memory it may use: 2 GB of generated text are prepared and pretrained on with
the peak resident memory of the whole `seq2bert pretrain` process under 1 GB (heavy tier: about 25 minutes;
`pytest -m heavy`). What is measured is the corpus's share: the batch is 8 because the model's own working
memory — the masked-LM logits, masked positions × 30,522 words, and their gradients: a training step at
batch 32 adds about 400 MB — grows with the batch, not with the corpus (torch alone is about 220 MB)."""

import subprocess
import sys

import numpy as np
import pytest

GB = 1 << 30


def write_corpus(root, total_bytes, files=16, seed=0):
    """Documents of sentences of random words (a Zipf-like vocabulary), blank lines between documents."""
    rng = np.random.default_rng(seed)
    vocab = np.array([w for w in "the of and a to in is was he for it with as his on be at by had are but from or "
                      "she an they which you one were all we her would there their will when who him been has more "
                      "if no out so said what up its about into than them can only other new some could time "
                      "these two may then do first any my now such like our over man me even most made after also "
                      "did many before must through back years where much your way well down should because each "
                      "just those people how too little state good very make world still own see men work long "
                      "get here between both life being under never day same another know while last might us "
                      "great old year off come since against go came right used take three".split()])  # fmt: skip
    per_file = total_bytes // files
    for f in range(files):
        with open(root / f"part{f:02d}.txt", "w") as out:
            written = 0
            while written < per_file:
                words = vocab[np.minimum(rng.zipf(1.3, 200_000), len(vocab)) - 1]
                lengths = rng.integers(5, 25, size=20_000)
                cuts = np.cumsum(lengths)
                sentences = [
                    " ".join(words[a:b]).capitalize() + "."
                    for a, b in zip(cuts[:-1], cuts[1:], strict=True)
                    if b <= len(words)
                ]
                paragraphs = [" ".join(sentences[i : i + 8]) for i in range(0, len(sentences), 8)]
                text = "\n\n".join(paragraphs) + "\n\n"
                out.write(text)
                written += len(text)


@pytest.mark.heavy
def test_two_gigabytes_prepare_and_train_in_under_one_gigabyte(tmp_path, minilm_dir):
    text = tmp_path / "text"
    text.mkdir()
    write_corpus(text, 2 * GB)
    assert sum(f.stat().st_size for f in text.iterdir()) >= 2 * GB
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "seq2bert.cli", "pretrain", str(text), "--out", str(out),
           "--set", f"data.tokenizer={minilm_dir / 'vocab.txt'}", "--set", "model.num_hidden_layers=2",
           "--set", "model.hidden_size=128", "--set", "model.num_attention_heads=2",
           "--set", "model.intermediate_size=512", "--set", "train.max_steps=20", "--set", "train.eval_every=20",
           "--set", "data.max_valid_instances=64", "--set", "data.valid_fraction=0.0001",
           "--set", "data.batch_size=8"]  # fmt: skip
    # the peak resident set of that very process, read by itself as it exits
    wrapper = ("import resource, runpy, sys\nsys.argv = sys.argv[1:]\ntry:\n    runpy.run_module('seq2bert.cli', "
               "run_name='__main__')\nexcept SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
               "print('MAXRSS_KIB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\nsys.exit(code)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", wrapper, *cmd[2:]], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    peak_kib = int(done.stdout.split("MAXRSS_KIB")[1].split()[0])
    print(f"peak RSS of seq2bert pretrain on 2 GB: {peak_kib / 1024:.0f} MiB")
    assert peak_kib * 1024 < GB
    info = (out / "corpus" / "corpus.json").read_text()
    assert '"tokens"' in info and (out / "checkpoint-20" / "model.safetensors").is_file()
