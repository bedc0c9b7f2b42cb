"""The HTTP API: one process serving every loaded checkpoint, each pipeline at ``/v1/<pipeline>`` with JSON
in and out as the Python pipelines take and give them, plus ``/v1/models``, ``/health``, the OpenAPI
description at ``/openapi.json`` and the page at ``/``.

    POST /v1/classify   {"texts": ["a gripping film", ["A", "B"]], "top_k": 1}   → {"results": [{"label", "score"}]}
    POST /v1/embed      {"texts": […], "normalize": null}                        → {"embeddings": [[…]]}
    POST /v1/translate  {"texts": […], "num_beams": 1, "alignment": false}       → {"translations": […]}
    POST /v1/tag        {"text": "…", "aggregate": true}                         → {"entities": [{"entity_group", …}]}
    POST /v1/fill-mask  {"text": "… [MASK] …", "top_k": 5}                       → {"results": [{"token", "score", …}]}
    POST /v1/qa         {"question": "…", "context": "…"}                        → {"answer", "score", "start", "end"}
    POST /v1/generate   {"prompt": "…", "max_new_tokens": 50, …}                 → {"text": "…"}
    POST /v1/attention  {"text": "…", "pair": null, "max_tokens": 128, "layer": null}
                                                                → {"kinds": {kind: {tokens, first_layer, layers}}}

Every body may name its ``"model"`` (a name of GET /v1/models); without it, the one loaded model that serves
the pipeline answers. A body is read as JSON whatever its Content-Type says (curl's ``-d`` sends a form's).
Mistakes get a JSON ``{"error": "…"}`` and their status, never a traceback: 400 (malformed JSON, a model to
name), 404 (unknown model or path, or a model that does not serve the pipeline), 408 (a body not sent within
``read_timeout``), 413 (a body, a text or a list too large; an attention answer past ``max_answer_bytes``,
measured before it is built, saying which max_tokens or layer fits), 422 (wrong types, an empty text, an input
the pipeline refuses, an alignment of a model without attention, an output that is not finite for this input),
503 with Retry-After (the queue full), 504 (the request waited past its timeout). A fault of ours would be a
500 with one line (the log has the rest); tests/reliability/test_serve_bounds.py posts to every endpoint of
every kind of model and sees none. The connection limits (a request's headers within ``read_timeout``, at most
``max_connections`` open) are the HTTP server's: server.py.

GET /v1/models shows each model's directory relative to the working directory (or its last two parts),
and the errors name models rather than their paths, unless ``show_paths``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException as StarletteHTTPException

from seq2bert.errors import UserError
from seq2bert.serve import schemas
from seq2bert.serve.batching import Batcher, HeapTrim, Overloaded
from seq2bert.serve.models import AnswerTooLarge, ServedModel

log = logging.getLogger("seq2bert.serve")


@dataclass
class Settings:
    """The server's limits and batching (``seq2bert serve --help`` names each)."""

    max_batch_size: int = 32  # inputs in one batch
    max_wait_ms: float = 5.0  # how long a batch waits for more requests
    max_queue: int = 256  # requests waiting per model and pipeline; more are answered 503
    timeout: float = 30.0  # seconds a request may wait and run before it is answered 504
    max_body_bytes: int = 1_000_000
    max_text_chars: int = 10_000
    max_items: int = 256  # texts in one request
    max_answer_bytes: int = 16_000_000  # an attention answer's JSON at most; larger ones are refused 413
    read_timeout: float = 10.0  # seconds a request's headers, and then its body, may take to arrive
    max_connections: int = 128  # open connections; more are answered 503 and closed at once
    show_paths: bool = False  # /v1/models and the errors show the directories' absolute paths
    int8: bool = False  # translate and generate decode with int8 weights (models/weight_only.py)
    compile: bool = False  # translate and generate decode with the decoding stack under torch.compile
    drafts: tuple[str, ...] = ()  # --draft [NAME=]DIR: speculative decoding's draft of a served model


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


