"""The HTTP API with an in-process client: every pipeline answers what the Python pipeline gives for the same
input, the listing and health, and every kind of bad request gets a JSON error with its status — never a
500 or a traceback."""

import json

import pytest
import torch

from seq2bert import pipelines
from seq2bert.models import registry
from seq2bert.models.alignment import align
from seq2bert.viz.inspect import attention_maps

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from tests.serve.conftest import client_of  # noqa: E402


def test_models_health_and_openapi_list_what_is_served(client):
    models = {m["name"]: m for m in client.get("/v1/models").json()["models"]}
    assert models["sequence"]["pipelines"] == ["classify", "embed", "attention"]
    assert models["tokens"]["pipelines"] == ["tag", "embed", "attention"]
    assert models["qa"]["pipelines"] == ["qa", "embed", "attention"]
    assert models["pretrained"]["pipelines"] == ["fill-mask", "embed", "attention"]
    assert models["translation"]["pipelines"] == ["translate", "attention"]
    assert models["gpt"]["pipelines"] == ["generate"]
    assert models["sequence"]["architecture"] == "BertForSequenceClassification"
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["models"] == 6
    paths = client.get("/openapi.json").json()["paths"]
    for pipeline in ("translate", "classify", "tag", "qa", "fill-mask", "embed", "generate", "attention"):
        assert f"/v1/{pipeline}" in paths
    page = client.get("/")
    assert page.status_code == 200 and "seq2bert serve" in page.text
    assert "http://" not in page.text and "https://" not in page.text  # nothing fetched from elsewhere


def test_each_pipeline_answers_as_the_python_pipeline(client, checkpoints):
    d = {k: str(v) for k, v in checkpoints.items()}
    texts = ["the film was great", "paris is awful", "john lives in paris"]

    r = client.post(
        "/v1/classify", json={"model": "sequence", "texts": [*texts, ["the film", "a story"]], "top_k": 2}
    )
    assert r.status_code == 200
    assert r.json()["results"] == pipelines.classify(
        [*texts, ("the film", "a story")], d["sequence"], top_k=2
    )

    r = client.post("/v1/embed", json={"model": "pretrained", "texts": texts})
    assert torch.allclose(
        torch.tensor(r.json()["embeddings"]), pipelines.embed(texts, d["pretrained"]), atol=1e-6
    )

    r = client.post("/v1/tag", json={"text": "john lives in paris", "aggregate": False})
    assert r.json() == {
        "model": "tokens",
        "entities": pipelines.tag("john lives in paris", d["tokens"], aggregate=False),
    }

    r = client.post("/v1/fill-mask", json={"text": "the [MASK] was great", "top_k": 3})
    assert r.json()["results"] == pipelines.fill_mask("the [MASK] was great", d["pretrained"], top_k=3)

    r = client.post("/v1/qa", json={"question": "who lives in paris", "context": "john lives in paris"})
    assert r.json() == {
        "model": "qa",
        **pipelines.answer("who lives in paris", "john lives in paris", d["qa"]),
    }

    model, tok = registry.load(d["translation"])
    source = ["a b c", "d e"]
    r = client.post("/v1/translate", json={"texts": source, "num_beams": 2, "alignment": True})
    from seq2bert.decoding.generation import Decoding

    # the precision seq2bert.translate runs a directory in (bf16 where native), with the alignment or without
    assert r.json()["translations"] == pipelines.translate(
        d["translation"], source, decoding=Decoding(num_beams=2)
    )
    plain = client.post("/v1/translate", json={"texts": source, "num_beams": 2}).json()["translations"]
    assert plain == r.json()["translations"]
    with pipelines.loading.inference_precision(model, "auto", kept=True) as net:
        first = align(net, "a b c", tokenizer=tok, decoding=Decoding(num_beams=2))
    assert r.json()["alignments"][0]["source_tokens"] == first.source_tokens
    assert torch.allclose(torch.tensor(r.json()["alignments"][0]["weights"]), first.weights, atol=1e-4)
    assert "alignments" not in client.post("/v1/translate", json={"texts": source}).json()

    r = client.post("/v1/generate", json={"prompt": "the film", "max_new_tokens": 5})
    assert r.json()["text"] == pipelines.generate("the film", d["gpt"], max_new_tokens=5)

    r = client.post("/v1/attention", json={"model": "pretrained", "text": "the film", "pair": "a story"})
    maps = attention_maps(d["pretrained"], "the film", pair="a story")
    got = r.json()["kinds"]["encoder"]
    assert got["query_tokens"] == maps.tokens["encoder"][0]
    # rounded to 3 decimals (a compact answer): within half of their last place
    assert torch.allclose(torch.tensor(got["layers"]), torch.stack(maps.layers["encoder"]), atol=5e-4 + 1e-7)
    cross = client.post("/v1/attention", json={"model": "translation", "text": "a b c"}).json()["kinds"]
    assert set(cross) == {"encoder", "decoder", "cross"} and len(cross["decoder"]["layers"]) == 2


BAD = [
    # (what, request, status, a piece of the message)
    ("malformed JSON", dict(content=b'{"texts": ["a"'), 400, "not valid JSON"),
    ("a wrong type", dict(json={"model": "sequence", "texts": "just a string"}), 422, "texts"),
    ("a wrong item type", dict(json={"model": "sequence", "texts": [3]}), 422, "texts"),
    ("an unknown field", dict(json={"model": "sequence", "texts": ["a"], "topk": 2}), 422, "topk"),
    ("a setting out of range", dict(json={"model": "sequence", "texts": ["a"], "top_k": 0}), 422, "top_k"),
    ("no texts", dict(json={"model": "sequence", "texts": []}), 422, "texts"),
    ("an empty text", dict(json={"model": "sequence", "texts": ["a", "  "]}), 422, "texts[1]: an empty text"),
    ("an over-long text", dict(json={"model": "sequence", "texts": ["a" * 10_001]}), 413, "at most 10,000"),
    ("too many texts", dict(json={"model": "sequence", "texts": ["a"] * 257}), 413, "at most 256"),
    ("a body too large", dict(content=b'{"texts": ["' + b"a" * 1_000_001 + b'"]}'), 413, "larger than"),
    ("an unknown model", dict(json={"model": "nope", "texts": ["a"]}), 404, "'nope' is not loaded"),
    (
        "a model without the pipeline",
        dict(json={"model": "gpt", "texts": ["a"]}),
        404,
        "does not serve classify",
    ),
]


