"""`DemoSuperset`: the bundled Superset-compatible server for every demo environment.

One ASGI app serves `/{env}/api/v1/...` and `/{env}/health` for `ss-dev`, `staging` and
`prod`; each environment is its own FastAPI sub-app with its own token scope, so a client
pointed at `base_url(env)` cannot tell it from a real Superset for the endpoints the tools
use. State lives in a SQLite file; the first construction seeds it, later ones reuse it.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp

from superset_demo import (
    auth,
    routes_charts,
    routes_dashboards,
    routes_dataset_bundles,
    routes_datasets,
)
from superset_demo.errors import DemoError
from superset_demo.faults import FaultInjector, FaultMiddleware
from superset_demo.rison_query import RisonError
from superset_demo.seed import ENVIRONMENTS, seed_environment
from superset_demo.store import DocumentStore

__all__ = ["DEMO_HOST", "DemoSuperset"]

DEMO_HOST = "demo-superset"
_SEED_VERSION = "1"


def _env_app(ctx: auth.EnvContext) -> FastAPI:
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.ctx = ctx

    @app.exception_handler(DemoError)
    async def _demo_error(_: Request, exc: DemoError) -> JSONResponse:
        return JSONResponse(exc.body, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        # Flask's <int:pk> converter does not match a non-integer: the route is "not found".
        if any(err.get("loc", [""])[0] == "path" for err in exc.errors()):
            return JSONResponse({"message": "Not found"}, status_code=404)
        return JSONResponse({"message": {"q": ["Not a valid rison argument"]}}, 400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return JSONResponse({"message": "Not found"}, status_code=404)
        if exc.status_code == 405:
            return JSONResponse({"message": "Method Not Allowed"}, status_code=405)
        return JSONResponse({"message": str(exc.detail)}, status_code=exc.status_code)

    @app.get("/health", response_class=PlainTextResponse)
    @app.get("/healthcheck", response_class=PlainTextResponse)
    async def _health() -> str:
        return "OK"

    @app.exception_handler(RisonError)
    async def _rison(_: Request, exc: RisonError) -> JSONResponse:
        return JSONResponse({"message": f"Not a valid rison argument: {exc}"}, 400)

    for module in (auth, routes_dashboards, routes_dataset_bundles, routes_datasets,
                   routes_charts):
        app.include_router(module.router)
    return app


class DemoSuperset:
    """The demo server: `.app` (ASGI), `.transport()`, `.base_url(env)`, faults and reset."""

    def __init__(self, db_path: Path, *, faults: dict[str, Any] | None = None,
                 access_ttl_s: int = auth.ACCESS_TTL_S) -> None:
        self.db_path = Path(db_path)
        self.store = DocumentStore(self.db_path)
        self.environments: list[str] = list(ENVIRONMENTS)
        secret = self.store.get_meta("jwt_secret")
        if secret is None:
            secret = secrets.token_hex(32)
            self.store.set_meta("jwt_secret", secret)
        self._secret = secret
        if self.store.get_meta("seed_version") != _SEED_VERSION:
            self.reset()
        self.faults = FaultInjector(faults)
        root = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
        for env in self.environments:
            root.mount(f"/{env}", _env_app(auth.EnvContext(env, self._secret, self.store,
                                                           access_ttl_s)))
        self.app: ASGIApp = FaultMiddleware(root, self.faults)

    def transport(self) -> httpx.ASGITransport:
        """An httpx transport that calls the app in-process (use with `base_url(env)`)."""
        return httpx.ASGITransport(app=self.app)

    def base_url(self, env: str) -> str:
        if env not in self.environments:
            raise KeyError(f"unknown demo environment {env!r}")
        return f"http://{DEMO_HOST}/{env}"

    def set_faults(self, env: str, spec: dict[str, Any] | None) -> None:
        """Set (or clear with None) one environment's faults at run time."""
        if env not in self.environments:
            raise KeyError(f"unknown demo environment {env!r}")
        self.faults.set(env, spec)

    def get_faults(self) -> dict[str, dict[str, Any]]:
        return self.faults.all()

    def reset(self) -> None:
        """Drop every demo object and seed all environments again (faults are kept)."""
        self.store.wipe()
        for env in self.environments:
            seed_environment(self.store, env)
        self.store.set_meta("seed_version", _SEED_VERSION)

    def close(self) -> None:
        self.store.close()
