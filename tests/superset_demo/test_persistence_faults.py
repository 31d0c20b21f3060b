"""Persistence across restarts, reset, and DEMO_FAULTS failure/latency injection."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from superset_demo import DemoSuperset


async def _login(client: httpx.AsyncClient) -> None:
    resp = await client.post("/api/v1/security/login", json={
        "username": "admin", "password": "admin", "provider": "db"})
    client.headers["Authorization"] = f"Bearer {resp.json()['access_token']}"


async def test_edits_survive_reconstruction_and_reset_reseeds(login, demo: DemoSuperset,
                                                              demo_path: Path) -> None:
    client = await login()
    await client.put("/api/v1/dashboard/1", json={"dashboard_title": "Renamed"})
    started = time.perf_counter()
    again = DemoSuperset(demo_path)
    assert time.perf_counter() - started < 5  # ~0.01 s; generous for loaded CI machines
    async with httpx.AsyncClient(transport=again.transport(), base_url=again.base_url("ss-dev"),
                                 headers={"Accept": "application/json"}) as other:
        await _login(other)
        title = (await other.get("/api/v1/dashboard/1")).json()["result"]["dashboard_title"]
        assert title == "Renamed"
        old_token = client.headers["Authorization"]
        still = await other.get("/api/v1/dashboard/1", headers={"Authorization": old_token})
        assert still.status_code == 200, "tokens survive a restart (secret is persisted)"
        again.reset()
        title = (await other.get("/api/v1/dashboard/1")).json()["result"]["dashboard_title"]
        assert title == "Executive Summary"
    again.close()


async def test_fault_count_methods_and_runtime_toggle(demo_path: Path) -> None:
    demo = DemoSuperset(demo_path, faults={
        "ss-dev": {"status": 502, "count": 2, "methods": ["GET"], "latency_ms": 0}})
    async with httpx.AsyncClient(transport=demo.transport(), base_url=demo.base_url("ss-dev"),
                                 headers={"Accept": "application/json"}) as client:
        await _login(client)  # POST: not a matching method
        assert (await client.get("/health")).status_code == 502
        assert (await client.get("/api/v1/dashboard/1")).status_code == 502
        assert (await client.get("/api/v1/dashboard/1")).status_code == 200
        demo.set_faults("ss-dev", {"status": 503, "count": 1})
        assert demo.get_faults()["ss-dev"]["count"] == 1
        assert (await client.get("/health")).status_code == 503
        assert (await client.get("/health")).status_code == 200
        demo.set_faults("ss-dev", {"status": 500, "count": 5})
        demo.set_faults("ss-dev", None)
        assert (await client.get("/health")).status_code == 200
    async with httpx.AsyncClient(transport=demo.transport(),
                                 base_url=demo.base_url("prod")) as prod:
        assert (await prod.get("/health")).text == "OK", "other environments unaffected"
    with pytest.raises(KeyError):
        demo.set_faults("nowhere", None)
    demo.close()


async def test_fault_latency(demo_path: Path) -> None:
    demo = DemoSuperset(demo_path, faults={"staging": {"count": 0, "latency_ms": 300}})
    async with httpx.AsyncClient(transport=demo.transport(),
                                 base_url=demo.base_url("staging")) as client:
        started = time.perf_counter()
        assert (await client.get("/health")).status_code == 200
        assert time.perf_counter() - started >= 0.3
    demo.close()
