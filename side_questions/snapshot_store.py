"""The per-parent snapshot store: the agent loop's `SnapshotListener` and the snapshot reader.

The loop calls the store with every snapshot; the store only keeps the newest one per parent
in memory and returns at once (no lock, no transaction during inference). A background task
saves it at most every 250 ms with a compare-and-set on (run start, run id, version), then
releases it; a failed save keeps it for a retry. Side submissions call `flush` first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from agent.snapshots import ContextSnapshot
from side_questions.throttle import ThrottledWriter
from storage import Database
from storage import side_repository as repo

__all__ = ["SnapshotStore", "StoredSnapshot", "snapshot_key"]

_log = logging.getLogger(__name__)


def snapshot_key(snapshot: ContextSnapshot) -> tuple[float, str, int]:
    """Newer snapshots compare greater: later run first, then the version within a run."""
    return (snapshot.run_started_at, snapshot.run_id, snapshot.version)


@dataclass(frozen=True)
class StoredSnapshot:
    """A snapshot as read back from the database for a side question."""

    parent_id: str
    run_id: str
    version: int
    taken_at: datetime
    system_prompt: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    params: dict[str, Any]
    model: str
    model_digest: str

    def metadata(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "version": self.version,
                "time": self.taken_at.isoformat(), "model": self.model}


def _payload(snapshot: ContextSnapshot) -> dict[str, Any]:
    data = asdict(snapshot)
    for key in ("conversation_id", "run_id", "version", "run_started_at"):
        data.pop(key)
    return data


class SnapshotStore:
    """Callable as the loop's snapshot listener; one throttled writer per busy parent."""

    def __init__(self, db: Database, *, interval_s: float = 0.25) -> None:
        self.db = db
        self.interval_s = interval_s
        self._writers: dict[str, ThrottledWriter[ContextSnapshot]] = {}

    def __call__(self, snapshot: ContextSnapshot) -> None:
        """Queue the snapshot; never raises and never blocks on the database."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # called outside an event loop: save right away
            try:
                self.save(snapshot)
            except Exception:  # a snapshot must never break the main run; say so
                _log.warning("snapshot of %s not saved", snapshot.conversation_id,
                             exc_info=True)
            return
        try:
            self._release_idle()
            parent = snapshot.conversation_id
            writer = self._writers.get(parent)
            if writer is None:
                writer = ThrottledWriter(self.save, interval_s=self.interval_s, max_retries=5)
                self._writers[parent] = writer
            pending = writer.pending
            if pending is None or snapshot_key(snapshot) > snapshot_key(pending):
                writer.offer(snapshot)
        except Exception:  # a snapshot must never break the main run; say so
            _log.warning("snapshot of %s not queued for saving", snapshot.conversation_id,
                         exc_info=True)
            return

    def save(self, snapshot: ContextSnapshot) -> bool:
        """One compare-and-set write; False when the database already holds a newer one."""
        with self.db.session() as session:
            return repo.save_snapshot(
                session=session, parent_id=snapshot.conversation_id, run_id=snapshot.run_id,
                version=snapshot.version, run_started_at=snapshot.run_started_at,
                payload=_payload(snapshot),
                snapshot_at=datetime.fromtimestamp(snapshot.created_at, UTC))

    def pending(self, parent_id: str) -> ContextSnapshot | None:
        writer = self._writers.get(parent_id)
        return writer.pending if writer is not None else None

    async def flush(self, parent_id: str) -> bool:
        """Save the parent's pending snapshot now; True when nothing is left unsaved."""
        writer = self._writers.get(parent_id)
        return True if writer is None else await writer.flush()

    async def aclose(self) -> None:
        """Save what is pending (best effort) and stop the writers."""
        for writer in list(self._writers.values()):
            await writer.flush()
            await writer.close()
        self._writers.clear()

    def forget(self, parent_id: str) -> None:
        """Drop a deleted conversation's pending snapshot."""
        writer = self._writers.pop(parent_id, None)
        if writer is not None:
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().create_task(writer.close())

    def _release_idle(self) -> None:
        """Forget writers with nothing pending whose last write is older than the interval."""
        now = time.monotonic()
        for parent, writer in list(self._writers.items()):
            if writer.idle and now - writer.last_write_at >= self.interval_s:
                del self._writers[parent]

    def load(self, parent_id: str) -> StoredSnapshot | None:
        with self.db.session() as session:
            row = repo.get_session(session=session, parent_id=parent_id)
            if row is None or not row.snapshot or row.snapshot_run_id is None:
                return None
            data = row.snapshot
            return StoredSnapshot(
                parent_id=parent_id, run_id=row.snapshot_run_id, version=row.snapshot_version,
                taken_at=row.snapshot_at or datetime.now(UTC),
                system_prompt=str(data.get("system_prompt") or ""),
                messages=list(data.get("messages") or []), tools=list(data.get("tools") or []),
                params=dict(data.get("params") or {}), model=str(data.get("model") or ""),
                model_digest=str(data.get("model_digest") or ""))
