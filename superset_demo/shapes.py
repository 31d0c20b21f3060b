"""Stored demo documents -> the JSON shapes real Superset 6.1 returns (as probed on a live one).

Only fields a client could plausibly read are produced; names, nesting and types follow
the live server (e.g. chart `params` and dashboard `json_metadata` are JSON *strings*).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from superset_demo.catalog import USERS

__all__ = [
    "chart_entity",
    "chart_get",
    "chart_list_item",
    "dashboard_dataset",
    "dashboard_get",
    "dashboard_list_item",
    "database_list_item",
    "dataset_get",
    "dataset_list_item",
    "humanize",
    "list_response",
    "now_iso",
    "user_brief",
]

_USERS = {row[0]: row for row in USERS}


def now_iso() -> str:
    return datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="microseconds")


def humanize(stamp: str) -> str:
    then = datetime.fromisoformat(stamp).replace(tzinfo=UTC)
    seconds = max(0, int((datetime.now(UTC) - then).total_seconds()))
    for size, unit in ((86400 * 365, "year"), (86400 * 30, "month"), (86400, "day"),
                       (3600, "hour"), (60, "minute")):
        if seconds >= size:
            count = seconds // size
            return f"{'a' if count == 1 else count} {unit}{'' if count == 1 else 's'} ago"
    return f"{seconds} seconds ago"


def user_brief(user_id: int | None, *, email: bool = False) -> dict[str, Any] | None:
    row = _USERS.get(user_id or 0)
    if row is None:
        return None
    brief: dict[str, Any] = {"first_name": row[2], "id": row[0], "last_name": row[3]}
    if email:
        brief["email"] = f"{row[1]}@example.org"
    return brief


def _name(user_id: int | None) -> str:
    row = _USERS.get(user_id or 0)
    return f"{row[2]} {row[3]}" if row else ""


def _utc(stamp: str) -> str:
    return f"{stamp}+0000" if "." in stamp else f"{stamp}.000000+0000"


def list_response(count: int, items: list[dict[str, Any]], title: str,
                  order_columns: list[str]) -> dict[str, Any]:
    return {
        "count": count, "description_columns": {}, "ids": [item["id"] for item in items],
        "label_columns": {}, "list_columns": sorted(items[0]) if items else [],
        "list_title": title, "order_columns": order_columns, "result": items,
    }


def dashboard_list_item(doc: dict[str, Any]) -> dict[str, Any]:
    ident = doc["slug"] or doc["id"]
    return {
        "certification_details": doc.get("certification_details"),
        "certified_by": doc.get("certified_by"),
        "changed_by": user_brief(doc.get("changed_by")),
        "changed_by_name": _name(doc.get("changed_by")),
        "changed_on_delta_humanized": humanize(doc["changed_on"]),
        "changed_on_utc": _utc(doc["changed_on"]), "changed_on": doc["changed_on"],
        "created_by": user_brief(doc["owners"][0] if doc["owners"] else None),
        "created_on_delta_humanized": humanize(doc["created_on"]),
        "dashboard_title": doc["dashboard_title"], "id": doc["id"],
        "is_managed_externally": False,
        "owners": [user_brief(uid, email=True) for uid in doc["owners"]],
        "published": doc["published"], "roles": [], "slug": doc["slug"],
        "status": "published" if doc["published"] else "draft", "tags": [],
        "thumbnail_url": f"/api/v1/dashboard/{doc['id']}/thumbnail/{doc['uuid'][:8]}/",
        "url": f"/superset/dashboard/{ident}/", "uuid": doc["uuid"],
    }


def dashboard_get(doc: dict[str, Any], chart_names: list[str]) -> dict[str, Any]:
    item = dashboard_list_item(doc)
    for key in ("changed_on_utc", "status"):
        item.pop(key)
    item.update({
        "charts": chart_names, "css": doc.get("css"), "json_metadata": doc["json_metadata"],
        "position_json": doc.get("position_json"), "theme": None,
        "owners": [user_brief(uid) for uid in doc["owners"]],
    })
    return item


def _form_data(chart: dict[str, Any]) -> dict[str, Any]:
    return {**chart["params"], "slice_id": chart["id"]}


def chart_entity(chart: dict[str, Any]) -> dict[str, Any]:
    """One item of GET /dashboard/{id}/charts."""
    return {
        "cache_timeout": chart.get("cache_timeout"),
        "certification_details": chart.get("certification_details"),
        "certified_by": chart.get("certified_by"), "changed_on": chart["changed_on"],
        "description": chart.get("description"), "description_markeddown": "",
        "form_data": _form_data(chart), "id": chart["id"], "slice_name": chart["slice_name"],
        "slice_url": f"/explore/?slice_id={chart['id']}",
    }


def chart_list_item(chart: dict[str, Any], dataset: dict[str, Any] | None,
                    dashboards: list[dict[str, Any]]) -> dict[str, Any]:
    ds_name = f"{dataset['schema']}.{dataset['table_name']}" if dataset else None
    return {
        "cache_timeout": chart.get("cache_timeout"),
        "certification_details": chart.get("certification_details"),
        "certified_by": chart.get("certified_by"),
        "changed_by": user_brief(chart.get("changed_by")),
        "changed_by_name": _name(chart.get("changed_by")),
        "changed_on_delta_humanized": humanize(chart["changed_on"]),
        "changed_on_utc": _utc(chart["changed_on"]), "changed_on": chart["changed_on"],
        "created_by": user_brief(chart["owners"][0] if chart["owners"] else None),
        "created_by_name": _name(chart["owners"][0] if chart["owners"] else None),
        "dashboards": [{"dashboard_title": d["dashboard_title"], "id": d["id"]}
                       for d in dashboards],
        "datasource_id": chart["datasource_id"], "datasource_name_text": ds_name,
        "datasource_type": "table",
        "datasource_url": f"/explore/?datasource_type=table&datasource_id="
                          f"{chart['datasource_id']}",
        "description": chart.get("description"), "description_markeddown": "",
        "edit_url": f"/chart/edit/{chart['id']}", "form_data": _form_data(chart),
        "id": chart["id"], "is_managed_externally": False,
        "owners": [user_brief(uid, email=True) for uid in chart["owners"]],
        "params": json.dumps(chart["params"]), "slice_name": chart["slice_name"],
        "slice_url": f"/explore/?slice_id={chart['id']}",
        "table": {"default_endpoint": None,
                  "table_name": dataset["table_name"] if dataset else None},
        "tags": [], "url": f"/explore/?slice_id={chart['id']}", "uuid": chart["uuid"],
        "viz_type": chart["viz_type"],
    }


def chart_get(chart: dict[str, Any], dataset: dict[str, Any] | None,
              dashboards: list[dict[str, Any]]) -> dict[str, Any]:
    item = chart_list_item(chart, dataset, dashboards)
    for key in ("changed_by", "changed_by_name", "changed_on_utc", "created_by",
                "created_by_name", "description_markeddown", "edit_url", "form_data",
                "slice_url", "table", "changed_on"):
        item.pop(key)
    item["dashboards"] = [{"dashboard_title": d["dashboard_title"], "id": d["id"],
                           "json_metadata": d["json_metadata"]} for d in dashboards]
    item["datasource_uuid"] = dataset["uuid"] if dataset else None
    item["query_context"] = chart.get("query_context")
    return item


def _database_brief(db: dict[str, Any] | None) -> dict[str, Any] | None:
    if db is None:
        return None
    return {"allow_multi_catalog": False, "backend": db["backend"],
            "database_name": db["database_name"], "id": db["id"], "uuid": db["uuid"]}


def dataset_list_item(ds: dict[str, Any], db: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "catalog": ds.get("catalog"), "changed_by": user_brief(ds.get("changed_by")),
        "changed_by_name": _name(ds.get("changed_by")),
        "changed_on_delta_humanized": humanize(ds["changed_on"]),
        "changed_on_utc": _utc(ds["changed_on"]), "changed_on": ds["changed_on"],
        "database": {"database_name": db["database_name"], "id": db["id"],
                     "uuid": db["uuid"]} if db else None,
        "datasource_type": "table", "default_endpoint": ds.get("default_endpoint"),
        "description": ds.get("description"),
        "explore_url": f"/explore/?datasource_type=table&datasource_id={ds['id']}",
        "extra": ds.get("extra"), "id": ds["id"],
        "kind": "virtual" if ds.get("sql") else "physical",
        "owners": [user_brief(uid) for uid in ds["owners"]], "schema": ds.get("schema"),
        "sql": ds.get("sql"), "table_name": ds["table_name"], "uuid": ds["uuid"],
    }


def _select_star(ds: dict[str, Any]) -> str:
    return f"SELECT\n  *\nFROM {ds.get('schema')}.{ds['table_name']}\nLIMIT 100\nOFFSET 0"


def dataset_get(ds: dict[str, Any], db: dict[str, Any] | None) -> dict[str, Any]:
    keys = ("always_filter_main_dttm", "cache_timeout", "catalog", "currency_code_column",
            "default_endpoint", "description", "extra", "fetch_values_predicate",
            "filter_select_enabled", "folders", "id", "is_sqllab_view", "main_dttm_col",
            "normalize_columns", "offset", "schema", "sql", "table_name", "template_params",
            "uuid", "changed_on", "created_on")
    result = {key: ds.get(key) for key in keys}
    result.update({
        "changed_by": user_brief(ds.get("changed_by")),
        "changed_on_humanized": humanize(ds["changed_on"]),
        "created_by": user_brief(1), "created_on_humanized": humanize(ds["created_on"]),
        "column_formats": {}, "columns": ds["columns"], "metrics": ds["metrics"],
        "database": _database_brief(db), "datasource_name": ds["table_name"],
        "datasource_type": "table", "granularity_sqla": [], "is_managed_externally": False,
        "kind": "virtual" if ds.get("sql") else "physical", "name":
        f"{ds.get('schema')}.{ds['table_name']}", "order_by_choices": [],
        "owners": [user_brief(uid) for uid in ds["owners"]], "select_star": _select_star(ds),
        "time_grain_sqla": [], "uid": f"{ds['id']}__table", "url":
        f"/tablemodelview/edit/{ds['id']}",
        "verbose_map": {c["column_name"]: c["column_name"] for c in ds["columns"]},
    })
    return result


def dashboard_dataset(ds: dict[str, Any], db: dict[str, Any] | None) -> dict[str, Any]:
    """One item of GET /dashboard/{id}/datasets."""
    result = dataset_get(ds, db)
    for key in ("changed_by", "changed_on", "changed_on_humanized", "created_by",
                "created_on", "created_on_humanized", "catalog", "extra", "folders",
                "is_managed_externally", "kind", "url", "uuid", "description"):
        result.pop(key, None)
    result.update({
        "column_names": [c["column_name"] for c in ds["columns"]], "column_types": [],
        "edit_url": f"/tablemodelview/edit/{ds['id']}", "filter_select": True,
        "health_check_message": None, "params": ds.get("params"), "type": "table",
        "perm": f"[{db['database_name'] if db else ''}].[{ds['table_name']}](id:{ds['id']})",
    })
    if result["database"]:
        result["database"] = {**result["database"], "name": db["database_name"]}  # type: ignore[index]
    return result


def database_list_item(db: dict[str, Any]) -> dict[str, Any]:
    keys = ("allow_ctas", "allow_cvas", "allow_dml", "allow_file_upload", "allow_run_async",
            "backend", "changed_on", "configuration_method", "database_name",
            "expose_in_sqllab", "extra", "id", "uuid")
    item = {key: db.get(key) for key in keys}
    item.update({
        "allow_multi_catalog": False, "allows_cost_estimate": False, "allows_subquery": True,
        "allows_virtual_table_explore": True, "changed_by": None,
        "changed_on_delta_humanized": humanize(db["changed_on"]), "created_by": None,
        "disable_data_preview": False, "disable_drill_to_detail": False,
        "engine_information": {"disable_ssh_tunneling": False,
                               "supports_dynamic_catalog": False,
                               "supports_file_upload": True, "supports_oauth2": False},
        "explore_database_id": db["id"], "force_ctas_schema": None,
    })
    return item
