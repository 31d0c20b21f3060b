"""Export bundles kept briefly for the person who asked for them (issue 11, item 7).

`export_dashboard` reads the ZIP from Superset anyway (to summarise it); keeping those bytes
for a few minutes lets the page offer the very file as a download without asking Superset
again (which a passthrough environment could not: the caller's token is gone after the
run). In process memory, bounded by count, bytes and age; only the person who exported
gets it (someone else's id is "not found", like an unknown one). A restart forgets them:
export again.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

__all__ = ["EXPORT_TTL_S", "ExportStore", "KeptExport"]

EXPORT_TTL_S = 15 * 60.0
MAX_EXPORTS = 32
MAX_TOTAL_BYTES = 64 * 1024 * 1024
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class KeptExport:
    export_id: str
    owner_id: str
    env: str
    dashboard_id: int
    data: bytes = field(repr=False)
    kept_at: float

    @property
    def filename(self) -> str:
        return _SAFE.sub("-", f"dashboard-{self.dashboard_id}-{self.env}.zip")


class ExportStore:
    def __init__(self, *, ttl_s: float = EXPORT_TTL_S, max_items: int = MAX_EXPORTS,
                 max_bytes: int = MAX_TOTAL_BYTES) -> None:
        self.ttl_s, self.max_items, self.max_bytes = ttl_s, max_items, max_bytes
        self._kept: OrderedDict[str, KeptExport] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, *, owner_id: str, env: str, dashboard_id: int, data: bytes) -> str | None:
        """Keep a bundle; its id, or None when it alone is over the byte bound."""
        if len(data) > self.max_bytes:
            return None
        kept = KeptExport(export_id=uuid.uuid4().hex, owner_id=owner_id, env=env,
                          dashboard_id=dashboard_id, data=data, kept_at=time.monotonic())
        with self._lock:
            self._kept[kept.export_id] = kept
            self._evict()
        return kept.export_id

    def get(self, export_id: str, owner_id: str) -> KeptExport | None:
        with self._lock:
            self._evict()
            kept = self._kept.get(export_id) if isinstance(export_id, str) else None
        return kept if kept is not None and kept.owner_id == owner_id else None

    def _evict(self) -> None:
        cutoff = time.monotonic() - self.ttl_s
        for export_id, kept in list(self._kept.items()):
            if kept.kept_at < cutoff:
                del self._kept[export_id]
        while self._kept and (len(self._kept) > self.max_items or sum(
                len(k.data) for k in self._kept.values()) > self.max_bytes):
            self._kept.popitem(last=False)
