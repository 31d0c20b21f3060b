"""A real app server (uvicorn in a thread, on a free loopback port) for API and browser tests."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import uvicorn

from agent.settings import Settings
from runtime import Runtime, build_runtime


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LiveServer:
    url: str
    runtime: Runtime
    server: uvicorn.Server
    thread: threading.Thread

    @property
    def agent_url(self) -> str:
        return f"{self.url}/agent/"

    def token(self, user: str) -> tuple[str, str]:
        response = httpx.post(f"{self.url}/api/demo/token", json={"user": user}, timeout=10)
        response.raise_for_status()
        body = response.json()
        return body["user_id"], body["user_jwt"]

    def login(self, username: str, password: str | None = None) -> dict:
        """AUTH_MODE=superset: sign in through `POST /api/login` (the demo Superset's users
        have their name as password)."""
        response = httpx.post(f"{self.url}/api/login", timeout=30, json={
            "username": username, "password": username if password is None else password})
        response.raise_for_status()
        return response.json()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


def start_server(settings: Settings) -> LiveServer:
    from app import create_app

    runtime = build_runtime(settings)
    port = free_port()
    # A short grace: a page's long-lived streams would otherwise hold the shutdown.
    config = uvicorn.Config(create_app(runtime=runtime), host="127.0.0.1", port=port,
                            log_level="warning", lifespan="on", timeout_graceful_shutdown=3)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                return LiveServer(url=url, runtime=runtime, server=server, thread=thread)
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError("app server did not start")


def sqlite_server(tmp_path_factory: pytest.TempPathFactory, **overrides: object
                  ) -> Iterator[LiveServer]:
    """For modules whose behaviour does not depend on the database backend: one server on
    SQLite (use as `yield from` in a module's own `live_server` fixture)."""
    tmp = tmp_path_factory.mktemp("app")
    server = start_server(Settings(database_url=f"sqlite:///{tmp}/app.db",
                                   data_dir=tmp / "data",
                                   auth_jwt_secret="web-test-secret-" + "y" * 32,
                                   **overrides))  # type: ignore[arg-type]
    yield server
    server.stop()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[LiveServer]:
    """One app server per test module and database backend (starting Gradio is not free)."""
    from tests.conftest import postgres_schema

    tmp = tmp_path_factory.mktemp("app")
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp}/app.db"
        else:
            url = stack.enter_context(postgres_schema())
        settings = Settings(database_url=url, data_dir=tmp / "data",
                            auth_jwt_secret="web-test-secret-" + "y" * 32,
                            **getattr(request.module, "SERVER_SETTINGS", {}))
        server = start_server(settings)
        stack.callback(server.stop)
        yield server


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless Debian Chromium via Playwright (no browser download: it cannot happen here)."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("Chromium is required under CI=true (.ci/run installs it)")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                              args=CHROMIUM_ARGS)
        yield instance
        instance.close()
