"""Seeds each demo environment from the catalogue, with deliberate differences between them.

- ss-dev has everything: dashboard 3 "Sales Overview" is an unpublished draft with two
  extra charts (49, 50), plus a dev-only dashboard 13 on a dev-only dataset 11.
- staging lacks dashboards 3 and 13 (and the charts only they use): promoting dashboard 3
  creates it and its charts there while reusing the existing `sales` dataset and database.
- prod has an older, published version of dashboard 3 (four charts, another colour
  scheme, older `changed_on`) and lacks dashboards 12 and 13: promoting overwrites.
"""

from __future__ import annotations

import json
from typing import Any

from superset_demo.catalog import CHARTS, DASHBOARDS, DATABASES, DATASETS, stable_uuid
from superset_demo.store import DocumentStore

__all__ = ["ENVIRONMENTS", "position_json", "seed_environment"]

ENVIRONMENTS = ["ss-dev", "staging", "prod"]

_MISSING: dict[str, dict[str, set[int]]] = {
    "ss-dev": {"dashboard": set(), "chart": set(), "dataset": set()},
    "staging": {"dashboard": {3, 13}, "chart": {9, 10, 11, 12, 49, 50, 51, 52},
                "dataset": {11}},
    "prod": {"dashboard": {12, 13}, "chart": {45, 46, 47, 48, 49, 50, 51, 52},
             "dataset": {11}},
}
_CHANGED_ON = {"ss-dev": "2026-05-20T09:30:00", "staging": "2026-04-02T14:00:00",
               "prod": "2026-02-11T16:45:00"}
_CREATED_ON = "2025-11-03T08:00:00"
_UNPUBLISHED = {"ss-dev": {3, 7, 13}, "staging": {7, 12}, "prod": {7}}


def _database(row: tuple[int, str, str, str], stamp: str) -> dict[str, Any]:
    db_id, name, backend, uri = row
    return {
        "id": db_id, "uuid": stable_uuid("database", name), "database_name": name,
        "backend": backend, "sqlalchemy_uri": uri, "expose_in_sqllab": True,
        "allow_ctas": False, "allow_cvas": False, "allow_dml": False,
        "allow_file_upload": False, "allow_run_async": False, "cache_timeout": None,
        "configuration_method": "sqlalchemy_form", "impersonate_user": False,
        "extra": json.dumps({"metadata_params": {}, "engine_params": {},
                             "metadata_cache_timeout": {},
                             "schemas_allowed_for_file_upload": []}),
        "changed_on": stamp, "created_on": _CREATED_ON,
    }


def dataset_columns(spec: str) -> tuple[list[dict[str, Any]], str | None]:
    """Column documents from "name:TYPE*" specs, and the main temporal column."""
    columns, main_dttm = [], None
    for index, item in enumerate(spec.split(), start=1):
        name, col_type = item.split(":")
        is_dttm = col_type.endswith("*")
        col_type = col_type.rstrip("*")
        if is_dttm:
            main_dttm = name
        columns.append({
            "id": index, "column_name": name, "type": col_type, "is_dttm": is_dttm,
            "is_active": True, "groupby": True, "filterable": True, "expression": "",
            "verbose_name": None, "description": None, "python_date_format": None,
            "datetime_format": None, "advanced_data_type": None, "extra": None,
        })
    return columns, main_dttm


def _dataset(spec: dict[str, Any], stamp: str) -> dict[str, Any]:
    columns, main_dttm = dataset_columns(str(spec["cols"]))
    return {
        "id": spec["id"], "uuid": stable_uuid("dataset", spec["table"]),
        "table_name": spec["table"], "schema": "public", "catalog": None,
        "database_id": spec["db"], "description": spec["desc"], "cache_timeout": None,
        "sql": None, "owners": [1, 4], "main_dttm_col": main_dttm, "columns": columns,
        "metrics": [{"id": 1, "metric_name": "count", "verbose_name": "COUNT(*)",
                     "metric_type": "count", "expression": "COUNT(*)", "description": None,
                     "d3format": None, "currency": None, "extra": None,
                     "warning_text": None}],
        "extra": None, "filter_select_enabled": True, "offset": 0,
        "default_endpoint": None, "fetch_values_predicate": None, "normalize_columns": False,
        "always_filter_main_dttm": False, "template_params": None, "params": None,
        "is_sqllab_view": False, "currency_code_column": None, "folders": None,
        "changed_on": stamp, "created_on": _CREATED_ON, "changed_by": 1,
    }


