"""seq2bert serve and the attention maps, bounded: every kind of model a server holds answers every endpoint
with 2xx or 4xx (never a 500), /v1/models lists only what each model serves and no absolute path, an
attention map shows at most max_tokens tokens and an answer past the server's budget is refused 413 before
it is built, a JSON body is read whatever its Content-Type, a bad port or host is one line, and slow
clients are timed out and counted."""

import json
import logging
import re
import socket
import time

import pytest
import torch

from seq2bert import config as C
from seq2bert.cli import main
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.model import BertModel
from seq2bert.models.bert.pretrained import save_bert
from seq2bert.models.bilstm.config import BiLSTMConfig
from seq2bert.models.bilstm.model import BiLSTMForSequenceClassification
from seq2bert.models.gpt.config import gpt2_tiny
from seq2bert.models.gpt.heads import GPT2ForSequenceClassification, GPT2LMHeadModel
from seq2bert.recipes.decoder_tasks import decoder_inputs
from seq2bert.recipes.translation import TranslationConfig, train
from seq2bert.viz.inspect import attention_maps
from tests.reliability.conftest import POSITIONS, TINY, WORDS, one_line

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

LONG = ("the film was great " * 600)[:9_999]  # within the server's 10,000 characters, past every model


@pytest.fixture(scope="module")
def kinds(bert_runs, translation_runs, tmp_path_factory) -> dict:
    """{name: directory} of every kind of model a server holds, tiny and random."""
    root = tmp_path_factory.mktemp("kinds")
    corpus = root / "words.txt"
    corpus.write_text("\n".join(" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))) + "\n")
    out = {name: run / "best" for name, run in bert_runs.items()}  # fill-mask, classify, tag, qa
    out.update(translation_runs)  # bahdanau (one attention layer), transformer
    sizes = ["model.embedding_dim=8", "model.hidden_size=8", "model.num_layers=1"]
    seq2seq = C.build(TranslationConfig, overrides=["model.model_type=seq2seq", *TINY, *sizes])
    train(seq2seq, root / "seq2seq", progress_bar=False)  # a fixed vector: no attention
    out["seq2seq"] = root / "seq2seq"

    torch.manual_seed(0)
    tok = Tokenizer.train([corpus], kind="wordpiece", vocab_size=80, lowercase=True)
    bert = BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=16, max_position_embeddings=POSITIONS))  # fmt: skip
    save_bert(bert, root / "embedder", tok)  # a sentence-transformers directory: mean pooling, normalised
    (root / "embedder" / "1_Pooling").mkdir()
    (root / "embedder" / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 16, "pooling_mode_mean_tokens": True})
    )
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]  # fmt: skip
    (root / "embedder" / "modules.json").write_text(json.dumps(modules))
    out["embedder"] = root / "embedder"

    gpt_tok = Tokenizer.train([corpus], kind="bytelevel-bpe", vocab_size=300, min_frequency=1)
    eot = gpt_tok.eos_token_id
    size = dict(vocab_size=gpt_tok.vocab_size, bos_token_id=eot, eos_token_id=eot, n_positions=POSITIONS)
    GPT2LMHeadModel(gpt2_tiny(**size)).save_pretrained(root / "gpt", tokenizer=gpt_tok)
    out["gpt"] = root / "gpt"
    classifier = GPT2ForSequenceClassification(
        gpt2_tiny(**size, pad_token_id=eot, id2label={0: "neg", 1: "pos"})
    )
    task_tok = decoder_inputs(
        classifier, gpt_tok, "classification"
    )  # GPT-1's [start], [delim], [extract] (Sect. 3.3)
    classifier.save_pretrained(root / "gpt-classifier", tokenizer=task_tok)
    out["gpt-classifier"] = root / "gpt-classifier"

    words = Tokenizer.train([corpus], kind="word", min_frequency=1)
    bilstm = BiLSTMForSequenceClassification(
        BiLSTMConfig(vocab_size=words.vocab_size, id2label={0: "neg", 1: "pos"})
    )
    bilstm.save_pretrained(root / "bilstm", tokenizer=words)
    out["bilstm"] = root / "bilstm"
    return out


@pytest.fixture(scope="module")
def served(kinds):
    from seq2bert.serve import ServedModel

    return [ServedModel.load(name, path) for name, path in kinds.items()]


def client_of(models, **settings):
    from fastapi.testclient import TestClient

    from seq2bert.serve.app import Settings, create_app

    return TestClient(create_app(models, Settings(**settings)), raise_server_exceptions=False)


