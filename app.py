"""Entry point: `python app.py` serves the UI at /agent, the REST API at /api, on one port.

Offline defaults are applied before gradio or litellm is imported; litellm itself is
imported in the background only after the server is listening, so start-up stays as fast
as a bare Gradio app.
"""

from __future__ import annotations

from agent.settings import Settings, apply_offline_defaults

apply_offline_defaults()

import asyncio  # noqa: E402
from contextlib import asynccontextmanager  # noqa: E402

import gradio as gr  # noqa: E402
from fastapi import FastAPI  # noqa: E402
from fastapi.responses import RedirectResponse  # noqa: E402
from starlette.routing import Mount  # noqa: E402

from agent.model_gateway import LiteLLMGateway  # noqa: E402
from agent.runtime import Runtime, build_runtime  # noqa: E402
from web.gradio_guard import GradioCallGuard, arities  # noqa: E402
from web.hygiene import BodyLimit, quiet_validation_errors  # noqa: E402
from web.routes import build_api_router  # noqa: E402
from web.ui import CSS_PATH, build_blocks  # noqa: E402

__all__ = ["create_app", "main"]

WARM_UP_DELAY_S = 2.0


def create_app(settings: Settings | None = None, runtime: Runtime | None = None) -> FastAPI:
    """The whole app: FastAPI with /api routes and the Gradio Blocks mounted at /agent."""
    runtime = runtime or build_runtime(settings or Settings())

    @asynccontextmanager
    async def lifespan(_: FastAPI):  # type: ignore[no-untyped-def]
        warm_up: asyncio.TimerHandle | None = None
        if isinstance(runtime.gateway, LiteLLMGateway):
            # After the first requests are served, not before: keeps start-up fast.
            warm_up = asyncio.get_running_loop().call_later(
                WARM_UP_DELAY_S, runtime.gateway.warm_up)
        yield
        if warm_up is not None:
            warm_up.cancel()
        await runtime.aclose()

    app = FastAPI(title="Superset Agent", lifespan=lifespan)
    app.state.runtime = runtime
    app.include_router(build_api_router(runtime))

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse(url="/agent/")

    blocks = build_blocks(runtime)
    # api_open=False: a raw POST to /gradio_api/run/<endpoint> cannot skip the queue and
    # its concurrency limits (queue=False page events still answer there).
    blocks.queue(default_concurrency_limit=runtime.settings.ui_concurrency_limit,
                 api_open=False)
    app = gr.mount_gradio_app(app, blocks, path="/agent", css=CSS_PATH.read_text(),
                              theme=gr.themes.Soft(), footer_links=["api"], ssr_mode=False)
    quiet_validation_errors(app)
    for route in app.routes:  # Gradio's own app answers its routes' validation errors
        if isinstance(route, Mount) and isinstance(route.app, FastAPI):
            quiet_validation_errors(route.app)
    by_name, by_index = arities(blocks)
    app.add_middleware(GradioCallGuard, prefix="/agent", by_name=by_name, by_index=by_index)
    app.add_middleware(BodyLimit, max_bytes=runtime.settings.max_request_body_bytes)  # outer
    return app


def main() -> None:
    import uvicorn

    try:
        settings = Settings()
        app = create_app(settings)
    except ValueError as exc:  # pydantic's ValidationError too: a setting is wrong
        raise SystemExit(f"Configuration error: {exc}") from None
    uvicorn.run(app, host=settings.gradio_server_name, port=settings.gradio_server_port,
                log_level="info", timeout_graceful_shutdown=5)


if __name__ == "__main__":
    main()
