"""Seed a freshly initialised real Superset through its REST API (used by real_superset.py).

Creates the same small "sales" world the reference export shows: a SQLite database, one
dataset, charts and a dashboard, all with fixed uuids, so tests can find them by uuid; and,
straight in the metadata database, a custom role that no role map knows.

Standard library only: `.ci/run` builds the template before the project (and httpx) is
installed, on a new machine with a bare Python.
"""

from __future__ import annotations

import http.cookiejar
import json
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["SEED_UUIDS", "give_custom_role", "make_sales_db", "seed_via_rest"]

SEED_UUIDS = {
    "database": "9ab7c7e9-b8ae-4501-9d61-0e426d911f0a",
    "dataset": "80b0ac96-9b2f-42f8-9560-d426f7a623ae",
    "dashboard": "7a89b066-44bc-4889-b32a-e735e08e1ba7",
    "chart_count": "5c225682-d6f8-423a-a1e5-9a3848353bff",
    "chart_region": "ea41ee7a-b4de-4b3c-9e22-f44f044b3f9e",
}


def make_sales_db(path: Path) -> None:
    """A small SQLite data source the seeded datasets and charts query. Written to a side
    file renamed into place, so a killed build never leaves a partial one behind that the
    next build would take for finished."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        return
    partial = path.with_name(f".{path.name}.building")
    partial.unlink(missing_ok=True)
    conn = sqlite3.connect(partial)
    try:
        conn.execute("CREATE TABLE sales (id INTEGER PRIMARY KEY, sold_at TEXT, product TEXT,"
                     " region TEXT, amount REAL)")
        regions, products = ["EMEA", "AMER", "APAC"], ["Widget", "Gadget", "Gizmo"]
        conn.executemany(
            "INSERT INTO sales VALUES (?, ?, ?, ?, ?)",
            [(i, f"2025-01-{1 + i % 28:02d}", products[i % 3], regions[i % 3], 10.0 * i)
             for i in range(1, 61)],
        )
        conn.commit()
    finally:
        conn.close()
    partial.rename(path)


def give_custom_role(metadata: Path, *, role: str, username: str) -> None:
    """`username` ends up with only `role`: Gamma's permissions under a name that no role
    map knows, like a role an organisation made itself."""
    conn = sqlite3.connect(metadata)
    try:
        (gamma,) = conn.execute("SELECT id FROM ab_role WHERE name = 'Gamma'").fetchone()
        role_id = conn.execute("INSERT INTO ab_role (name) VALUES (?)", (role,)).lastrowid
        conn.execute("INSERT INTO ab_permission_view_role (permission_view_id, role_id) "
                     "SELECT permission_view_id, ? FROM ab_permission_view_role "
                     "WHERE role_id = ?", (role_id, gamma))
        conn.execute("UPDATE ab_user_role SET role_id = ? WHERE user_id = "
                     "(SELECT id FROM ab_user WHERE username = ?)", (role_id, username))
        conn.commit()
    finally:
        conn.close()


class _Session:
    """A JSON client that keeps Superset's session cookie: the CSRF token it hands out is
    bound to that session, so every request must carry the same cookie."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {"Accept": "application/json"}
        self._opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        headers = {**self.headers, **({"Content-Type": "application/json"} if data else {})}
        request = urllib.request.Request(f"{self.base_url}{path}", data=data,
                                         headers=headers, method=method)
        try:
            with self._opener.open(request, timeout=60) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{method} {request.full_url} -> {exc.code} "
                               f"{exc.read()[:500].decode(errors='replace')}") from exc


def seed_via_rest(base_url: str, sales_db: Path) -> dict[str, int]:
    """Log in as admin, fetch a CSRF token, then POST database, dataset, dashboard, charts."""
    client = _Session(base_url)
    tokens = client.call("POST", "/api/v1/security/login", {
        "username": "admin", "password": "admin", "provider": "db", "refresh": True})
    client.headers["Authorization"] = f"Bearer {tokens['access_token']}"
    client.headers["X-CSRFToken"] = client.call("GET", "/api/v1/security/csrf_token/")["result"]
    client.headers["Referer"] = base_url
    database = client.call("POST", "/api/v1/database/", {
        "database_name": "sales", "sqlalchemy_uri": f"sqlite:///{sales_db}",
        "expose_in_sqllab": True, "uuid": SEED_UUIDS["database"]})["id"]
    dataset = client.call("POST", "/api/v1/dataset/", {
        "database": database, "schema": "main", "table_name": "sales",
        "uuid": SEED_UUIDS["dataset"]})["id"]
    client.call("PUT", f"/api/v1/dataset/{dataset}", {
        "description": "Sales fact table", "cache_timeout": 600})
    dashboard = client.call("POST", "/api/v1/dashboard/", {
        "dashboard_title": "Sales Overview", "slug": "sales-overview", "published": True,
        "uuid": SEED_UUIDS["dashboard"],
        "json_metadata": json.dumps({"color_scheme": "supersetColors"})})["id"]
    charts = {}
    for key, name, viz, params in [
        ("chart_count", "Sales count", "big_number_total",
         {"metric": "count", "adhoc_filters": []}),
        ("chart_region", "Sales by region", "table",
         {"query_mode": "aggregate", "groupby": ["region"], "metrics": ["count"],
          "adhoc_filters": [], "row_limit": 100}),
    ]:
        params = {"viz_type": viz, "datasource": f"{dataset}__table", **params}
        charts[key] = client.call("POST", "/api/v1/chart/", {
            "slice_name": name, "viz_type": viz, "datasource_id": dataset,
            "datasource_type": "table", "params": json.dumps(params),
            "dashboards": [dashboard], "uuid": SEED_UUIDS[key]})["id"]
    return {"database": database, "dataset": dataset, "dashboard": dashboard, **charts}