# every endpoint's bodies: valid ones, and awkward ones a careless client sends
BODIES = {
    "classify": [{"texts": ["the film was great"]}, {"texts": [["the film", "a story"]], "top_k": None},
                 {"texts": [LONG, "a"]}],
    "embed": [{"texts": ["the film"]}, {"texts": [LONG], "normalize": True}],
    "translate": [{"texts": ["a b c"]}, {"texts": ["a b c", "d"], "alignment": True},
                  {"texts": [LONG], "num_beams": 2, "alignment": True}],
    "tag": [{"text": "john lives in paris"}, {"text": LONG, "aggregate": False}],
    "fill-mask": [{"text": "the [MASK] was great"}, {"text": "no mask"}, {"text": "[MASK] [MASK] " + LONG[:9000]}],
    "qa": [{"question": "who lives in paris", "context": "john lives in paris"},
           {"question": LONG, "context": LONG, "max_answer_length": 512}],
    "generate": [{"prompt": "the film", "max_new_tokens": 3}, {"prompt": "", "max_new_tokens": 3},
                 {"prompt": LONG, "max_new_tokens": 2}, {"prompt": "a", "num_beams": 2, "max_new_tokens": 2}],
    "attention": [{"text": "the film"}, {"text": "the film", "pair": "a story"},
                  {"text": LONG, "max_tokens": 512}, {"text": "a b", "layer": -1}, {"text": "a b", "layer": 7},
                  {"text": "a b c", "pair": "d", "max_tokens": 1}],
}  # fmt: skip
SERVES = {  # what each kind lists, and so must answer 200 to its first, plain body
    "pretrained": ["fill-mask", "embed", "attention"],
    "sequence": ["classify", "embed", "attention"],
    "tokens": ["tag", "embed", "attention"],
    "qa": ["qa", "embed", "attention"],
    "bahdanau": ["translate", "attention"],
    "transformer": ["translate", "attention"],
    "seq2seq": ["translate"],  # no attention to show or align
    "embedder": ["embed", "attention"],
    "gpt": ["generate"],
    "gpt-classifier": ["classify"],
    "bilstm": ["classify", "embed"],  # a BiLSTM has no attention weights
}


def test_every_model_kind_answers_every_endpoint_without_a_500(served, kinds, tmp_path_factory):
    with client_of(served) as c:
        listed = {m["name"]: m for m in c.get("/v1/models").json()["models"]}
        assert {name: m["pipelines"] for name, m in listed.items()} == SERVES
        for m in listed.values():  # no absolute path
            assert (
                not m["directory"].startswith("/")
                and str(tmp_path_factory.getbasetemp()) not in m["directory"]
            )
        seen = {}
        for name in kinds:
            for pipeline, bodies in BODIES.items():
                for i, body in enumerate(bodies):
                    r = c.post(f"/v1/{pipeline}", json={"model": name, **body})
                    seen[name, pipeline, i] = r.status_code
                    assert r.status_code < 500, (name, pipeline, body, r.text[:300])
                    assert "Traceback" not in r.text and str(tmp_path_factory.getbasetemp()) not in r.text
                    if r.status_code >= 400:
                        assert set(r.json()) == {"error"} and r.json()["error"]
                    if pipeline not in SERVES[name]:
                        assert r.status_code == 404 and "does not serve" in r.json()["error"]
                    elif i == 0:
                        assert r.status_code == 200, (name, pipeline, r.text[:300])
    # the awkward bodies: each refused where it is a mistake, answered where it is not
    assert seen["seq2seq", "translate", 1] == 422  # alignment of a model without attention
    assert seen["bahdanau", "translate", 1] == seen["transformer", "translate", 2] == 200
    assert seen["transformer", "attention", 1] == 422  # a pair: a translation model reads one text
    assert seen["pretrained", "attention", 2] == 200 and seen["pretrained", "attention", 4] == 422
    assert seen["pretrained", "attention", 5] == 422
    assert seen["pretrained", "fill-mask", 1] == 422 and seen["gpt", "generate", 1] == 200


def test_a_seq2seq_alignment_and_attention_are_refused_with_their_reason(served):
    with client_of(served) as c:
        r = c.post("/v1/translate", json={"model": "seq2seq", "texts": ["a b"], "alignment": True})
        assert r.status_code == 422 and "seq2seq" in r.json()["error"] and "no attention" in r.json()["error"]
        r = c.post("/v1/attention", json={"model": "seq2seq", "text": "a b"})
        assert r.status_code == 404 and "serves: translate" in r.json()["error"]
        r = c.post("/v1/attention", json={"model": "bilstm", "text": "a b"})
        assert r.status_code == 404 and "serves: classify, embed" in r.json()["error"]


def test_paths_are_shown_only_when_asked(served, kinds):
    with client_of(served, show_paths=True) as c:
        listed = {m["name"]: m["directory"] for m in c.get("/v1/models").json()["models"]}
    assert listed["gpt"] == str(kinds["gpt"].resolve())
    with client_of(served) as c:
        listed = {m["name"]: m["directory"] for m in c.get("/v1/models").json()["models"]}
    assert listed["gpt"] == f"…/{kinds['gpt'].parent.name}/gpt"


