"""Screenshots of the page of `seq2bert serve`, one per pipeline, for the README and docs/img/.

Starts `seq2bert serve` on a free loopback port with the given checkpoints, opens its page in the system's
headless Chromium (apt-get install chromium; driven by Playwright, nothing downloads a browser), and for each
pipeline the served models offer: opens its tab, picks the model named for it (else the first that serves it),
runs the page's own example input, waits for the answer and saves the tab as docs/img/serve-PIPELINE.png.

    python docs/screenshots.py minilm=$MINILM sst2=runs/cmp/ft-knowledge-sst2/best \\
        conll=runs/cmp/ft-knowledge-conll/best --pick embed=minilm --pick attention=minilm
    python docs/screenshots.py m30k=runs/m30k-transformer/best squad=runs/minilm-squad-bf16/best \
        gpt=runs/gpt-mini/best --only translate,qa,generate
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


@contextlib.contextmanager
def serving(models: list[str]):
    """`seq2bert serve MODELS…` on a free loopback port, until the block ends; its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [str(Path(sys.executable).with_name("seq2bert")), "serve", *models, "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.monotonic() + 300  # real checkpoints take a while to load
        while True:
            if server.poll() is not None:
                raise SystemExit(f"seq2bert serve stopped: {server.stderr.read().strip()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise SystemExit("seq2bert serve did not answer /health in 5 minutes")
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+", metavar="NAME=DIR", help="the checkpoints to serve")
    p.add_argument("--pick", action="append", default=[], metavar="PIPELINE=NAME",
                   help="the model a pipeline's screenshot uses (default: the first that serves it)")  # fmt: skip
    p.add_argument("--only", default="", metavar="PIPELINE,…",
                   help="the pipelines to photograph (default: every one the models serve)")  # fmt: skip
    p.add_argument("--out", type=Path, default=Path(__file__).with_name("img"))
    args = p.parse_args()
    only = set(filter(None, args.only.split(",")))
    picks = dict(pick.split("=", 1) for pick in args.pick)
    binary = next((b for b in CHROMIUM if os.path.exists(b)), None)
    if binary is None:
        raise SystemExit("no Chromium installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with serving(args.models) as url, sync_playwright() as pw:
        import httpx

        offered = {p for m in httpx.get(url + "/v1/models").json()["models"] for p in m["pipelines"]}
        browser = pw.chromium.launch(executable_path=binary, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 480})
        page.goto(url + "/")
        page.wait_for_selector("nav button")
        for pipeline in page.locator("nav button").all_inner_texts():
            if pipeline not in offered or (only and pipeline not in only):
                continue
            page.click(f"#tab-{pipeline}")
            if pipeline in picks:
                page.select_option(f"#{pipeline} select.model", picks[pipeline])
            page.click(f"#{pipeline}-run")
            page.wait_for_selector(f"#{pipeline}-output[data-state]", timeout=120_000)
            if pipeline == "attention":
                page.wait_for_selector("#attention-output table.heat", timeout=60_000)
            path = args.out / f"serve-{pipeline}.png"
            page.screenshot(path=str(path), full_page=True)
            print(path)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
