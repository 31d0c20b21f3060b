"""Fixtures for the demo Superset: a fresh server per test and logged-in httpx clients."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from superset_demo import DemoSuperset

Login = Callable[..., Awaitable[httpx.AsyncClient]]


@pytest.fixture(scope="session")
def seeded_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seed once per session; tests copy the file (a fresh seed per test is wasteful)."""
    path = tmp_path_factory.mktemp("demo-template") / "demo_superset.db"
    DemoSuperset(path).close()
    return path


@pytest.fixture
def demo_path(tmp_path: Path, seeded_template: Path) -> Path:
    path = tmp_path / "demo_superset.db"
    path.write_bytes(seeded_template.read_bytes())
    return path


@pytest.fixture
def demo(demo_path: Path) -> DemoSuperset:
    server = DemoSuperset(demo_path)
    yield server
    server.close()


@pytest.fixture
async def login(demo: DemoSuperset) -> AsyncIterator[Login]:
    """`await login(env, user="admin", csrf=True)` -> a client with bearer token and CSRF."""
    clients: list[httpx.AsyncClient] = []

    async def make(env: str = "ss-dev", user: str = "admin", csrf: bool = True
                   ) -> httpx.AsyncClient:
        client = httpx.AsyncClient(transport=demo.transport(), base_url=demo.base_url(env),
                                   headers={"Accept": "application/json"})
        clients.append(client)
        resp = await client.post("/api/v1/security/login", json={
            "username": user, "password": user, "provider": "db", "refresh": True})
        assert resp.status_code == 200, resp.text
        client.headers["Authorization"] = f"Bearer {resp.json()['access_token']}"
        if csrf:
            token = (await client.get("/api/v1/security/csrf_token/")).json()["result"]
            client.headers["X-CSRFToken"] = token
        return client

    yield make
    for client in clients:
        await client.aclose()