def weights_of(answer: dict) -> list[float]:
    """Every weight of an attention answer, as the JSON holds it."""

    def flat(x):
        return [y for z in x for y in flat(z)] if isinstance(x, list) else [x]

    return flat([k["layers"] for k in answer["kinds"].values()])


def test_an_attention_answer_is_cut_to_max_tokens_and_rounded(served, kinds):
    with client_of(served) as c:
        r = c.post("/v1/attention", json={"model": "embedder", "text": LONG, "max_tokens": 6})
        kind = r.json()["kinds"]["encoder"]
        assert r.status_code == 200 and len(kind["query_tokens"]) == 6 and kind["query_tokens"][0] == "[CLS]"
        assert torch.tensor(kind["layers"]).shape == (2, 2, 6, 6)
        assert all(x == round(x, 3) for x in weights_of(r.json()))  # three decimals
        assert re.search(r"\d\.\d{4}", r.text) is None
        expected = attention_maps(str(kinds["embedder"]), LONG, max_tokens=6).layers["encoder"][0]
        assert torch.allclose(torch.tensor(kind["layers"][0]), expected, atol=5e-4 + 1e-7)  # rounding's bound
        r = c.post("/v1/attention", json={"model": "transformer", "text": "s " * 50, "max_tokens": 4})
        kinds_ = r.json()["kinds"]
        assert len(kinds_["encoder"]["query_tokens"]) == 4 and len(kinds_["cross"]["key_tokens"]) == 4
        assert len(kinds_["cross"]["query_tokens"]) <= 4
        r = c.post("/v1/attention", json={"model": "embedder", "text": "a", "max_tokens": 513})
        assert r.status_code == 422 and "max_tokens" in r.json()["error"]


def test_an_answer_past_the_budget_is_refused_before_it_is_built(served, monkeypatch):
    from seq2bert.serve import models

    built = []
    real = models.rounded
    monkeypatch.setattr(models, "rounded", lambda w, *a: built.append(w.shape) or real(w, *a))
    with client_of(served, max_answer_bytes=5_000) as c:  # 2 layers × 2 heads of 16 × 16 weights: past it
        r = c.post("/v1/attention", json={"model": "embedder", "text": LONG})
        assert r.status_code == 413 and built == []
        message = r.json()["error"]
        assert (
            "past the server's 5,000 (--max-answer-bytes)" in message
            and "or one layer (layer: 0 … 1)" in message
        )
        fits = int(re.search(r"fewer tokens \(max_tokens: (\d+)\)", message).group(1))
        r = c.post("/v1/attention", json={"model": "embedder", "text": LONG, "max_tokens": fits})
        assert r.status_code == 200 and len(r.content) <= 5_000 and built
        r = c.post("/v1/attention", json={"model": "embedder", "text": LONG, "layer": -1})
        one = r.json()["kinds"]["encoder"]
        assert (
            r.status_code == 200
            and one["first_layer"] == 1
            and torch.tensor(one["layers"]).shape == (1, 2, 16, 16)
        )
    with client_of(served) as c:  # the default budget holds a full map of the default tokens
        r = c.post("/v1/attention", json={"model": "pretrained", "text": LONG})
        assert r.status_code == 200 and len(r.json()["kinds"]["encoder"]["query_tokens"]) == POSITIONS


def test_a_model_of_broken_weights_is_refused_at_start_and_a_non_finite_output_is_a_422(
    served, kinds, tmp_path, capsys, monkeypatch
):
    """JSON has no NaN: a checkpoint with NaN weights is refused when the server starts (one line), and an
    output that is not finite for one input is that request's 422, never a 500."""
    from safetensors.torch import load_file, save_file

    broken = tmp_path / "broken"
    broken.mkdir()
    for f in kinds["sequence"].iterdir():
        if f.is_file():
            (broken / f.name).write_bytes(f.read_bytes())
    weights = load_file(broken / "model.safetensors")
    name = next(k for k in weights if k.endswith("classifier.weight"))
    weights[name] = torch.full_like(weights[name], float("nan"))
    save_file(weights, broken / "model.safetensors")
    monkeypatch.setattr("seq2bert.serve.server.serve", lambda *a: pytest.fail("serving a broken model"))
    assert main(["serve", str(broken), "--port", "0"]) == 2
    assert f"non-finite weights ({weights[name].numel()} NaN or infinite values in " in one_line(capsys)

    sequence = next(m for m in served if m.name == "sequence")
    real = sequence.outputs
    monkeypatch.setattr(sequence, "outputs", lambda *a: [[{"label": "pos", "score": float("nan")}]])
    with client_of(served) as c:
        r = c.post("/v1/classify", json={"model": "sequence", "texts": ["the film"]})
        assert r.status_code == 422 and "not finite" in r.json()["error"]
        monkeypatch.setattr(sequence, "outputs", real)
        assert c.post("/v1/classify", json={"model": "sequence", "texts": ["the film"]}).status_code == 200


