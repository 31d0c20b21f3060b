"""Dataset export/import bundles (`/api/v1/dataset/export/` and `/import/`), as real Superset.

The bundle is `<root>/metadata.yaml` (type SqlaTable), `datasets/<database>/<table>.yaml`
and `databases/<database>.yaml`. Import follows ImportDatasetsCommand: a dataset whose uuid
exists is refused unless `overwrite`, then its fields, columns and metrics are replaced; a
missing one is created with a new id and the bundle's uuid; databases are reused by uuid.
The app's undo restores a refreshed, updated or deleted dataset this way.
"""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime
from typing import Any

import yaml

from superset_demo.bundle import (
    _DATABASE_KEYS,
    _DATASET_KEYS,
    _database_yaml,
    _dataset_yaml,
    _dump,
    _safe,
)
from superset_demo.errors import DemoError, command_error
from superset_demo.shapes import now_iso
from superset_demo.store import DocumentStore

__all__ = ["export_datasets", "import_datasets"]


def export_datasets(store: DocumentStore, env: str,
                    datasets: list[dict[str, Any]]) -> tuple[str, bytes]:
    """(bundle name, zip bytes) for the given datasets and their databases."""
    now = datetime.now(UTC)
    root = f"dataset_export_{now.strftime('%Y%m%dT%H%M%S')}"
    files: dict[str, str] = {"metadata.yaml": _dump(
        {"version": "1.0.0", "type": "SqlaTable", "timestamp": now.isoformat()})}
    for ds in datasets:
        db = store.get(env, "database", ds["database_id"])
        if db is None:
            continue
        files[f"datasets/{_safe(db['database_name'])}/{_safe(ds['table_name'])}_"
              f"{ds['id']}.yaml"] = _dump(_dataset_yaml(ds, db["uuid"]))
        files[f"databases/{_safe(db['database_name'])}.yaml"] = _dump(_database_yaml(db))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, text in files.items():
            archive.writestr(f"{root}/{path}", text)
    return root, buffer.getvalue()


def _configs(payload: bytes) -> dict[str, dict[str, Any]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(payload))
    except zipfile.BadZipFile as exc:
        raise DemoError(400, {"message": "Not a ZIP file"}) from exc
    configs: dict[str, dict[str, Any]] = {}
    for name in archive.namelist():
        if name.endswith((".yaml", ".yml")):
            relative = name.split("/", 1)[1] if "/" in name else name
            try:
                configs[relative] = yaml.safe_load(archive.read(name)) or {}
            except yaml.YAMLError as exc:
                raise command_error(f"Error importing dataset: {relative}: invalid YAML") \
                    from exc
    meta = configs.get("metadata.yaml")
    if not meta or meta.get("type") != "SqlaTable":
        raise command_error("Error importing dataset: metadata.yaml: Must be equal to "
                            "SqlaTable.")
    return configs


def import_datasets(store: DocumentStore, env: str, payload: bytes, *,
                    overwrite: bool) -> None:
    """Import every dataset of a bundle (see the module docstring for the rules)."""
    configs = _configs(payload)
    datasets = {p: c for p, c in configs.items() if p.startswith("datasets/")}
    for path, config in datasets.items():
        if store.by_uuid(env, "dataset", config["uuid"]) is not None and not overwrite:
            message = "Dataset already exists and `overwrite=true` was not passed"
            raise command_error(f"Error importing dataset: {path}: {message}", {path: message})
    now = now_iso()
    db_ids: dict[str, int] = {}
    for config in (c for p, c in configs.items() if p.startswith("databases/")):
        existing = store.by_uuid(env, "database", config["uuid"])
        if existing is None:
            fields = {k: config.get(k) for k in _DATABASE_KEYS}
            fields["extra"] = json.dumps(config.get("extra") or {})
            backend = str(config.get("sqlalchemy_uri", "")).split(":", 1)[0].split("+", 1)[0]
            existing = store.put(env, "database", {
                **fields, "id": store.next_id(env, "database"), "backend": backend,
                "changed_on": now, "created_on": now})
        db_ids[config["uuid"]] = existing["id"]
    for config in datasets.values():
        doc = store.by_uuid(env, "dataset", config["uuid"]) or {
            "id": store.next_id(env, "dataset"), "owners": [], "is_sqllab_view": False,
            "created_on": now}
        doc.update({k: config.get(k) for k in _DATASET_KEYS})
        doc.update({
            "database_id": db_ids[config["database_uuid"]],
            "columns": [{**c, "id": i} for i, c in enumerate(config.get("columns") or [], 1)],
            "metrics": [{**m, "id": i} for i, m in enumerate(config.get("metrics") or [], 1)],
            "changed_on": now, "changed_by": None})
        store.put(env, "dataset", doc)
