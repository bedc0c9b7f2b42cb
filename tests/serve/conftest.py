"""Tiny checkpoint directories of every kind a server holds: a BERT pretraining run (fill-mask, embed,
attention), its three fine-tuned task shapes (classify, tag, qa), a Transformer translation run and a GPT-2
language model; and the app serving them all."""

import pytest
import torch

from seq2bert import config as C
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.model import BertForPreTraining
from seq2bert.models.bert.pretrained import save_bert
from seq2bert.models.bert.tasks import (
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)
from seq2bert.models.gpt.config import gpt2_tiny
from seq2bert.models.gpt.heads import GPT2LMHeadModel
from seq2bert.recipes.translation import TranslationConfig, train

WORDS = "the a of on in and to was is it this that film story movie great awful paris john lives".split()
TRANSLATION = ["model.model_type=transformer", "data.task=reverse", "data.num_train=60", "data.num_valid=8",
               "data.num_test=4", "data.min_len=2", "data.max_len=5", "data.num_symbols=8", "data.max_tokens=200",
               "model.dropout=0.0", "train.max_steps=1", "train.eval_every=1", "train.log_every=1",
               "train.bf16=false", "model.d_model=8", "model.encoder_ffn_dim=8", "model.decoder_ffn_dim=8",
               "model.encoder_layers=1", "model.decoder_layers=2", "model.encoder_attention_heads=2",
               "model.decoder_attention_heads=2"]  # fmt: skip


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory) -> dict:
    """{name: directory}: pretrained, sequence, tokens, qa (BERT), translation, gpt."""
    root = tmp_path_factory.mktemp("serve")
    corpus = root / "words.txt"
    corpus.write_text("\n".join(" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))) + "\n")
    tok = Tokenizer.train([corpus], kind="wordpiece", vocab_size=90, lowercase=True)
    torch.manual_seed(0)
    size = dict(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=16, max_position_embeddings=64)  # fmt: skip
    heads = {
        "pretrained": BertForPreTraining(BertConfig(**size)),
        "sequence": BertForSequenceClassification(BertConfig(**size, id2label={0: "neg", 1: "pos"})),
        "tokens": BertForTokenClassification(BertConfig(**size, id2label={0: "O", 1: "B-LOC", 2: "I-LOC"})),
        "qa": BertForQuestionAnswering(BertConfig(**size)),
    }
    out = {}
    for name, model in heads.items():
        save_bert(model, root / name, tok)
        out[name] = root / name
    train(C.build(TranslationConfig, overrides=TRANSLATION), root / "translation", progress_bar=False)
    out["translation"] = root / "translation"
    gpt_tok = Tokenizer.train([corpus], kind="bytelevel-bpe", vocab_size=300, min_frequency=1)
    eot = gpt_tok.eos_token_id
    gpt = GPT2LMHeadModel(
        gpt2_tiny(vocab_size=gpt_tok.vocab_size, bos_token_id=eot, eos_token_id=eot, n_positions=48)
    )
    gpt.save_pretrained(root / "gpt", tokenizer=gpt_tok)
    out["gpt"] = root / "gpt"
    return out


@pytest.fixture(scope="session")
def served(checkpoints):
    from seq2bert.serve import ServedModel

    return [ServedModel.load(name, path) for name, path in checkpoints.items()]


def client_of(models, **settings):
    from fastapi.testclient import TestClient

    from seq2bert.serve.app import Settings, create_app

    return TestClient(create_app(models, Settings(**settings)))


@pytest.fixture
def client(served):
    with client_of(served) as c:
        yield c


def live_server(models, **settings):
    """A context manager: the app serving ``models`` on a free loopback port in a thread (uvicorn, as the
    command runs it: serve/server.py), its URL."""
    import contextlib
    import threading
    import time

    from seq2bert.serve.app import Settings, create_app

    @contextlib.contextmanager
    def running():
        from seq2bert.serve.server import bind, server_of

        sock = bind("127.0.0.1", 0)  # a free port, with the command's limits on slow clients
        port = sock.getsockname()[1]
        server = server_of(create_app(models, Settings(**settings)), Settings(**settings))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.05)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(10)
            sock.close()

    return running()


CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium from the system's packages, driven by Playwright (nothing downloads a browser)."""
    import os

    binary = next((b for b in CHROMIUM if os.path.exists(b)), None)
    if os.environ.get("SEQ2BERT_REQUIRE_BROWSER") == "1":  # CI: a missing browser is a failure, not a skip
        assert binary is not None, "no Chromium installed (apt-get install chromium)"
        from playwright import sync_api
    else:
        sync_api = pytest.importorskip("playwright.sync_api")
        if binary is None:
            pytest.skip("no Chromium installed (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=binary, args=["--no-sandbox"])
        yield b
        b.close()