def test_a_json_body_is_read_whatever_its_content_type(served):
    body = b'{"model": "sequence", "texts": ["a gripping , funny film"]}'
    with client_of(served) as c:  # what `curl -d` sends, and no type at all
        for headers in (
            {"content-type": "application/x-www-form-urlencoded"},
            {"content-type": "text/plain"},
            {},
        ):
            r = c.post("/v1/classify", content=body, headers=headers)
            assert r.status_code == 200 and r.json()["results"][0]["label"] in ("neg", "pos"), r.text
        r = c.post(
            "/v1/classify", content=b"texts=a", headers={"content-type": "application/x-www-form-urlencoded"}
        )
        assert r.status_code == 400 and "not valid JSON" in r.json()["error"]


def test_the_attention_command_shows_max_tokens(kinds, tmp_path, capsys, caplog):
    html = tmp_path / "h.html"
    args = [
        "attention",
        str(kinds["pretrained"]),
        LONG,
        "--out",
        str(tmp_path / "a.png"),
        "--html",
        str(html),
    ]
    with caplog.at_level(logging.WARNING):
        assert main([*args, "--max-tokens", "5"]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "truncated" in warnings[0] and "max_tokens 5" in warnings[0]
    data = json.loads(re.search(r'type="application/json">(.*?)</script>', html.read_text(), re.S).group(1))
    assert len(data["tokens"]["encoder"][0]) == 5 and re.search(r"\d\.\d{4}", html.read_text()) is None
    capsys.readouterr()
    assert main([*args, "--max-tokens", "0"]) == 2
    assert "--max-tokens: at least 1" in one_line(capsys)


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["--port", "99999"], 2, "seq2bert: error: --port: expected 0 … 65535, got 99999"),
        (["--host", "192.0.2.1"], 1, "seq2bert: failed: cannot listen on 192.0.2.1:"),  # not this machine's
        (
            ["--port", "{busy}"],
            1,
            "seq2bert: failed: cannot listen on 127.0.0.1:{busy}: Address already in use",
        ),
    ],
)
def test_a_bad_port_or_host_is_one_line_before_any_model_loads(argv, code, message, capsys, monkeypatch):
    from seq2bert.serve import ServedModel

    monkeypatch.setattr(ServedModel, "load", lambda *a: pytest.fail("a model was loaded"))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        argv = [a.replace("{busy}", port) for a in argv]
        assert main(["serve", "some/model", *argv]) == code
        assert one_line(capsys).startswith(message.replace("{busy}", port))


def test_slow_clients_are_timed_out_and_counted(served):
    """Slow clients (a request's first bytes, then nothing) are answered 408 and closed after read_timeout;
    past max_connections, the one that waited longest makes room: a normal client is still answered."""
    import httpx

    from tests.serve.conftest import live_server

    sequence = [m for m in served if m.name == "sequence"]
    with live_server(sequence, read_timeout=1.0, max_connections=6) as url:
        port = int(url.rsplit(":", 1)[1])
        start = time.monotonic()
        slow = []
        for _ in range(8):  # two more than max_connections
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"POST /v1/classify HTTP/1.1\r\nHost: x\r\n")
            s.settimeout(5)
            slow.append(s)
            time.sleep(0.02)
        r = httpx.post(url + "/v1/classify", json={"texts": ["the film"]}, headers={"connection": "close"})
        assert r.status_code == 200  # a normal client still answered, room made for it
        answers = [s.recv(1000) for s in slow]
        made_room = [a for a in answers if b"503" in a]
        assert len(made_room) == 3 and all(b"sending no request, was closed" in a for a in made_room)
        assert answers[:3] == made_room  # the oldest ones
        late = [a for a in answers if b"408" in a]
        assert len(late) == 5 and all(b"did not arrive within 1 s" in a for a in late)
        assert all(s.recv(1000) == b"" for s in slow)  # closed
        assert time.monotonic() - start < 4
        for s in slow:
            s.close()
        body = b'{"texts": ["a"]}'
        with socket.create_connection(("127.0.0.1", port)) as s:  # a body that never comes whole: 408 too
            head = b"POST /v1/classify HTTP/1.1\r\nHost: x\r\ncontent-length: %d\r\n\r\n" % (len(body) + 5)
            s.sendall(head + body)
            s.settimeout(5)
            assert b"408" in s.recv(1000)
        assert httpx.get(url + "/health").status_code == 200
