"""The per-parent snapshot store: the agent loop's `SnapshotListener` and the snapshot reader.

The loop calls the store with every snapshot; the store only keeps the newest one per parent
in memory and returns at once (no lock, no transaction during inference). A background task
saves it at most every 250 ms with a compare-and-set on (run start, run id, version), then
releases it; a failed save keeps it for a retry. Side submissions call `flush` first.

A snapshot read back for a side question is immutable once built (`StoredSnapshot`; nobody
changes its messages), so the last one read per parent is kept, 16 parents at most:
a submission takes its ordinal and the snapshot's (run id, version) in one statement and
reads the payload, and parses its JSON, only when that version is not the one kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

from agent.snapshots import ContextSnapshot
from side_questions.throttle import ThrottledWriter
from storage import Database
from storage import side_repository as repo

__all__ = ["FROZEN_KEPT", "SnapshotStore", "StoredSnapshot", "snapshot_key", "stored_snapshot"]

FROZEN_KEPT = 16  # parents whose last read snapshot is kept for their next side question
SAVING_AT_ONCE = 1  # background saves in flight across all parents (`SnapshotStore.lane`)

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


def stored_snapshot(parent_id: str, *, run_id: str, version: int, taken_at: datetime | None,
                    data: dict[str, Any]) -> StoredSnapshot:
    """A snapshot from its stored columns and JSON payload."""
    return StoredSnapshot(
        parent_id=parent_id, run_id=run_id, version=version,
        taken_at=taken_at or datetime.now(UTC),
        system_prompt=str(data.get("system_prompt") or ""),
        messages=list(data.get("messages") or []), tools=list(data.get("tools") or []),
        params=dict(data.get("params") or {}), model=str(data.get("model") or ""),
        model_digest=str(data.get("model_digest") or ""))


# Stored in their own columns, not in the payload.
_COLUMNS = frozenset({"conversation_id", "run_id", "version", "run_started_at"})
_PAYLOAD_FIELDS = tuple(field.name for field in fields(ContextSnapshot)
                        if field.name not in _COLUMNS)


def _payload(snapshot: ContextSnapshot) -> dict[str, Any]:
    """The snapshot's stored JSON. The values are the snapshot's own, not copies
    (`dataclasses.asdict` deep-copied them all again, 2 ms a save): a snapshot is never
    changed once taken, and the payload is only serialised."""
    return {name: getattr(snapshot, name) for name in _PAYLOAD_FIELDS}


class SnapshotStore:
    """Callable as the loop's snapshot listener; one throttled writer per busy parent."""

    def __init__(self, db: Database, *, interval_s: float = 0.25) -> None:
        self.db = db
        self.interval_s = interval_s
        self._writers: dict[str, ThrottledWriter[ContextSnapshot]] = {}
        self._frozen: OrderedDict[str, StoredSnapshot] = OrderedDict()  # read from workers
        self._frozen_lock = threading.Lock()
        self._lane: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

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
                writer = ThrottledWriter(self.save, interval_s=self.interval_s, max_retries=5,
                                         lane=self.lane)
                self._writers[parent] = writer
            pending = writer.pending
            if pending is None or snapshot_key(snapshot) > snapshot_key(pending):
                writer.offer(snapshot)
        except Exception:  # a snapshot must never break the main run; say so
            _log.warning("snapshot of %s not queued for saving", snapshot.conversation_id,
                         exc_info=True)
            return

    def lane(self) -> asyncio.Semaphore:
        """What every parent's background save queues for: `SAVING_AT_ONCE` at a time.

        Why: nobody waits for a background save (a side question flushes its parent's
        snapshot itself), but each is a write transaction, and a run makes two or three a
        turn. With fifty runs streaming at once they all went to worker threads together
        and, on SQLite, queued for its one write lock ahead of the writes runs do wait for
        (a step's messages before its next prompt, a run's end). Waiting here, a parent's
        newer snapshot replaces the one not saved yet (50 runs: 453 saves -> 314; a step's
        wait for a free thread 182 -> 5 ms, median). bench/concurrency.py, three runs of
        each side by side, event gap p99 beyond the model as a ratio to the bare endpoint:
        100 streams 4.3-5.3 -> 2.7-3.5, 50 streams 4.3-5.3 -> 2.6-4.1, 10 streams alike.
        The cost: under such a burst a parent's stored snapshot can lag its run by the
        queue (a side question on another replica reads the stored one). One semaphore per
        event loop (it belongs to the loop that first waits on it)."""
        loop = asyncio.get_running_loop()
        if self._lane is None or self._lane[0] is not loop:
            self._lane = (loop, asyncio.Semaphore(SAVING_AT_ONCE))
        return self._lane[1]

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
        with self._frozen_lock:
            self._frozen.pop(parent_id, None)
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

    def frozen(self, parent_id: str) -> StoredSnapshot | None:
        """The parent's last snapshot read back (it may be older than the stored one)."""
        with self._frozen_lock:
            return self._frozen.get(parent_id)

    def keep(self, snapshot: StoredSnapshot) -> StoredSnapshot:
        """Keep `snapshot` as its parent's last read, evicting the least recently kept parent
        beyond `FROZEN_KEPT`. Users compare its (run id, version) with the stored one, so
        a kept snapshot that is no longer the newest only costs one read of the payload."""
        with self._frozen_lock:
            kept = self._frozen.get(snapshot.parent_id)
            if kept is None or (kept.run_id, kept.version) != (snapshot.run_id,
                                                                 snapshot.version):
                self._frozen[snapshot.parent_id] = snapshot
            self._frozen.move_to_end(snapshot.parent_id)
            while len(self._frozen) > FROZEN_KEPT:
                self._frozen.popitem(last=False)
        return snapshot

    def load(self, parent_id: str) -> StoredSnapshot | None:
        with self.db.session() as session:
            row = repo.get_session(session=session, parent_id=parent_id)
            if row is None or not row.snapshot or row.snapshot_run_id is None:
                return None
            return self.keep(stored_snapshot(
                parent_id, run_id=row.snapshot_run_id, version=row.snapshot_version,
                taken_at=row.snapshot_at, data=row.snapshot))
