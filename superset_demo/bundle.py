"""Dashboard export/import ZIP bundles in Superset's own v1 format (uuid-keyed YAML).

Layout mirrors the reference export: `<root>/metadata.yaml`, `dashboards/`, `charts/`,
`datasets/<database>/`, `databases/`. Import follows ImportDashboardsCommand: the
dashboard is refused when its uuid exists unless `overwrite`; nested charts, datasets and
databases are matched by uuid and reused untouched, missing ones are created with new ids;
dashboard-chart links are added (never removed) and layout chart ids are remapped.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from datetime import UTC, datetime
from typing import Any

import yaml

from superset_demo.errors import DemoError, command_error
from superset_demo.shapes import now_iso
from superset_demo.store import DocumentStore

__all__ = ["export_dashboards", "import_bundle"]

_DATASET_KEYS = ("table_name", "main_dttm_col", "currency_code_column", "description",
                 "default_endpoint", "offset", "cache_timeout", "catalog", "schema", "sql",
                 "params", "template_params", "filter_select_enabled",
                 "fetch_values_predicate", "extra", "normalize_columns",
                 "always_filter_main_dttm", "folders", "uuid")
_DATABASE_KEYS = ("database_name", "sqlalchemy_uri", "cache_timeout", "expose_in_sqllab",
                  "allow_run_async", "allow_ctas", "allow_cvas", "allow_dml",
                  "allow_file_upload", "extra", "impersonate_user", "configuration_method",
                  "uuid")


def _safe(name: str) -> str:
    """Like werkzeug's secure_filename, which Superset uses for bundle file names."""
    name = re.sub(r"\s+", "_", name.strip())
    return re.sub(r"[^A-Za-z0-9_.-]", "", name).strip("._") or "file"


