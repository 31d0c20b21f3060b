"""Cross-environment reasoning over bundles: what exists where (by uuid), what an import
would do, and how two copies of the same objects differ.

Superset's import refuses an existing dashboard unless `overwrite=true` and then replaces
it, while nested charts, datasets and databases that already exist are reused unchanged.
The plan below predicts exactly that.
"""

from __future__ import annotations

import json
from typing import Any

from agent.superset.bundle import KINDS, Bundle, BundleObject
from agent.superset.client import SupersetClient

__all__ = ["compare_bundles", "diff_objects", "import_plan", "target_index"]

_RESOURCE = {"dashboard": "dashboard", "chart": "chart", "dataset": "dataset",
             "database": "database"}
# Keys that differ between environments by construction (local ids, export bookkeeping).
_VOLATILE = frozenset({"version", "uuid", "id", "chartId", "slice_id", "datasource",
                       "datasource_id", "dashboardId", "timestamp"})
_MASKED = "XXXXXXXXXX"
_SHOWN = 80

Index = dict[str, dict[str, dict[str, Any]]]


async def target_index(client: SupersetClient) -> Index:
    """kind -> uuid -> list row, for every object in the environment."""
    index: Index = {}
    for kind in KINDS:
        rows = await client.list_all(_RESOURCE[kind])
        index[kind] = {str(row["uuid"]): row for row in rows if row.get("uuid")}
    return index


def _ref(obj: BundleObject, row: dict[str, Any] | None = None) -> dict[str, Any]:
    ref = {"kind": obj.kind, "uuid": obj.uuid, "name": obj.name}
    if row and row.get("id") is not None:
        ref["target_id"] = row["id"]
    return ref


def import_plan(bundle: Bundle, index: Index) -> dict[str, Any]:
    """What `import(overwrite=true)` of `bundle` would do to the environment in `index`."""
    create, overwrite, reuse, warnings = [], [], [], []
    for obj in bundle.objects:
        row = index.get(obj.kind, {}).get(obj.uuid)
        if row is None:
            create.append(_ref(obj))
            uri = str(obj.config.get("sqlalchemy_uri") or "")
            if obj.kind == "database" and _MASKED in uri:
                warnings.append(f"Database {obj.name!r} is new in the target and its export "
                                "has a masked password: the import needs that password.")
        elif obj.kind == "dashboard":
            overwrite.append(_ref(obj, row))
        else:
            reuse.append(_ref(obj, row))
    if reuse:
        warnings.append("Existing charts, datasets and databases are reused as they are in "
                        "the target; only the dashboard itself is overwritten.")
    return {"create": create, "overwrite": overwrite, "reuse": reuse, "warnings": warnings,
            "counts": {"create": len(create), "overwrite": len(overwrite),
                       "reuse": len(reuse)}}


def _normalise(value: Any) -> Any:
    """Drop environment-local ids and empty values recursively (Superset adds empty keys
    such as `native_filter_configuration: []` on import); JSON strings compare as JSON."""
    if isinstance(value, dict):
        out = {k: _normalise(v) for k, v in value.items() if k not in _VOLATILE}
        return {k: v for k, v in out.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return _normalise(json.loads(value))
        except ValueError:
            return value
    return value


def _layout(position: Any) -> Any:
    """A dashboard layout by content, not by component ids (Superset may mint new random
    `CHART-xxxx` keys on export): sorted (type, chart uuid or text, width, height)."""
    if not isinstance(position, dict):
        return position
    items = []
    for node in position.values():
        if not isinstance(node, dict) or node.get("type") in (None, "ROOT", "GRID"):
            continue
        meta = node.get("meta") or {}
        label = meta.get("uuid") or meta.get("text") or meta.get("code") or ""
        items.append((str(node.get("type")), str(label), str(meta.get("width", "")),
                      str(meta.get("height", ""))))
    return sorted(items)


def _short(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value if not isinstance(value, str) or len(value) <= _SHOWN else \
            value[:_SHOWN] + "…"
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


def diff_objects(source: dict[str, Any], target: dict[str, Any]) -> list[dict[str, Any]]:
    """Top-level fields whose (normalised) values differ, with short renderings of both."""
    left, right = (_normalise({**config, "position": _layout(config["position"])}
                              if "position" in config else config)
                   for config in (source, target))
    changes = []
    for key in sorted(set(left) | set(right)):
        if left.get(key) != right.get(key):
            changes.append({"field": key, "source": _short(left.get(key)),
                            "target": _short(right.get(key))})
    return changes


_LIST_NAME = {"dashboard": "dashboard_title", "chart": "slice_name", "dataset": "table_name",
              "database": "database_name"}


def compare_bundles(source: Bundle, target: Bundle | None, index: Index) -> dict[str, Any]:
    """Each object of `source` as missing / different / same in the target environment.

    Objects in the target's own export of the dashboard are compared field by field; ones
    that exist in the target but outside that export can only be compared by name."""
    in_target = target.by_uuid() if target else {}
    rows: list[dict[str, Any]] = []
    for obj in source.objects:
        row = index.get(obj.kind, {}).get(obj.uuid)
        twin = in_target.get(obj.uuid)
        if row is None and twin is None:
            rows.append({**_ref(obj), "status": "missing"})
            continue
        if twin is not None:
            changes = diff_objects(obj.config, twin.config)
        else:
            name = (row or {}).get(_LIST_NAME[obj.kind])
            changes = [] if name == obj.name else [
                {"field": _LIST_NAME[obj.kind], "source": obj.name, "target": name}]
        entry = {**_ref(obj, row), "status": "different" if changes else "same"}
        if changes:
            entry["differences"] = changes
        if twin is None:
            entry["note"] = "exists in the target but is not on the target's dashboard"
        rows.append(entry)
    counts = {status: sum(1 for r in rows if r["status"] == status)
              for status in ("missing", "different", "same")}
    return {"counts": counts, "objects": rows}

