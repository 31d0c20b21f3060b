"""Entry point: `python app.py` serves the UI at /agent, the REST API at /api, on one port.

Offline defaults are applied before gradio or litellm is imported. litellm is imported in
the model worker process (`agent/model_worker.py`), spawned first thing, before even the
settings' modules are imported (`agent/worker_spawn.py`), so the two processes' imports run
on two cores and neither the first 200 nor the first answer waits for both in turn.

As a script it first checks the settings, DATA_DIR and the database (`preflight`), before
the seconds-long imports of gradio and the app: an unusable place fails at once with one
line (where, what is wrong, what to do) and exit status 2, not a traceback.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # first of all: the model worker's import is start-up's longest
    from agent import long_lived, worker_spawn

    long_lived.hold()  # no full collection until warmed up (`Runtime.warm_up` freezes)
    if worker_spawn.wanted():
        worker_spawn.start_early()  # litellm's import, on the other core from all below

from agent.settings import Settings, apply_offline_defaults
from agent.space import apply_space_defaults
from storage.preflight import check_data_dir, check_database, redact_url

apply_offline_defaults()
apply_space_defaults()  # on a Hugging Face Space: /data, else a temporary directory

EXIT_UNUSABLE = 2


def _unusable(problem: str) -> SystemExit:
    """One line on stderr instead of a traceback; exit status 2."""
    print(f"Cannot start: {problem}", file=sys.stderr)
    return SystemExit(EXIT_UNUSABLE)


def preflight() -> Settings:
    """The settings, once DATA_DIR and the database have proved usable."""
    try:
        settings = Settings()
    except ValueError as exc:  # pydantic's ValidationError too: a setting is wrong
        raise SystemExit(f"Configuration error: {exc}") from None
    problem = check_data_dir(settings.data_dir) or check_database(settings.database_url)
    if problem:
        raise _unusable(problem)
    return settings


if __name__ == "__main__":
    _CHECKED = preflight()  # before the imports below, which take seconds
    if _CHECKED.agent_model_process:
        worker_spawn.start_early()  # spawned above unless the environment said no
    else:
        worker_spawn.discard_early()

from web import gradio_import  # noqa: E402

gradio_import.install()  # gradio's import without its stub writer (a third of it)

from contextlib import asynccontextmanager  # noqa: E402

import gradio as gr  # noqa: E402
from fastapi import FastAPI  # noqa: E402
from fastapi.responses import FileResponse, RedirectResponse  # noqa: E402
from sqlalchemy.exc import SQLAlchemyError  # noqa: E402
from starlette.routing import Mount  # noqa: E402

from agent.logs import configure_logging  # noqa: E402
from agent.secrets import Scrubber  # noqa: E402
from agent.tracing import configure_tracing  # noqa: E402
from runtime import Runtime, build_runtime  # noqa: E402
from storage import use_worker_threads  # noqa: E402
from storage.retry import DatabaseUnavailable  # noqa: E402
from web import gradio_sessions  # noqa: E402
from web.errors import answer_outages  # noqa: E402
from web.gradio_guard import GradioCallGuard, arities  # noqa: E402
from web.hygiene import BodyLimit, quiet_validation_errors  # noqa: E402
from web.page_head import PAGE_HEAD  # noqa: E402
from web.routes import build_api_router  # noqa: E402
from web.ui import CSS_PATH, FAVICON_PATH, build_blocks  # noqa: E402

__all__ = ["create_app", "main", "preflight"]


def create_app(settings: Settings | None = None, runtime: Runtime | None = None, *,
               freeze_heap: bool = False) -> FastAPI:
    """The whole app: FastAPI with /api routes and the Gradio Blocks mounted at /agent.
    `freeze_heap` (`main` only): start-up's objects out of the collector's full passes once
    warmed up (`agent/long_lived.py`)."""
    runtime = runtime or build_runtime(settings or Settings())

    @asynccontextmanager
    async def lifespan(_: FastAPI):  # type: ignore[no-untyped-def]
        # As the server starts listening (right after this), not before: the page's first
        # 200 stays as fast as a bare app's. At once, not later, since the first turn waits
        # for it (the tools' schemas; litellm's import and first call where the model calls
        # run in this process, AGENT_MODEL_PROCESS=false: started at process start, that
        # import delayed the first 200 twice as long, both imports sharing one GIL).
        app.state.warm_up = runtime.warm_up(freeze_heap=freeze_heap)  # the thread
        use_worker_threads()  # database calls wait; six threads made runs queue for one
        yield
        await runtime.aclose()

    app = FastAPI(title="Superset Agent", lifespan=lifespan)
    app.state.runtime = runtime
    app.include_router(build_api_router(runtime))

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse(url="/agent/")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:  # browsers ask the root for it on every load
        return FileResponse(FAVICON_PATH, media_type="image/svg+xml")

    blocks = build_blocks(runtime)
    # api_open=False: a raw POST to /gradio_api/run/<endpoint> cannot skip the queue and
    # its concurrency limits (queue=False page events still answer there).
    blocks.queue(default_concurrency_limit=runtime.settings.ui_concurrency_limit,
                 api_open=False)
    app = gr.mount_gradio_app(app, blocks, path="/agent", css=CSS_PATH.read_text(),
                              head=PAGE_HEAD,  # keeps streamed updates in order
                              theme=gr.themes.Soft(), footer_links=["api"], ssr_mode=False,
                              # Gradio builds file URLs (an export's download) from this:
                              # without it they miss the /agent prefix and answer 404.
                              root_path=os.environ.get("GRADIO_ROOT_PATH", "").rstrip("/")
                              + "/agent")
    quiet_validation_errors(app)
    answer_outages(app)
    for route in app.routes:  # Gradio's own app answers its routes' validation errors
        if isinstance(route, Mount) and isinstance(route.app, FastAPI):
            quiet_validation_errors(route.app)
            answer_outages(route.app)
            gradio_sessions.install(route.app, blocks, runtime.settings.ui_session_capacity)
    by_name, by_index = arities(blocks)
    app.add_middleware(GradioCallGuard, prefix="/agent", by_name=by_name, by_index=by_index)
    app.add_middleware(BodyLimit, max_bytes=runtime.settings.max_request_body_bytes)  # outer
    return app


def main(settings: Settings | None = None) -> None:
    """Serve; `settings` already checked by `preflight`, or checked here."""
    import uvicorn

    settings = settings or preflight()
    try:
        configure_tracing()  # OTEL_EXPORTER_OTLP_ENDPOINT set: before the runtime is built
        app = create_app(settings, freeze_heap=True)
    except ValueError as exc:
        raise SystemExit(f"Configuration error: {exc}") from None
    except (DatabaseUnavailable, SQLAlchemyError) as exc:  # it went away since the check
        raise _unusable(f"DATABASE_URL {redact_url(settings.database_url)} failed while the "
                        f"schema was created ({type(exc).__name__}): check the database "
                        "and try again.") from None
    except OSError as exc:  # DATA_DIR filled up or changed since the check
        raise _unusable(f"{exc.filename or settings.data_dir!s} failed ({exc.strerror}): "
                        "check DATA_DIR and try again.") from None
    configure_logging(settings.log_level, settings.log_format, Scrubber.from_settings(settings))
    # log_config=None: uvicorn's own lines (the access log too) go through that handler.
    uvicorn.run(app, host=settings.gradio_server_name, port=settings.gradio_server_port,
                log_config=None, log_level=settings.log_level.lower(),
                timeout_graceful_shutdown=5)


if __name__ == "__main__":
    main(_CHECKED)
