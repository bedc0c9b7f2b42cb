"""``seq2bert serve``: every loaded checkpoint's pipelines over HTTP (app.py), with dynamic batching
(batching.py), the models and what each serves (models.py), the request bodies (schemas.py) and a page to
try them (page.html, at ``/``), on uvicorn with limits against slow clients (server.py). Needs the extra
``serve`` (FastAPI on uvicorn): ``pip install -e '.[serve]'``.

    from seq2bert.serve import ServedModel, Settings, create_app
    app = create_app([ServedModel.load("sst2", "runs/sst2/best")], Settings(max_wait_ms=5))
"""

from seq2bert.serve.models import PIPELINES, ServedModel

__all__ = ["PIPELINES", "ServedModel", "Settings", "create_app", "model_names", "run"]


def __getattr__(name: str):  # the web stack is imported only when an app is made
    if name in ("Settings", "create_app"):
        from seq2bert.serve import app

        return getattr(app, name)
    raise AttributeError(name)


def model_names(paths: list[str]) -> list[tuple[str, str]]:
    """(name, directory) of each ``DIR`` or ``NAME=DIR`` argument: a run's best/ is named after its run
    (runs/sst2/best → sst2), anything else after its folder; two of one name are a mistake."""
    from pathlib import Path

    from seq2bert.errors import UserError

    out = []
    for arg in paths:
        name, sep, path = arg.partition("=")
        if not sep or "/" in name:
            path = arg
            p = Path(arg).resolve()
            name = p.parent.name if p.name == "best" else p.name
        if not name:
            raise UserError(f"{arg}: an empty model name (NAME=DIR)")
        if name in [n for n, _ in out]:
            raise UserError(f"{arg}: a second model named {name!r}; name them apart with NAME=DIR")
        out.append((name, path))
    return out


def draft_names(drafts, models) -> list[tuple[str, str]]:
    """(served model name, draft directory) of each ``--draft DIR`` or ``--draft NAME=DIR``: a bare DIR drafts
    for the one served model that translates or generates."""
    from seq2bert.errors import UserError

    decoders = [m.name for m in models if {"translate", "generate"} & set(m.pipelines)]
    out = []
    for arg in drafts:
        name, sep, path = arg.partition("=")
        if not sep or "/" in name:
            if len(decoders) != 1:
                raise UserError(
                    f"--draft {arg}: {len(decoders)} served models translate or generate "
                    f"({', '.join(decoders) or 'none'}); name the one it drafts for: --draft NAME=DIR"
                )
            name, path = decoders[0], arg
        elif name not in {m.name for m in models}:
            raise UserError(f"--draft {arg}: no served model is named {name!r}")
        out.append((name, path))
    return out


def run(paths: list[str], *, host: str = "127.0.0.1", port: int = 8000, settings=None) -> None:
    """Bind ``host``:``port`` (a busy port is one line, before any model loads), load the models of
    ``paths`` and serve them until interrupted."""
    try:
        from seq2bert.serve.app import Settings, create_app
        from seq2bert.serve.server import bind, serve
    except ImportError as e:
        from seq2bert.errors import UserError

        raise UserError(
            f"serve needs the extra serve ({e.name} is missing): pip install -e '.[serve]'"
        ) from None
    import logging

    log = logging.getLogger("seq2bert.serve")
    settings = settings or Settings()
    named = model_names(paths)
    sock = bind(host, port)
    try:
        models = []
        for name, path in named:
            served = ServedModel.load(name, path, int8=settings.int8, compile=settings.compile)
            log.info(
                "%s: %s (%s), serving %s",
                name,
                served.directory,
                served.architecture,
                ", ".join(served.pipelines),
            )
            models.append(served)
        for name, path in draft_names(settings.drafts, models):
            next(m for m in models if m.name == name).drafted_by(path)
            log.info("%s: speculative decoding with the draft %s", name, path)
        app = create_app(models, settings)
    except BaseException:
        sock.close()
        raise
    log.info("http://%s:%d/ (the page), /v1/models, /openapi.json", host, sock.getsockname()[1])
    serve(app, sock, settings)
