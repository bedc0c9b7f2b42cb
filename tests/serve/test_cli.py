"""`seq2bert serve` as a user starts it: models named after their directories (or NAME=DIR), a mistake in
the arguments a one-line error, and a real server process answering over the loopback until stopped."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from seq2bert.cli import main
from seq2bert.errors import UserError
from seq2bert.serve import model_names

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")


def test_models_are_named_after_their_runs(tmp_path):
    assert model_names(["runs/sst2/best", "runs/minilm", "nice=runs/conll/best"]) == [
        ("sst2", "runs/sst2/best"), ("minilm", "runs/minilm"), ("nice", "runs/conll/best")]  # fmt: skip
    with pytest.raises(UserError, match="a second model named 'sst2'"):
        model_names(["runs/sst2/best", "other/sst2"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["serve", "/no/such/dir"], "/no/such/dir"),
        (["serve", "X", "--max-batch-size", "0"], "--max-batch-size: at least 1"),
        (["serve", "X", "--timeout", "0"], "--timeout: more than 0"),
    ],
)
def test_mistakes_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]


def test_the_command_serves_until_stopped(checkpoints):
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "seq2bert.cli", "serve", f"sentiment={checkpoints['sequence']}", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        r = httpx.post(f"http://127.0.0.1:{port}/v1/classify", json={"texts": ["the film was great"]})
        assert r.status_code == 200 and r.json()["model"] == "sentiment"
        assert r.json()["results"][0]["label"] in ("neg", "pos")
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    assert "sentiment:" in out and "serving classify, embed, attention" in out
