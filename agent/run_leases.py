"""Main runs held by the database: one running run per conversation, owned and heartbeated,
and honest records for the runs of a process that died (issue 12, items 1-3).

Every run holds its conversation's lease (`storage.run_leases`) from before its `runs` row
is written until after its outcome is: the lease's primary key refuses a second run in the
conversation on any replica. The process that runs it refreshes the lease every
`heartbeat_s` with the answer streamed so far. When a process dies (kill -9, a crash, a
lost host), its leases stop beating; the next start of the same replica ends them at once,
any other replica once they are `stale_after_s` old (the same timings as side questions).

Ending a dead run writes only what is true:
- a write that was sent (its write-ahead `executing` audit row exists) but has no outcome
  gets "status unknown — check Superset": a tool result, an `executed` audit row and the
  confirmation's outcome, so the transcript is valid and nothing claims it did not happen;
- a call that never started gets "Not executed" (a write's `executing` row is committed
  before the request leaves, so no row means it was never sent), a read "Interrupted";
- the answer streamed so far is kept, marked as interrupted; the run becomes `interrupted`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from agent.errors import InputError
from agent.replicas import REPLICA_SEPARATOR, RecoveryTimings
from storage import Database, migrations_log
from storage import audit as audit_repo
from storage import conversations as repo
from storage import run_leases as leases_repo
from storage.confirmation_models import PENDING, Confirmation
from storage.models import Run, utcnow

__all__ = ["BUSY", "INTERRUPTED_MARK", "ConversationBusy", "RunLeases", "end_dead_run",
           "keep_alive"]

_log = logging.getLogger(__name__)
T = TypeVar("T")

BUSY = "A run is already in progress in this conversation; stop it first."
INTERRUPTED_MARK = "[Interrupted: the server stopped before this answer was finished.]"
_UNKNOWN = ("Error: status unknown — the server stopped while {tool} was running, so the change "
            "may or may not have happened. Do not call it again; ask the person to check "
            "Superset.")
_NOT_RUN = "Not executed: the server stopped before this call ran. Nothing was changed."
_READ_CUT = "Interrupted: the server stopped while this call was running; there is no result."
_UNKNOWN_OUTCOME = "status unknown (the server stopped while it was running)"


class ConversationBusy(InputError):
    """Another run holds the conversation (here or on another replica)."""

    def __init__(self) -> None:
        super().__init__(BUSY)


class RunLeases:
    """This process's side of the run leases: claim, beat, release, and end dead runs."""

    def __init__(self, db: Database, *, instance_id: str, stale_after_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.instance_id = instance_id
        self.replica = instance_id.split(REPLICA_SEPARATOR, 1)[0]
        self.timings = RecoveryTimings(stale_after_s)
        self.clock = clock

    # a run's own lease ------------------------------------------------------------------

    def claim(self, *, conversation_id: str, run_id: str, user_id: str,
              live: Callable[[str], bool],
              then: Callable[[Session], T] | None = None,
              first: Callable[[Session], Any] | None = None) -> T | None:
        """Take the conversation for `run_id`, or raise `ConversationBusy`. A lease left by a
        dead run (stale, or this process's own for a run it no longer runs) is ended first.
        `first(session)` and `then(session)` run in the claim's own transaction, before and
        after the lease's insert (a new conversation is created first; a turn stores its run
        and its message with the lease: one commit); `then`'s result is returned. An
        IntegrityError of either is theirs, raised as it is, not a busy lease."""
        for _ in range(2):
            inserting = False
            try:
                with self.db.session() as session:
                    if first is not None:
                        first(session)
                    inserting = True
                    leases_repo.claim(session=session, conversation_id=conversation_id,
                                      run_id=run_id, owner=self.instance_id, user_id=user_id,
                                      now=self.clock())
                    inserting = False
                    return then(session) if then is not None else None
            except IntegrityError:
                if not inserting:
                    raise
                with self.db.session() as session:
                    held = leases_repo.get(session=session, conversation_id=conversation_id)
                    if held is None:
                        continue  # released in the meantime: try again
                    mine_but_gone = held.owner == self.instance_id and not live(held.run_id)
                    dead = held.heartbeat_ts < self.clock() - self.timings.stale_after_s
                    if not (mine_but_gone or dead):
                        raise ConversationBusy() from None
                    end_dead_run(session, held.run_id, held.conversation_id, held.partial)
        raise ConversationBusy()

    def beat(self, run_id: str, partial: str) -> bool:
        with self.db.session() as session:
            return leases_repo.beat(session=session, run_id=run_id, owner=self.instance_id,
                                    now=self.clock(), partial=partial)

    def release(self, run_id: str) -> None:
        with self.db.session() as session:
            leases_repo.release(session=session, run_id=run_id)

    # dead runs --------------------------------------------------------------------------

    def recover_at_start(self) -> int:
        """This replica's earlier processes are gone: end their runs now. Runs left
        `running` with no lease at all (from a build before leases) end too."""
        with self.db.session() as session:
            held = leases_repo.stale(session=session, older_than=0,
                                     owner_prefix=self.replica + REPLICA_SEPARATOR,
                                     exclude_owner=self.instance_id)
            count = self._end_all(session, held)
            leased = set(session.exec(select(leases_repo.RunLease.run_id)).all())
            orphans = session.exec(select(Run).where(Run.status == "running")).all()
            for run in orphans:
                if run.id not in leased:
                    end_dead_run(session, run.id, run.conversation_id, "")
                    count += 1
        return count

    def sweep(self) -> int:
        """End the runs of other processes whose leases stopped beating."""
        with self.db.session() as session:
            held = leases_repo.stale(session=session,
                                     older_than=self.clock() - self.timings.stale_after_s,
                                     exclude_owner=self.instance_id)
            return self._end_all(session, held)

    @staticmethod
    def _end_all(session: Session, held: Iterable[leases_repo.RunLease]) -> int:
        count = 0
        for lease in list(held):
            end_dead_run(session, lease.run_id, lease.conversation_id, lease.partial)
            count += 1
        return count


def end_dead_run(session: Session, run_id: str, conversation_id: str, partial: str) -> None:
    """Write the true end of a run whose process is gone, in the caller's transaction."""
    rows = list(repo.list_messages(session=session, conversation_id=conversation_id))
    answered = {row.tool_call_id for row in rows if row.role == "tool"}
    awaiting = set(session.exec(select(Confirmation.call_id).where(
        Confirmation.conversation_id == conversation_id, Confirmation.status == PENDING)).all())
    in_flight = {row.call_id: row for row in audit_repo.in_flight(session=session,
                                                                  run_id=run_id)}
    run = session.get(Run, run_id)
    for row in rows:
        for call in (row.tool_calls or []) if row.role == "assistant" else []:
            call_id, tool = call.get("id"), (call.get("function") or {}).get("name", "?")
            if call_id in answered or call_id in awaiting:
                continue
            written = in_flight.get(call_id)
            if written is not None:
                _store_tool(session, conversation_id, run_id, call_id, tool,
                            _UNKNOWN.format(tool=tool), "unknown")
                _close_write(session, written, _UNKNOWN_OUTCOME)
            elif row.run_id == run_id or _is_approved(session, call_id):
                text = _NOT_RUN if _is_write(session, call_id) else _READ_CUT
                _store_tool(session, conversation_id, run_id, call_id, tool, text,
                            "interrupted")
    for call_id, written in in_flight.items():  # answered, but the audit outcome was lost
        if call_id in answered:
            result = next((r for r in rows if r.role == "tool" and r.tool_call_id == call_id),
                          None)
            status = (result.meta or {}).get("status") if result else None
            _close_write(session, written, {"done": "succeeded"}.get(str(status),
                                                                     _UNKNOWN_OUTCOME))
    if run is not None and run.status == "running":  # it never recorded an end: say so
        content = f"{partial.rstrip()}\n\n{INTERRUPTED_MARK}" if partial.strip() \
            else INTERRUPTED_MARK
        repo.append_message(session=session, conversation_id=conversation_id, role="assistant",
                            content=content, run_id=run_id, meta={"status": "interrupted"})
    session.execute(update(Run).where(col(Run.id) == run_id, col(Run.status) == "running")
                    .values(status="interrupted", error="the server stopped", ended_at=utcnow()))
    leases_repo.release(session=session, run_id=run_id)


def _store_tool(session: Session, conversation_id: str, run_id: str, call_id: str, tool: str,
                text: str, status: str) -> None:
    repo.append_message(session=session, conversation_id=conversation_id, role="tool",
                        content=text, run_id=run_id, tool_call_id=call_id, tool_name=tool,
                        meta={"status": status})


def _close_write(session: Session, written: Any, outcome: str) -> None:
    if outcome == _UNKNOWN_OUTCOME:
        migrations_log.record_unknown(session=session, user_id=written.user_id,
                                      tool=written.tool, args=written.args)
    audit_repo.append_entry(
        session=session, user_id=written.user_id, role=written.role, action="executed",
        tool=written.tool, args=written.args, env_id=written.env_id, env_tier=written.env_tier,
        outcome=outcome, confirmation_id=written.confirmation_id,
        conversation_id=written.conversation_id, run_id=written.run_id,
        call_id=written.call_id)
    if written.confirmation_id:
        session.execute(update(Confirmation)
                        .where(col(Confirmation.id) == written.confirmation_id)
                        .values(outcome=outcome))


def _is_approved(session: Session, call_id: str) -> bool:
    """A continuation run resumes a call stored by an earlier run (its approved write)."""
    return session.exec(select(Confirmation.id).where(
        Confirmation.call_id == call_id, Confirmation.status == "approved")).first() is not None


def _is_write(session: Session, call_id: str) -> bool:
    return session.exec(select(Confirmation.id).where(
        Confirmation.call_id == call_id)).first() is not None



async def keep_alive(leases: RunLeases, running: Callable[[], list[tuple[str, str]]],
                     lost: Callable[[str], None]) -> None:
    """Until cancelled: every `heartbeat_s`, refresh the lease of each `(run_id, partial)`
    this process runs (`lost(run_id)` when another replica ended it as dead), then end
    other processes' runs whose leases went stale. Database work runs in a thread; a failed
    round (the database may be briefly down) is tried again next time."""
    while True:
        await asyncio.sleep(leases.timings.heartbeat_s)
        try:
            for run_id, partial in running():
                if not await asyncio.to_thread(leases.beat, run_id, partial):
                    lost(run_id)
            await asyncio.to_thread(leases.sweep)
        except Exception as exc:  # a heartbeat must outlive a bad round
            _log.warning("run lease heartbeat failed: %s", exc)
