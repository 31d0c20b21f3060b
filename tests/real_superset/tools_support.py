"""Helpers for the tool-level tests against real Superset: settings whose environments are
the real instances, the agent's own tool path (per-env clients, validation, execution)
pointed at them, a plain admin REST session to make and remove throwaway objects, and the
shapes of the read tools' results that the demo server and real Superset must both give.

The throwaway objects exist because the instances live for the whole session and other
tests rely on the seeded "Sales Overview": writes and deletes only ever touch objects a
test made itself, with unique names.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx

from agent.settings import EnvironmentConfig, Settings
from agent.superset.clients import SupersetClients
from agent.tools.catalog import all_tools
from agent.tools.registry import ToolServices
from tests.agent.superset_support import Harness

__all__ = ["ADMIN", "SALES_DASHBOARD_SLUG", "SHAPES", "AdminRest", "assert_shape",
           "real_harness", "real_settings", "unique"]

ADMIN = ("admin", "admin")  # created by scripts/real_superset.py
SALES_DASHBOARD_SLUG = "sales-overview"  # seeded by scripts/real_superset_seed.py
JWT_SECRET = "real-superset-tests-" + "s" * 32


def unique(prefix: str) -> str:
    return f"{prefix} {uuid.uuid4().hex[:8]}"


def real_settings(urls: dict[str, str], tmp_path: Path, *,
                  database_url: str | None = None) -> Settings:
    """Settings as an operator would write them: one service-login environment per real
    instance, named and tiered like it ("dev", "prod")."""
    envs = [EnvironmentConfig(name=name, base_url=url, tier=name,  # type: ignore[arg-type]
                              auth_mode="service", username=ADMIN[0], password=ADMIN[1])
            for name, url in urls.items()]
    return Settings(superset_environments=envs, data_dir=tmp_path / "data",
                    database_url=database_url or f"sqlite:///{tmp_path}/agent.db",
                    auth_jwt_secret=JWT_SECRET)


def real_harness(urls: dict[str, str], tmp_path: Path, db: Any | None = None) -> Harness:
    """The tool harness of the demo tests with real clients and no demo server (its
    `demo` and `state()` are not used here)."""
    settings = real_settings(urls, tmp_path)
    clients = SupersetClients(settings)
    return Harness(demo=None, settings=settings, clients=clients,  # type: ignore[arg-type]
                   services=ToolServices(superset=clients, db=db),
                   tools={spec.name: spec for spec in all_tools()})


class AdminRest:
    """A raw admin session (login + CSRF) for arranging and checking, independent of the
    client under test."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.http = httpx.AsyncClient(base_url=base_url, timeout=60,
                                      headers={"Accept": "application/json"})
        self._made: list[tuple[str, int]] = []

    async def __aenter__(self) -> AdminRest:
        tokens = await self._ok(self.http.post("/api/v1/security/login", json={
            "username": ADMIN[0], "password": ADMIN[1], "provider": "db", "refresh": True}))
        self.http.headers["Authorization"] = f"Bearer {tokens['access_token']}"
        csrf = await self._ok(self.http.get("/api/v1/security/csrf_token/"))
        self.http.headers["X-CSRFToken"] = csrf["result"]
        return self

    async def __aexit__(self, *_: object) -> None:
        try:
            # Newest first (charts before their datasets); Superset allows every order.
            for resource, pk in reversed(self._made):
                await self.http.delete(f"/api/v1/{resource}/{pk}")
        finally:
            await self.http.aclose()

    @staticmethod
    async def _ok(request: Any) -> Any:
        response = await request
        assert response.status_code < 400, (response.request.url, response.text[:500])
        return response.json()

    async def get(self, resource: str, key: int | str) -> dict[str, Any] | None:
        response = await self.http.get(f"/api/v1/{resource}/{key}")
        return None if response.status_code == 404 else response.json()["result"]

    async def find(self, resource: str, col: str, value: str) -> list[dict[str, Any]]:
        q = f"(filters:!((col:{col},opr:eq,value:'{value}')))"
        return (await self._ok(self.http.get(f"/api/v1/{resource}/", params={"q": q})))[
            "result"]

    async def count(self, resource: str) -> int:
        return int((await self._ok(self.http.get(f"/api/v1/{resource}/")))["count"])

    async def me(self) -> int:
        return int((await self._ok(self.http.get("/api/v1/me/")))["result"]["id"])

    def adopt(self, resource: str, pk: int) -> None:
        """Delete this object at the end too (one a test made some other way)."""
        self._made.append((resource, int(pk)))

    async def create(self, resource: str, payload: dict[str, Any]) -> int:
        body = await self._ok(self.http.post(f"/api/v1/{resource}/", json=payload))
        self.adopt(resource, body["id"])
        return int(body["id"])

    async def sales_dataset(self) -> dict[str, Any]:
        return (await self._ok(self.http.get(
            f"/api/v1/dashboard/{SALES_DASHBOARD_SLUG}/datasets")))["result"][0]

    async def virtual_dataset(self, name: str) -> int:
        """A SQL dataset on the seeded `sales` database (its own table name, so it can
        be created many times in one instance)."""
        database = (await self.sales_dataset())["database"]["id"]
        return await self.create("dataset", {
            "database": database, "schema": "main", "table_name": name,
            "sql": "SELECT region, product, amount FROM sales"})

    async def dashboard_with_chart(self, title: str, dataset_id: int) -> tuple[int, int]:
        """An unpublished dashboard with one table chart; returns (dashboard id, chart id)."""
        dash_id = await self.create("dashboard", {"dashboard_title": title, "published": False})
        chart_id = await self.create("chart", {
            "slice_name": f"{title} chart", "viz_type": "table", "datasource_id": dataset_id,
            "datasource_type": "table", "dashboards": [dash_id],
            "params": json.dumps({"viz_type": "table", "groupby": ["region"],
                                  "metrics": ["count"]})})
        return dash_id, chart_id