def _chart(row: tuple[int, str, str, int, str | None], owners: list[int],
           stamp: str) -> dict[str, Any]:
    chart_id, name, viz, dataset_id, groupby = row
    params: dict[str, Any] = {"viz_type": viz, "datasource": f"{dataset_id}__table",
                              "adhoc_filters": []}
    if groupby:
        params.update(groupby=[groupby], metrics=["count"], row_limit=100)
    else:
        params.update(metric="count")
    return {
        "id": chart_id, "uuid": stable_uuid("chart", chart_id), "slice_name": name,
        "viz_type": viz, "datasource_id": dataset_id, "datasource_type": "table",
        "params": params, "query_context": None, "description": None, "cache_timeout": None,
        "certified_by": None, "certification_details": None, "owners": owners,
        "changed_on": stamp, "created_on": _CREATED_ON, "changed_by": owners[0],
    }


def position_json(title: str, charts: list[dict[str, Any]]) -> str:
    """A Superset v2 layout: header, grid, rows of three charts."""
    layout: dict[str, Any] = {
        "DASHBOARD_VERSION_KEY": "v2",
        "ROOT_ID": {"children": ["GRID_ID"], "id": "ROOT_ID", "type": "ROOT"},
        "GRID_ID": {"children": [], "id": "GRID_ID", "parents": ["ROOT_ID"], "type": "GRID"},
        "HEADER_ID": {"id": "HEADER_ID", "meta": {"text": title}, "type": "HEADER"},
    }
    for start in range(0, len(charts), 3):
        row_id = f"ROW-{start // 3 + 1}"
        layout["GRID_ID"]["children"].append(row_id)
        layout[row_id] = {"children": [], "id": row_id, "type": "ROW",
                          "meta": {"background": "BACKGROUND_TRANSPARENT"},
                          "parents": ["ROOT_ID", "GRID_ID"]}
        for chart in charts[start:start + 3]:
            key = f"CHART-{chart['id']}"
            layout[row_id]["children"].append(key)
            layout[key] = {"children": [], "id": key, "type": "CHART",
                           "meta": {"chartId": chart["id"], "height": 50, "width": 4,
                                    "sliceName": chart["slice_name"], "uuid": chart["uuid"]},
                           "parents": ["ROOT_ID", "GRID_ID", row_id]}
    return json.dumps(layout)


def dashboard_metadata(color_scheme: str, chart_ids: list[int]) -> str:
    return json.dumps({
        "color_scheme": color_scheme, "refresh_frequency": 0, "timed_refresh_immune_slices": [],
        "expanded_slices": {}, "label_colors": {}, "shared_label_colors": [],
        "map_label_colors": {}, "color_scheme_domain": [], "cross_filters_enabled": True,
        "positions": {}, "native_filter_configuration": [],
        "chart_configuration": {str(cid): {"id": cid} for cid in chart_ids},
    })


def seed_environment(store: DocumentStore, env: str) -> None:
    """Write the full seed of one environment (its objects must not exist yet)."""
    missing, stamp = _MISSING[env], _CHANGED_ON[env]
    store.put_many(env, "database", [_database(row, stamp) for row in DATABASES])
    store.put_many(env, "dataset", [_dataset(spec, stamp) for spec in DATASETS
                                    if spec["id"] not in missing["dataset"]])
    owners_of = {cid: owners for _, _, _, owners, cids in DASHBOARDS for cid in cids}
    charts = {row[0]: _chart(row, owners_of.get(row[0], [1]), stamp) for row in CHARTS
              if row[0] not in missing["chart"]}
    store.put_many(env, "chart", list(charts.values()))
    dashboards = []
    for dash_id, title, slug, owners, chart_ids in DASHBOARDS:
        if dash_id in missing["dashboard"]:
            continue
        ids = [cid for cid in chart_ids if cid in charts]
        scheme = "bnbColors" if (env == "prod" and dash_id == 3) else "supersetColors"
        dashboards.append({
            "id": dash_id, "uuid": stable_uuid("dashboard", slug), "dashboard_title": title,
            "slug": slug, "published": dash_id not in _UNPUBLISHED[env], "owners": owners,
            "css": "", "certified_by": None, "certification_details": None,
            "json_metadata": dashboard_metadata(scheme, ids),
            "position_json": position_json(title, [charts[cid] for cid in ids]),
            "chart_ids": ids, "changed_on": stamp, "created_on": _CREATED_ON,
            "changed_by": owners[0], "theme_id": None,
        })
    store.put_many(env, "dashboard", dashboards)
