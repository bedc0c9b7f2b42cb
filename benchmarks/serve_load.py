"""A load test of `seq2bert serve` on the loopback: throughput and latency with and without dynamic batching,
every answer checked against the offline pipeline, the server's memory sampled, and an overloaded queue.

For each mode the server is started as its own process (`python -m seq2bert.cli serve …`, on a free
loopback port) and ``--clients`` concurrent clients each send ``--requests`` requests of one SST-2 sentence,
alternately to /v1/classify (CLASSIFIER) and /v1/embed (ENCODER). The run is bounded in requests and in
time (``--max-seconds``) and stops by itself.

    batched      --max-batch-size 32 --max-wait-ms 5 (the defaults)
    unbatched    --max-batch-size 1 --max-wait-ms 0: each request runs alone
    overloaded   --max-queue 4: 4 × ``--clients`` clients at once; the 503s counted, then /health and one
                 request must still answer

Each answer is compared with the offline pipeline's for the same sentence (computed here first, one
sentence at a time): the same label with every label's probability within 1e-3, and embeddings with cosine
≥ 0.9999 — in fp32; a bf16 server (the default where the CPU computes bf16 natively) within 0.05 and 0.999
(``tolerance``). Labels must be equal in both: the classify pipeline decides a bf16 near-tie again in fp32
(pipelines/tasks.py, BF16_TIE), so a sentence's label does not depend on the batch it was served in. The
table gives requests/s, latency p50/p95/p99, lost requests (no answer or an error status), wrong answers,
and the server's resident memory at start, halfway through, at its highest and at the end.

    python benchmarks/serve_load.py CLASSIFIER ENCODER                       # 16 clients × 200 requests
    python benchmarks/serve_load.py runs/students/teacher-sst2/best $MINILM --clients 16 --requests 200
    python benchmarks/serve_load.py C E --clients 4 --requests 10 --quick    # CI's size
    python benchmarks/serve_load.py C E --rounds 4     # the batched load 4 times over: is memory flat?

The clients run in this process (asyncio, httpx) on the same 2 cores as the server: the figures are for
both together, as a machine serving itself sees them.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sst2" / "dev.tsv"
FALLBACK = ["a gripping , funny film", "a tedious , joyless exercise", "the acting is superb",
            "it never finds its footing", "one of the year 's best", "dull and overlong"]  # fmt: skip


def sentences(path: Path, limit: int) -> list[str]:
    if not path.is_file():
        print(f"{path}: not found; using {len(FALLBACK)} built-in sentences")
        return FALLBACK
    with path.open(encoding="utf-8") as f:
        return [row["sentence"] for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)][:limit]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Server:
    """`seq2bert serve` in its own process; its memory sampled every 0.2 s while it runs."""

    def __init__(self, models: list[str], *options: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "seq2bert.cli", "serve", *models, "--port", str(self.port), *options]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.memory: list[float] = []
        self.sampling = True

    def wait(self, timeout: float = 300) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(self.url + "/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not start:\n{self.process.stdout.read()}")
            time.sleep(0.2)
        threading.Thread(target=self.sample, daemon=True).start()

    def sample(self) -> None:
        while self.sampling and self.process.poll() is None:
            self.memory.append(rss_mb(self.process.pid))
            time.sleep(0.2)

    def stop(self) -> None:
        self.sampling = False
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()


async def load(url: str, texts: list[str], clients: int, requests: int, max_seconds: float) -> dict:
    """``clients`` concurrent clients × ``requests`` requests; per request (pipeline, sentence index,
    status, answer, seconds)."""
    import httpx

    done: list[tuple] = []
    stop_at = time.monotonic() + max_seconds

    async def client(c: int, http: httpx.AsyncClient) -> None:
        for r in range(requests):
            if time.monotonic() > stop_at:
                return
            i = (c * requests + r) % len(texts)
            pipeline = "classify" if (c + r) % 2 == 0 else "embed"
            start = time.perf_counter()
            try:
                reply = await http.post(
                    f"/v1/{pipeline}", json={"model": pipeline, "texts": [texts[i]], **OPTIONS[pipeline]}
                )
                status, body = reply.status_code, reply.json()
            except httpx.HTTPError as e:
                status, body = 0, {"error": repr(e)}
            done.append((pipeline, i, status, body, time.perf_counter() - start))

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:
        start = time.perf_counter()
        await asyncio.gather(*(client(c, http) for c in range(clients)))
        seconds = time.perf_counter() - start
    return {"done": done, "seconds": seconds}


# every label's probability, best first, to compare with the offline answer (judge)
OPTIONS = {"classify": {"top_k": None}, "embed": {}}


def tolerance() -> tuple[float, float]:
    """How far a served answer may be from the offline one — (a label's probability, an embedding's cosine) —
    in the precision the server runs by default. fp32: 1e-3 and 0.9999. bf16 (where the CPU computes it
    natively): a sentence padded inside a batch rounds differently from the sentence alone, and bf16 keeps 8
    significant bits, so a logit of 5 carries ±0.02 and a probability p moves by p(1 - p) times that through
    six layers — up to 0.018 on SST-2 dev (all-MiniLM-L6-v2 fine-tuned, batches of 64 against the sentence
    alone): 0.05, and the cosine the issue holds bf16 embeddings to, 0.999."""
    import torch

    from seq2bert.precision import native_bf16

    return (0.05, 0.999) if native_bf16(torch.device("cpu")) else (1e-3, 0.9999)


def memory(samples: list[float]) -> tuple[float, float, float, float]:
    """The server's resident MB at start, halfway through the run, at its highest and at the end: flat memory
    is halfway ≈ end (the first batches' buffers are allocated by then)."""
    return samples[0], samples[len(samples) // 2], max(samples), samples[-1]


def judge(pipeline: str, got, want, score_tol: float, cosine_tol: float) -> bool:
    """Whether one served answer is wrong against the offline one. A classification is every label's
    probability (``top_k`` null, best first): wrong when the best label differs or a probability is off by more
    than ``score_tol``. An embedding is wrong when its cosine is below ``cosine_tol``."""
    import torch

    if pipeline == "classify":
        if isinstance(want, dict):  # a regression model: one value, no labels to list
            got, want = [got], [want]
        served, offline = ({d["label"]: d["score"] for d in answer} for answer in (got, want))
        return (
            got[0]["label"] != want[0]["label"]
            or served.keys() != offline.keys()
            or any(abs(served[k] - p) > score_tol for k, p in offline.items())
        )
    cosine = torch.nn.functional.cosine_similarity(torch.tensor(got), torch.as_tensor(want), dim=0)
    return float(cosine) < cosine_tol


def check(result: dict, expected: dict) -> dict:
    """Throughput, latency percentiles, lost and wrong answers (``judge``) of one load run."""
    ok = [d for d in result["done"] if d[2] == 200]
    score_tol, cosine_tol = tolerance()
    wrong = sum(
        judge(pipeline, body["results"][0] if pipeline == "classify" else body["embeddings"][0],
              expected[pipeline][i], score_tol, cosine_tol)
        for pipeline, i, _, body, _ in ok
    )  # fmt: skip
    latencies = sorted(d[4] * 1000 for d in ok) or [float("nan")]
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    return {"requests": len(result["done"]), "ok": len(ok), "per_s": len(ok) / result["seconds"],
            "p50": q[49], "p95": q[94], "p99": q[98], "wrong": wrong,
            "refused": sum(d[2] == 503 for d in result["done"]),
            "lost": sum(d[2] not in (200, 503) for d in result["done"])}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("classifier", help="a fine-tuned sequence classifier (served as model 'classify')")
    p.add_argument("encoder", help="an encoder for embeddings (served as model 'embed')")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--requests", type=int, default=200, help="requests per client")
    p.add_argument("--max-seconds", type=float, default=600, help="each load run stops by this time")
    p.add_argument("--sentences", type=Path, default=DATA)
    p.add_argument("--quick", action="store_true", help="skip the overload run's second pass (CI)")
    p.add_argument("--rounds", type=int, default=1,
                   help="batched: run the load this many times on the same server, its memory after each")  # fmt: skip
    args = p.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")

    import torch

    import seq2bert.pipelines as pl

    texts = sentences(args.sentences, args.clients * args.requests)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}; "
          f"{args.clients} clients × {args.requests} requests, {len(texts)} distinct sentences")  # fmt: skip
    expected = {"classify": [pl.classify([t], args.classifier, top_k=None)[0] for t in texts],
                "embed": [pl.embed([t], args.encoder)[0] for t in texts]}  # fmt: skip
    models = [f"classify={args.classifier}", f"embed={args.encoder}"]
    modes = {"batched": [], "unbatched": ["--max-batch-size", "1", "--max-wait-ms", "0"]}
    rows = {}
    for mode, options in modes.items():
        server = Server(models, *options)
        server.wait()
        try:
            result = asyncio.run(load(server.url, texts, args.clients, args.requests, args.max_seconds))
            for r in range(1, args.rounds if mode == "batched" else 1):  # the same server, again
                more = asyncio.run(load(server.url, texts, args.clients, args.requests, args.max_seconds))
                result = {
                    "done": result["done"] + more["done"],
                    "seconds": result["seconds"] + more["seconds"],
                }
                print(f"batched, after round {r + 1} of {args.rounds}: {len(result['done'])} requests, server "
                      f"memory {server.memory[-1]:.0f} MB (highest {max(server.memory):.0f})", flush=True)  # fmt: skip
        finally:
            server.stop()
        rows[mode] = {
            **check(result, expected),
            "memory": memory(server.memory),
        }
    server = Server(models, "--max-queue", "4")
    server.wait()
    try:
        result = asyncio.run(
            load(server.url, texts, 4 * args.clients, max(2, args.requests // 4), args.max_seconds)
        )
        import httpx

        healthy = httpx.get(server.url + "/health").json()["status"] == "ok"
        after = httpx.post(
            server.url + "/v1/classify",
            json={"model": "classify", "texts": [texts[0]], **OPTIONS["classify"]},
        )
        healthy &= after.status_code == 200 and not judge(
            "classify", after.json()["results"][0], expected["classify"][0], *tolerance()
        )
    finally:
        server.stop()
    rows["overloaded"] = {
        **check(result, expected),
        "memory": memory(server.memory),
    }

    score_tol, cosine_tol = tolerance()
    print(f"\nwrong: a label changed, a label's probability off by more than {score_tol:g} or an embedding's "
          f"cosine below {cosine_tol:g}, against the offline pipeline's answer for the sentence alone")  # fmt: skip
    print("\n| mode | requests | answered | refused (503) | lost | wrong | requests/s | p50 ms | p95 ms | p99 ms "
          "| server memory MB (start / halfway / max / end) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for mode, r in rows.items():
        m = r["memory"]
        print(f"| {mode} | {r['requests']} | {r['ok']} | {r['refused']} | {r['lost']} | {r['wrong']} "
              f"| {r['per_s']:.1f} | {r['p50']:.0f} | {r['p95']:.0f} | {r['p99']:.0f} "
              f"| {m[0]:.0f} / {m[1]:.0f} / {m[2]:.0f} / {m[3]:.0f} |")  # fmt: skip
    ratio = rows["batched"]["per_s"] / rows["unbatched"]["per_s"]
    print(f"\ndynamic batching: {ratio:.2f}x the requests/s of one request at a time; after the overload the "
          f"server is {'healthy' if healthy else 'NOT healthy'}")  # fmt: skip
    failed = any(r["lost"] or r["wrong"] for r in rows.values()) or not healthy
    failed |= rows["overloaded"]["refused"] == 0  # the bounded queue must have refused some
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