# The contract of the read tools' results, checked on the demo server and on real Superset.
# tool -> where in the result -> (keys always there, keys that may be left out when empty)
SHAPES: dict[str, dict[str, tuple[set[str], set[str]]]] = {
    "list_dashboards": {
        "": ({"env", "count", "page", "page_size", "dashboards"}, set()),
        "dashboards": ({"id", "title", "published", "owners", "url"}, {"slug", "changed"})},
    "get_dashboard": {"": (
        {"env", "id", "title", "uuid", "published", "url", "owners", "charts", "chart_count"},
        {"slug", "certified_by", "changed", "changed_by", "tags"})},
    "get_dashboard_charts": {
        "": ({"env", "dashboard_id", "count", "charts"}, set()),
        "charts": ({"id", "name", "viz_type", "datasource"}, {"description"})},
    "get_dashboard_datasets": {
        "": ({"env", "dashboard_id", "count", "datasets"}, set()),
        "datasets": ({"id", "table_name", "name", "database", "columns", "metrics"},
                     {"schema", "kind"})},
    "export_dashboard": {
        "": ({"env", "dashboard_id", "bytes", "type", "version", "exported_at", "counts",
              "objects", "files"}, set()),
        "objects": ({"kind", "uuid", "name"}, {"dataset_uuid", "database_uuid"})},
    "list_datasets": {
        "": ({"env", "count", "page", "page_size", "datasets"}, set()),
        "datasets": ({"id", "table_name", "database", "kind"},
                     {"schema", "description", "changed"})},
    "get_dataset": {"": (
        {"env", "id", "table_name", "uuid", "kind", "database", "owners", "columns",
         "metrics"},
        {"schema", "description", "sql", "cache_timeout", "time_column", "changed"})},
    "get_dataset_usage": {
        "": ({"env", "dataset_id", "charts", "dashboards"}, set()),
        "charts.items": ({"id", "name", "viz_type"}, set()),
        "dashboards.items": ({"id", "title"}, {"slug"})},
    "preview_dataset": {"": (
        {"env", "dataset_id", "table_name", "columns", "row_count", "rows"}, set())},
    "list_charts": {
        "": ({"env", "count", "page", "page_size", "charts"}, set()),
        "charts": ({"id", "name", "viz_type", "dataset"}, {"changed", "dashboards"})},
    "compare_environments": {
        "": ({"differs", "source_env", "target_env", "dashboard", "counts", "objects"}, set()),
        "objects": ({"kind", "uuid", "name", "status"},
                    {"target_id", "differences", "note"})},
    "plan_migration": {
        "": ({"dry_run", "source_env", "target_env", "dashboard", "create", "overwrite",
              "reuse", "warnings", "counts"}, set()),
        "overwrite": ({"kind", "uuid", "name", "target_id"}, set())},
}
_TYPES = {"id": int, "count": int, "uuid": str, "title": str, "name": str, "published": bool}


def _at(data: Any, where: str) -> list[Any]:
    for key in filter(None, where.split(".")):
        data = data[key]
    return data if isinstance(data, list) else [data]


def assert_shape(tool: str, data: dict[str, Any]) -> None:
    for where, (required, optional) in SHAPES[tool].items():
        items = _at(data, where)
        assert items, f"{tool}: {where} is empty, so its shape is not checked"
        for item in items:
            assert required <= set(item) <= required | optional, (tool, where, sorted(item))
            for key, kind in _TYPES.items():
                assert key not in item or isinstance(item[key], kind), (tool, where, key)
            assert all(isinstance(o, str) for o in item.get("owners", [])), (tool, where)