@pytest.mark.parametrize("what, request_, status, message", BAD, ids=[b[0] for b in BAD])
def test_bad_requests_get_a_json_error_and_their_status(client, what, request_, status, message):
    r = client.post("/v1/classify", headers={"content-type": "application/json"}, **request_)
    assert r.status_code == status, r.text
    assert message in r.json()["error"] and "Traceback" not in r.text


def test_other_mistakes_are_answered_too(client):
    r = client.post("/v1/embed", json={"texts": ["a"]})  # five models embed: which?
    assert r.status_code == 400 and "name one" in r.json()["error"]
    r = client.post(
        "/v1/fill-mask", json={"text": "no mask here"}
    )  # the pipeline refuses it: 422, its message
    assert r.status_code == 422 and "no [MASK]" in r.json()["error"]
    assert client.get("/v1/nothing").status_code == 404 and "error" in client.get("/v1/nothing").json()
    assert client.get("/v1/classify").status_code == 405
    r = client.post("/v1/attention", json={"model": "translation", "text": "a b", "pair": "c"})
    assert r.status_code == 422 and "one text" in r.json()["error"]


def test_a_refused_input_fails_its_own_request_only(served):
    """Requests batched together: the one the pipeline refuses gets its error, the others their answers."""
    import concurrent.futures

    with client_of(served, max_wait_ms=200) as c:
        bodies = [{"text": "the [MASK] film"}, {"text": "no mask"}, {"text": "a [MASK] story"}]
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            replies = list(pool.map(lambda b: c.post("/v1/fill-mask", json=b), bodies))
    assert [r.status_code for r in replies] == [200, 422, 200]


def test_a_full_queue_answers_503_and_the_server_stays_healthy(served):
    import concurrent.futures
    import time

    slow = next(m for m in served if m.name == "sequence")
    run = slow.run

    def sleepy(pipeline, items, options):
        time.sleep(0.3)
        return run(pipeline, items, options)

    slow.run = sleepy
    try:
        with client_of(served, max_queue=1, max_batch_size=1, max_wait_ms=0) as c:
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                replies = list(pool.map(lambda _: c.post("/v1/classify", json={"model": "sequence", "texts": ["a"]}),
                                        range(8)))  # fmt: skip
            codes = [r.status_code for r in replies]
            assert codes.count(503) >= 1 and codes.count(200) >= 1 and set(codes) <= {200, 503}
            busy = next(r for r in replies if r.status_code == 503)
            assert busy.headers["retry-after"] == "1" and "busy" in busy.json()["error"]
            assert c.get("/health").json()["batches"]["sequence/classify"]["refused"] == codes.count(503)
            assert c.post("/v1/classify", json={"model": "sequence", "texts": ["a"]}).status_code == 200
    finally:
        slow.run = run


def test_a_request_past_its_timeout_gets_504(served):
    import time

    slow = next(m for m in served if m.name == "sequence")
    run = slow.run
    slow.run = lambda *a: time.sleep(0.5) or run(*a)
    try:
        with client_of(served, timeout=0.1) as c:
            r = c.post("/v1/classify", json={"model": "sequence", "texts": ["a"]})
            assert r.status_code == 504 and "within 0.1 s" in r.json()["error"]
    finally:
        slow.run = run


def test_the_openapi_description_names_the_bodies(client):
    spec = client.get("/openapi.json").json()
    classify = spec["paths"]["/v1/classify"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert classify["$ref"].endswith("/Classify")
    assert set(spec["components"]["schemas"]["Classify"]["properties"]) == {"model", "texts", "top_k"}
    json.dumps(spec)


def test_every_decoding_setting_is_served(client, checkpoints):
    """The bodies' decoding settings come from GenerationConfig: the strategies added there are served,
    with its bounds (422) and the settings' cross-checks (422, the config's one line)."""
    from seq2bert import pipelines
    from seq2bert.decoding.generation import Decoding

    d = checkpoints
    body = {"prompt": "the film", "max_new_tokens": 6, "penalty_alpha": 0.6, "top_k": 3}
    r = client.post("/v1/generate", json=body)
    expected = pipelines.generate("the film", d["gpt"], max_new_tokens=6, penalty_alpha=0.6, top_k=3)
    assert r.status_code == 200 and r.json()["text"] == expected
    settings = dict(num_beams=4, num_beam_groups=2, diversity_penalty=1.0, length_penalty=0.5)
    r = client.post("/v1/translate", json={"texts": ["a b c", "d e"], **settings})
    expected = pipelines.translate(d["translation"], ["a b c", "d e"], decoding=Decoding.of(**settings))
    assert r.status_code == 200 and r.json()["translations"] == expected
    r = client.post("/v1/generate", json={"prompt": "x", "penalty_alpha": 1.5})
    assert r.status_code == 422 and "penalty_alpha" in r.text
    r = client.post("/v1/generate", json={"prompt": "x", "penalty_alpha": 0.5, "num_beams": 2})
    assert r.status_code == 422 and "penalty_alpha: contrastive search" in r.json()["error"]
