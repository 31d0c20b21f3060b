"""Reading Superset export bundles (ZIP of YAML files keyed by uuid) without importing them.

A bundle holds `<root>/metadata.yaml`, `dashboards/`, `charts/`, `datasets/<db>/` and
`databases/`; objects reference each other by uuid (`dataset_uuid`, `database_uuid`, the
chart uuids in a dashboard's `position`). Migration planning and comparison read it here.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from typing import Any

import yaml

from agent.errors import ToolFailure

__all__ = ["KINDS", "Bundle", "BundleObject", "read_bundle"]

KINDS = ("dashboard", "chart", "dataset", "database")
_FOLDERS = {"dashboards": "dashboard", "charts": "chart", "datasets": "dataset",
            "databases": "database"}
_NAME_KEYS = {"dashboard": "dashboard_title", "chart": "slice_name", "dataset": "table_name",
              "database": "database_name"}
MAX_BUNDLE_BYTES = 50 * 1024 * 1024
MAX_FILES = 5000


@dataclass
class BundleObject:
    kind: str
    uuid: str
    name: str
    path: str
    config: dict[str, Any]

    def summary(self) -> dict[str, Any]:
        row = {"kind": self.kind, "uuid": self.uuid, "name": self.name}
        for ref in ("dataset_uuid", "database_uuid"):
            if self.config.get(ref):
                row[ref] = self.config[ref]
        return row


@dataclass
class Bundle:
    metadata: dict[str, Any]
    files: list[str]
    objects: list[BundleObject] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[BundleObject]:
        return [obj for obj in self.objects if obj.kind == kind]

    def by_uuid(self) -> dict[str, BundleObject]:
        return {obj.uuid: obj for obj in self.objects}

    def counts(self) -> dict[str, int]:
        return {f"{kind}s": len(self.of_kind(kind)) for kind in KINDS}

    def summary(self) -> dict[str, Any]:
        """What a person wants to know about an export: what is in it, by uuid."""
        return {
            "type": self.metadata.get("type"),
            "version": self.metadata.get("version"),
            "exported_at": self.metadata.get("timestamp"),
            "counts": self.counts(),
            "objects": [obj.summary() for obj in self.objects],
            "files": self.files,
        }


def _strip_root(name: str) -> str:
    """Bundles wrap everything in one folder (`dashboard_export_<ts>/`); drop it."""
    parts = name.split("/", 1)
    return parts[1] if len(parts) == 2 and parts[0] not in _FOLDERS else name


def read_bundle(data: bytes) -> Bundle:
    """Parse a bundle; anything that is not a readable Superset export is a ToolFailure."""
    if len(data) > MAX_BUNDLE_BYTES:
        raise ToolFailure("The export bundle is too large to read.")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise ToolFailure("The export is not a valid ZIP bundle.") from exc
    with archive:
        names = [info.filename for info in archive.infolist() if not info.is_dir()]
        if len(names) > MAX_FILES:
            raise ToolFailure("The export bundle has too many files.")
        metadata: dict[str, Any] = {}
        objects: list[BundleObject] = []
        files: list[str] = []
        for name in names:
            path = _strip_root(name)
            if not path.endswith((".yaml", ".yml")):
                continue
            files.append(path)
            try:
                config = yaml.safe_load(archive.read(name)) or {}
            except yaml.YAMLError as exc:
                raise ToolFailure(f"The export bundle has an unreadable file: {path}") from exc
            if not isinstance(config, dict):
                continue
            if path == "metadata.yaml":
                metadata = config
                continue
            kind = _FOLDERS.get(path.split("/", 1)[0])
            if kind and config.get("uuid"):
                objects.append(BundleObject(kind=kind, uuid=str(config["uuid"]),
                                            name=str(config.get(_NAME_KEYS[kind]) or ""),
                                            path=path, config=config))
    order = {kind: i for i, kind in enumerate(KINDS)}
    objects.sort(key=lambda obj: (order[obj.kind], obj.name))
    return Bundle(metadata=metadata, files=sorted(files), objects=objects)