def _dump(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _chart_yaml(chart: dict[str, Any], dataset_uuid: str) -> dict[str, Any]:
    return {
        "slice_name": chart["slice_name"], "description": chart.get("description"),
        "certified_by": chart.get("certified_by"),
        "certification_details": chart.get("certification_details"),
        "viz_type": chart["viz_type"], "params": chart["params"],
        "query_context": chart.get("query_context"), "cache_timeout": chart.get("cache_timeout"),
        "uuid": chart["uuid"], "version": "1.0.0", "dataset_uuid": dataset_uuid,
    }


def _dataset_yaml(ds: dict[str, Any], database_uuid: str) -> dict[str, Any]:
    data = {key: ds.get(key) for key in _DATASET_KEYS}
    data["metrics"] = [{k: v for k, v in m.items() if k != "id"} for m in ds["metrics"]]
    data["columns"] = [{k: v for k, v in c.items() if k != "id"} for c in ds["columns"]]
    data["version"] = "1.0.0"
    data["database_uuid"] = database_uuid
    return data


def _database_yaml(db: dict[str, Any]) -> dict[str, Any]:
    data = {key: db.get(key) for key in _DATABASE_KEYS}
    data["extra"] = json.loads(db["extra"]) if isinstance(db.get("extra"), str) else db.get("extra")
    data["version"] = "1.0.0"
    return data


def _dashboard_yaml(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "dashboard_title": doc["dashboard_title"], "description": None, "css": doc.get("css"),
        "slug": doc["slug"], "certified_by": doc.get("certified_by"),
        "certification_details": doc.get("certification_details"),
        "published": doc["published"], "uuid": doc["uuid"],
        "metadata": json.loads(doc["json_metadata"] or "{}"),
        "position": json.loads(doc["position_json"] or "{}"), "theme_uuid": None,
        "version": "1.0.0",
    }


def export_dashboards(store: DocumentStore, env: str,
                      dashboards: list[dict[str, Any]]) -> tuple[str, bytes]:
    """(bundle name, zip bytes) for the given dashboards and everything they use."""
    now = datetime.now(UTC)
    root = f"dashboard_export_{now.strftime('%Y%m%dT%H%M%S')}"
    files: dict[str, str] = {"metadata.yaml": _dump(
        {"version": "1.0.0", "type": "Dashboard", "timestamp": now.isoformat()})}
    for doc in dashboards:
        files[f"dashboards/{_safe(doc['dashboard_title'])}_{doc['id']}.yaml"] = _dump(
            _dashboard_yaml(doc))
        for cid in doc["chart_ids"]:
            chart = store.get(env, "chart", cid)
            ds = store.get(env, "dataset", chart["datasource_id"]) if chart else None
            if chart is None or ds is None:
                continue
            db = store.get(env, "database", ds["database_id"])
            files[f"charts/{_safe(chart['slice_name'])}_{chart['id']}.yaml"] = _dump(
                _chart_yaml(chart, ds["uuid"]))
            files[f"datasets/{_safe(db['database_name'])}/{_safe(ds['table_name'])}_"
                  f"{ds['id']}.yaml"] = _dump(_dataset_yaml(ds, db["uuid"]))
            files[f"databases/{_safe(db['database_name'])}.yaml"] = _dump(_database_yaml(db))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, text in files.items():
            archive.writestr(f"{root}/{path}", text)
    return root, buffer.getvalue()


def _read_bundle(payload: bytes) -> dict[str, dict[str, Any]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(payload))
    except zipfile.BadZipFile as exc:
        raise DemoError(400, {"message": "Not a ZIP file"}) from exc
    configs: dict[str, dict[str, Any]] = {}
    for name in archive.namelist():
        if not name.endswith((".yaml", ".yml")):
            continue
        relative = name.split("/", 1)[1] if "/" in name else name
        try:
            configs[relative] = yaml.safe_load(archive.read(name)) or {}
        except yaml.YAMLError as exc:
            raise command_error(f"Error importing dashboard: {relative}: invalid YAML") from exc
    meta = configs.get("metadata.yaml")
    if not meta or meta.get("type") != "Dashboard":
        raise command_error("Error importing dashboard: metadata.yaml: "
                            "Must be equal to Dashboard.", {"metadata.yaml": {"type": [
                                "Must be equal to Dashboard."]}})
    return configs


def _reuse_or_create(store: DocumentStore, env: str, kind: str, uuid: str,
                     build: Any) -> dict[str, Any]:
    existing = store.by_uuid(env, kind, uuid)
    if existing is not None:
        return existing
    doc = build(store.next_id(env, kind))
    return store.put(env, kind, doc)


def import_bundle(store: DocumentStore, env: str, payload: bytes, *, overwrite: bool) -> None:
    """Import every dashboard of a bundle (see the module docstring for the rules)."""
    configs = _read_bundle(payload)
    dashboards = {p: c for p, c in configs.items() if p.startswith("dashboards/")}
    for path, config in dashboards.items():
        if store.by_uuid(env, "dashboard", config["uuid"]) is not None and not overwrite:
            message = "Dashboard already exists and `overwrite=true` was not passed"
            raise command_error(f"Error importing dashboard: {path}: {message}", {path: message})
    now = now_iso()
    db_ids: dict[str, int] = {}
    for config in (c for p, c in configs.items() if p.startswith("databases/")):
        def build_db(new_id: int, c: dict[str, Any] = config) -> dict[str, Any]:
            fields = {k: c.get(k) for k in _DATABASE_KEYS}
            fields["extra"] = json.dumps(c.get("extra") or {})
            backend = str(c.get("sqlalchemy_uri", "")).split(":", 1)[0].split("+", 1)[0]
            return {**fields, "id": new_id, "backend": backend, "changed_on": now,
                    "created_on": now}
        db_ids[config["uuid"]] = _reuse_or_create(store, env, "database", config["uuid"],
                                                  build_db)["id"]
    ds_ids: dict[str, int] = {}
    for config in (c for p, c in configs.items() if p.startswith("datasets/")):
        def build_ds(new_id: int, c: dict[str, Any] = config) -> dict[str, Any]:
            columns = [{**col, "id": i} for i, col in enumerate(c.get("columns") or [], 1)]
            metrics = [{**m, "id": i} for i, m in enumerate(c.get("metrics") or [], 1)]
            return {**{k: c.get(k) for k in _DATASET_KEYS}, "id": new_id,
                    "database_id": db_ids[c["database_uuid"]], "owners": [],
                    "columns": columns, "metrics": metrics, "is_sqllab_view": False,
                    "changed_on": now, "created_on": now, "changed_by": None}
        ds_ids[config["uuid"]] = _reuse_or_create(store, env, "dataset", config["uuid"],
                                                  build_ds)["id"]
    chart_ids: dict[str, int] = {}
    for config in (c for p, c in configs.items() if p.startswith("charts/")):
        def build_chart(new_id: int, c: dict[str, Any] = config) -> dict[str, Any]:
            ds_id = ds_ids[c["dataset_uuid"]]
            params = {**(c.get("params") or {}), "datasource": f"{ds_id}__table"}
            return {"id": new_id, "uuid": c["uuid"], "slice_name": c["slice_name"],
                    "viz_type": c["viz_type"], "datasource_id": ds_id,
                    "datasource_type": "table", "params": params,
                    "query_context": c.get("query_context"),
                    "description": c.get("description"), "cache_timeout": c.get("cache_timeout"),
                    "certified_by": c.get("certified_by"),
                    "certification_details": c.get("certification_details"), "owners": [],
                    "changed_on": now, "created_on": now, "changed_by": None}
        chart_ids[config["uuid"]] = _reuse_or_create(store, env, "chart", config["uuid"],
                                                     build_chart)["id"]
    for config in dashboards.values():
        _import_dashboard(store, env, config, chart_ids, now)


def _import_dashboard(store: DocumentStore, env: str, config: dict[str, Any],
                      chart_ids: dict[str, int], now: str) -> None:
    position = config.get("position") or {}
    linked: list[int] = []
    for node in position.values():
        if isinstance(node, dict) and node.get("type") == "CHART":
            meta = node.setdefault("meta", {})
            if meta.get("uuid") in chart_ids:
                meta["chartId"] = chart_ids[meta["uuid"]]
                linked.append(chart_ids[meta["uuid"]])
    existing = store.by_uuid(env, "dashboard", config["uuid"])
    slug = config.get("slug")
    if slug and any(d["slug"] == slug and d["uuid"] != config["uuid"]
                    for d in store.all(env, "dashboard")):
        raise command_error(f"Error importing dashboard: slug {slug!r} is already used")
    doc = existing or {"id": store.next_id(env, "dashboard"), "uuid": config["uuid"],
                       "owners": [], "chart_ids": [], "created_on": now, "theme_id": None}
    doc.update({
        "dashboard_title": config["dashboard_title"], "slug": slug,
        "published": bool(config.get("published")), "css": config.get("css"),
        "certified_by": config.get("certified_by"),
        "certification_details": config.get("certification_details"),
        "json_metadata": json.dumps(config.get("metadata") or {}),
        "position_json": json.dumps(position), "changed_on": now, "changed_by": None,
        "chart_ids": list(dict.fromkeys([*doc["chart_ids"], *linked])),
    })
    store.put(env, "dashboard", doc)