def error(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class BodyLimit:
    """ASGI wrapper: a request body past ``limit`` bytes is answered 413 before the app reads any of it, one
    that takes more than ``timeout`` seconds to arrive 408; a smaller one is read whole and handed to the app,
    as JSON: every POST of the API takes JSON, whatever Content-Type the client sent (curl -d sends
    application/x-www-form-urlencoded)."""

    def __init__(self, app, limit: int, timeout: float = 10.0) -> None:
        self.app, self.limit, self.timeout = app, limit, timeout

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_large = error(413, f"the request body is larger than {self.limit:,} bytes")
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await too_large(scope, receive, send)
        if scope["method"] == "POST":
            headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
            scope = {**scope, "headers": [*headers, (b"content-type", b"application/json")]}
        chunks, size, more = [], 0, True
        deadline = asyncio.get_running_loop().time() + self.timeout
        while more:
            try:
                message = await asyncio.wait_for(receive(), deadline - asyncio.get_running_loop().time())
            except TimeoutError:
                late = error(408, f"the request body did not arrive within {self.timeout:g} s")
                return await late(scope, receive, send)
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                return await too_large(scope, receive, send)
            more = message.get("more_body", False)
        body, replayed = b"".join(chunks), False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def create_app(models: list[ServedModel], settings: Settings | None = None):
    """The ASGI application serving ``models`` (loaded; ServedModel.load)."""
    settings = settings or Settings()
    by_name = {m.name: m for m in models}
    executor = ThreadPoolExecutor(
        1, thread_name_prefix="seq2bert-model"
    )  # one batch at a time: see batching.py
    trim = HeapTrim()

    def runner(m: ServedModel, p: str):
        def run(items, options):
            try:
                return m.run(p, items, options)
            finally:
                trim()  # in the worker thread, after the batch

        return run

    batchers: dict[tuple[str, str], Batcher] = {
        (m.name, p): Batcher(
            runner(m, p),
            executor,
            max_batch_size=settings.max_batch_size,
            max_wait=settings.max_wait_ms / 1000,
            max_queue=settings.max_queue,
        )
        for m in models
        for p in m.pipelines
    }

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        await asyncio.gather(*(b.close() for b in batchers.values()))
        executor.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(
        title="seq2bert",
        version="1",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        description="Every loaded checkpoint's pipelines, with dynamic batching.",
    )
    app.state.settings, app.state.batchers = settings, batchers

    @app.exception_handler(ApiError)
    async def api_error(request: Request, e: ApiError):
        return error(e.status, e.message, e.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, e: RequestValidationError):
        problems = e.errors()
        if any(p.get("type") == "json_invalid" for p in problems):
            return error(400, "the body is not valid JSON")
        first = problems[0]
        where = ".".join(str(x) for x in first.get("loc", ()) if x != "body") or "body"
        return error(422, f"{where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, e: StarletteHTTPException):
        return error(e.status_code, str(e.detail))

    @app.exception_handler(Exception)
    async def failure(request: Request, e: Exception):  # a fault of ours: logged here, one line there
        log.exception("%s %s failed", request.method, request.url.path)
        return error(500, f"internal error ({type(e).__name__}); the server log has the details")

    async def call(pipeline: str, body: schemas.Base, items: list, options: dict):
        model = pick(pipeline, body.model)
        try:
            outputs = await batchers[model.name, pipeline](
                items, tuple(sorted(options.items())), settings.timeout
            )
        except Overloaded as e:
            raise ApiError(503, f"{model.name}: busy ({e}); try again", {"Retry-After": "1"}) from None
        except TimeoutError:
            raise ApiError(504, f"{model.name}: no answer within {settings.timeout:g} s") from None
        except AnswerTooLarge as e:
            raise ApiError(413, f"{model.name}: {e}") from None
        except UserError as e:
            message = str(e) if settings.show_paths else str(e).replace(str(model.directory), model.name)
            raise ApiError(422, message) from None
        return model.name, outputs

    def pick(pipeline: str, name: str | None) -> ServedModel:
        if name is not None:
            if name not in by_name:
                raise ApiError(404, f"model {name!r} is not loaded (GET /v1/models lists them)")
            if pipeline not in by_name[name].pipelines:
                raise ApiError(
                    404,
                    f"model {name!r} does not serve {pipeline} (it serves: "
                    f"{', '.join(by_name[name].pipelines)})",
                )
            return by_name[name]
        serving = [m for m in models if pipeline in m.pipelines]
        if not serving:
            raise ApiError(404, f"no loaded model serves {pipeline}")
        if len(serving) > 1:
            raise ApiError(
                400,
                f"model: several loaded models serve {pipeline} "
                f"({', '.join(m.name for m in serving)}); name one",
            )
        return serving[0]

    def texts(name: str, values: list, *, empty_ok: bool = False) -> None:
        """Each text not empty and within max_text_chars, the list within max_items."""
        if len(values) > settings.max_items:
            raise ApiError(413, f"{name}: {len(values)} texts, at most {settings.max_items} in one request")
        for i, value in enumerate(values):
            for part in [value] if isinstance(value, str) else value:
                if not empty_ok and not part.strip():
                    raise ApiError(422, f"{name}[{i}]: an empty text")
                if len(part) > settings.max_text_chars:
                    raise ApiError(
                        413, f"{name}[{i}]: {len(part):,} characters, at most {settings.max_text_chars:,}"
                    )

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def page():
        return HTMLResponse(
            resources.files("seq2bert.serve").joinpath("page.html").read_text(encoding="utf-8")
        )

    @app.get("/health")
    async def health():
        return {
            "status": "ok",
            "models": len(models),
            "waiting": sum(b.waiting for b in batchers.values()),
            "batches": {f"{m}/{p}": vars(b.stats) for (m, p), b in batchers.items()},
        }

    @app.get("/v1/models")
    async def list_models():
        return {"models": [m.describe(settings.show_paths) for m in models]}

    @app.post("/v1/classify")
    async def classify(body: schemas.Classify):
        texts("texts", body.texts)
        name, out = await call("classify", body, body.texts, {"top_k": body.top_k})
        return {"model": name, "results": out}

    @app.post("/v1/embed")
    async def embed(body: schemas.Embed):
        texts("texts", body.texts)
        name, out = await call("embed", body, body.texts, {"normalize": body.normalize})
        return {"model": name, "embeddings": out}

    @app.post("/v1/translate")
    async def translate(body: schemas.Translate):
        texts("texts", body.texts)
        if body.alignment and not (model := pick("translate", body.model)).attends:
            raise ApiError(422, f"alignment: {model.name} (a {model.family}) has no attention to align")
        name, out = await call("translate", body, body.texts, body.model_dump(exclude={"model", "texts"}))
        reply = {"model": name, "translations": [o["translation"] for o in out]}
        if body.alignment:
            reply["alignments"] = [{k: v for k, v in o.items() if k != "translation"} for o in out]
        return reply

    @app.post("/v1/tag")
    async def tag(body: schemas.Tag):
        texts("text", [body.text])
        name, (out,) = await call("tag", body, [body.text], {"aggregate": body.aggregate})
        return {"model": name, "entities": out}

    @app.post("/v1/fill-mask")
    async def fill_mask(body: schemas.FillMask):
        texts("text", [body.text])
        name, (out,) = await call("fill-mask", body, [body.text], {"top_k": body.top_k})
        return {"model": name, "results": out}

    @app.post("/v1/qa")
    async def qa(body: schemas.QA):
        texts("question", [body.question])
        texts("context", [body.context])
        name, (out,) = await call(
            "qa", body, [(body.question, body.context)], {"max_answer_length": body.max_answer_length}
        )
        return {"model": name, **out}

    @app.post("/v1/generate")
    async def generate(body: schemas.Generate):
        texts("prompt", [body.prompt], empty_ok=True)
        settings_ = body.model_dump(exclude={"model", "prompt"})
        name, (out,) = await call("generate", body, [body.prompt], settings_)
        return {"model": name, "text": out}

    @app.post("/v1/attention")
    async def attention(body: schemas.Attention):
        texts("text", [body.text] + ([body.pair] if body.pair is not None else []))
        options = {"max_tokens": body.max_tokens, "layer": body.layer, "budget": settings.max_answer_bytes}
        name, (out,) = await call("attention", body, [(body.text, body.pair)], options)
        # JSON written at once (no pass of FastAPI's encoder over every weight); then the heap's free pages
        # handed back, those of the answer's lists and text included
        return JSONResponse({"model": name, **out}, background=BackgroundTask(trim, force=True))

    return BodyLimit(app, settings.max_body_bytes, settings.read_timeout)
