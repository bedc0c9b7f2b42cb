"""The page at / in a real browser (headless Chromium from the system's packages, driven by Playwright):
for each pipeline, type a text, press the button, and see the answer the API gives for it."""

import re

import pytest

from tests.serve.conftest import live_server

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def site(served):
    with live_server(served) as url:
        yield url


def ask(page, pipeline: str, fields: dict, model: str | None = None):
    """Open the pipeline's tab, fill its fields, press its button; the output element once it answered."""
    page.click(f"#tab-{pipeline}")
    for selector, value in fields.items():
        page.fill(selector, value)
    if model is not None:
        page.select_option(f"#{pipeline} select.model", model)
    page.click(f"#{pipeline}-run")
    page.wait_for_selector(f"#{pipeline}-output[data-state]", timeout=30_000)
    return page.locator(f"#{pipeline}-output")


def test_every_pipeline_answers_in_the_page(browser, site):
    import httpx

    page = browser.new_page()
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(site + "/")
    page.wait_for_selector("#tab-classify")
    tabs = page.locator("nav button").all_inner_texts()
    assert tabs == ["translate", "fill-mask", "classify", "tag", "qa", "embed", "attention", "generate"]

    api = httpx.Client(base_url=site)
    out = ask(page, "classify", {"#classify-input": "the film was great\nparis | | | john"})
    want = api.post(
        "/v1/classify", json={"texts": ["the film was great", "paris | | | john"], "top_k": None}
    ).json()
    assert out.get_attribute("data-state") == "done"
    text = out.inner_text()
    for label in want["results"][0]:
        assert f"{100 * label['score']:.1f} %" in text

    out = ask(page, "translate", {"#translate-input": "a b c"})
    want = api.post("/v1/translate", json={"texts": ["a b c"]}).json()["translations"][0]
    assert out.locator(".translation").inner_text() == want
    assert out.locator("table.heat td").count() > 0  # the alignment map

    out = ask(page, "fill-mask", {"#fill-mask-input": "the [MASK] was great"})
    want = api.post("/v1/fill-mask", json={"text": "the [MASK] was great", "top_k": 5}).json()["results"]
    assert [c.inner_text() for c in out.locator("code").all()] == [r["token"] for r in want]

    out = ask(page, "tag", {"#tag-input": "john lives in paris"})
    want = api.post("/v1/tag", json={"text": "john lives in paris"}).json()["entities"]
    assert out.locator("mark").count() == len(want)

    out = ask(page, "qa", {"#qa-question": "who lives in paris", "#qa-context": "john lives in paris"})
    want = api.post(
        "/v1/qa", json={"question": "who lives in paris", "context": "john lives in paris"}
    ).json()
    assert out.locator(".answer-text").inner_text() == want["answer"].strip()
    assert out.locator("mark.answer").count() == 1

    out = ask(page, "embed", {"#embed-input": "the film\na story\nparis"}, model="pretrained")
    cells = out.locator("table.similarity td").all_inner_texts()
    assert len(cells) == 9 and cells[0] == cells[4] == cells[8] == "1.00"  # each sentence with itself

    ask(page, "attention", {"#attention-input": "the film was great"}, model="pretrained")
    page.wait_for_selector("#attention-output table.heat")
    assert (
        page.locator("#attention-layer option").count() == 2
        and page.locator("#attention-head option").count() == 2
    )
    page.select_option("#attention-head", "1")
    assert (
        page.locator("#attention-output table.heat tr").count() == 7
    )  # a header row + [CLS] the film was great [SEP]

    out = ask(page, "generate", {"#generate-input": "the film"})
    want = api.post("/v1/generate", json={"prompt": "the film", "max_new_tokens": 40}).json()["text"]
    assert out.locator(".continuation").inner_text().strip() == want.strip()

    out = ask(page, "fill-mask", {"#fill-mask-input": "no mask in it"})  # a refused input: its message shown
    assert out.get_attribute("data-state") == "error" and re.search(r"no \[MASK\]", out.inner_text())
    assert all(u.startswith(site) for u in requests)  # nothing fetched from elsewhere


def test_the_attention_tab_shows_the_last_layer_when_every_layer_is_past_the_budget(browser, served):
    """Every layer of 22 tokens is past a 9,000-byte answer (413), the last one alone is not: the page asks for it."""
    text = "the film was great " * 5
    with live_server(served, max_answer_bytes=9_000) as url:
        import httpx

        assert (
            httpx.post(url + "/v1/attention", json={"model": "pretrained", "text": text}).status_code == 413
        )
        page = browser.new_page()
        page.goto(url + "/#attention")
        page.wait_for_selector("#tab-attention")
        ask(page, "attention", {"#attention-input": text}, model="pretrained")
        page.wait_for_selector("#attention-output table.heat")
        assert (
            page.locator("#attention-output .note").inner_text().startswith("Every layer would be too large")
        )
        assert page.locator("#attention-layer option").all_inner_texts() == ["1"]  # the last of two
        assert page.locator("#attention-output table.heat tr").count() == 23  # a header row + 22 tokens
