"""`SideQuestionService`: submit, follow, stop and clear side questions (SPEC §9).

HTTP routes, Gradio endpoints and the panel are thin adapters over these methods; callers
check that the identity owns the parent conversation first (`parent_of` for request ids).
Limits: one running request per parent (a partial unique index in the database, so it holds
across replicas), at most `max_running` per process, a timeout per request.
Recovery is replica-safe (see `side_questions.recovery`): only rows whose owner stopped
beating are ended, and a stale row never keeps its parent busy.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy.exc import IntegrityError

from agent.budget import model_window
from agent.errors import ConversationAccessError
from agent.fairness import UserRates
from agent.model_gateway import ModelGateway
from agent.settings import Settings
from agent.snapshots import model_identity_digest
from agent.tracing import run_span
from side_questions import reads, submission
from side_questions.budget import SideBudget, make_budget
from side_questions.errors import (
    NO_SUCH_REQUEST,
    Conflict,
    InvalidQuestion,
    NotFound,
    OverCapacity,
)
from side_questions.recovery import (
    REPLICA_SEPARATOR,
    RecoveryTimings,
    StaleSweeper,
    default_replica_name,
    new_instance_id,
)
from side_questions.runner import RequestRunner
from side_questions.snapshot_store import SnapshotStore, StoredSnapshot
from side_questions.views import (
    HistoryPage,
    LiveRequest,
    SideRequestPublic,
    SideUpdate,
    SubmitResult,
)
from storage import Database
from storage import side_repository as repo
from storage.models import utcnow

__all__ = ["PAGE_SIZE", "SideQuestionService"]

PAGE_SIZE = 20


class SideQuestionService:
    def __init__(self, *, settings: Settings, db: Database, gateway: ModelGateway,
                 snapshots: SnapshotStore, max_running: int | None = None,
                 timeout_s: float | None = None, interval_s: float = 0.25,
                 instance_id: str | None = None) -> None:
        self.settings = settings
        self.db = db
        self.snapshots = snapshots
        self.max_running = max_running or settings.side_max_running_per_process
        self.interval_s = interval_s
        self.replica = (settings.side_replica_name
                        or default_replica_name(settings.gradio_server_port))
        self.instance_id = instance_id or new_instance_id(self.replica)
        self.timings = RecoveryTimings(settings.side_stale_after_s)
        self.runner = RequestRunner(
            settings=settings, db=db, gateway=gateway, budget=self.budget,
            timeout_s=timeout_s or settings.side_timeout_s, interval_s=interval_s,
            heartbeat_s=self.timings.heartbeat_s)
        self.sweeper = StaleSweeper(self.sweep, interval_s=self.timings.sweep_s)
        self._live: dict[str, LiveRequest] = {}
        self._active = 0
        self._rates = UserRates(per_minute=settings.side_per_minute_per_user,
                                burst=settings.side_burst_per_user)

    # configuration -------------------------------------------------------------------

    async def budget(self) -> SideBudget:
        window = await model_window(self.runner.gateway, self.settings)
        return make_budget(context_window=window,
                           main_output_cap=self.settings.agent_max_output_tokens)

    def _current_digest(self) -> str | None:
        model = (self.settings.agent_model or "").strip()
        return model_identity_digest(model, self.settings.agent_api_base) if model else None

    @property
    def running_count(self) -> int:
        return self._active

    # recovery ------------------------------------------------------------------------

    def sweep(self, parent_id: str | None = None) -> int:
        """Running requests whose owner stopped beating (a crashed or killed replica) become
        `interrupted`, keeping partial answer and usage; nothing is replayed. Returns how
        many. Requests another live replica is streaming are left alone."""
        with self.db.session() as session:
            return repo.interrupt_stale(session=session,
                                        stale_after_s=self.timings.stale_after_s,
                                        parent_id=parent_id)

    def recover(self) -> int:
        """On start: rows of this replica's previous incarnation end at once (it is not
        running any more: this process took its place), then one sweep for stale rows of
        other replicas; the background sweeper (`start`) ends the rest once they are stale."""
        with self.db.session() as session:
            mine = repo.interrupt_previous_incarnation(
                session=session, replica_prefix=self.replica + REPLICA_SEPARATOR,
                current_instance=self.instance_id)
        return mine + self.sweep()

    def start(self) -> int:
        """Recover now and keep sweeping in the background until `stop`/`aclose`."""
        count = self.recover()
        self.sweeper.start()
        return count

    def stop(self) -> None:
        """Stop the background sweeper (running answers are not affected)."""
        self.sweeper.stop()

    # submission ----------------------------------------------------------------------

    async def submit(self, *, parent_id: str, question: Any,
                     client_request_id: Any = None, owner_id: str | None = None,
                     verify_owner: bool = False) -> SubmitResult:
        """Start a side question from the parent's latest snapshot (saved first);
        `owner_id` is whose fair share it takes (at most 2 running, and a rate). With
        `verify_owner` the parent must be `owner_id`'s (`ConversationAccessError`, before
        anything else), checked in the submission's own transaction. Usually one thread hop
        and one transaction (`submission.fast_insert`), else `_submit_checked` decides."""
        if verify_owner and owner_id is None:
            raise ConversationAccessError()
        owner = owner_id if verify_owner else None
        try:
            question, client_request_id = submission.validate(
                question, client_request_id, self.settings.side_max_question_chars)
        except InvalidQuestion:
            if verify_owner:  # a foreign parent answers "not found" whatever the body
                await asyncio.to_thread(submission.check_owner, self.db, parent_id, owner)
            raise
        await self.snapshots.flush(parent_id)
        created = await self._submit_fast(parent_id, owner_id, owner, client_request_id,
                                          question)
        if created is not None:
            return created
        if verify_owner:
            await asyncio.to_thread(submission.check_owner, self.db, parent_id, owner)
        return await self._submit_checked(parent_id, owner_id, client_request_id, question,
                                          verify_owner)

    async def _submit_fast(self, parent_id: str, owner_id: str | None, owner: str | None,
                           client_request_id: str, question: str) -> SubmitResult | None:
        """The submission in one transaction, when no limit of this process stands in the
        way; None (nothing taken, nothing written) leaves it to `_submit_checked`."""
        if self._active >= self.max_running:
            return None
        if owner_id is not None and (self._running_of(owner_id)
                                     >= self.settings.side_max_running_per_user
                                     or self._rates.take(owner_id)):
            return None
        self._active += 1  # reserved before the first await below
        created = None
        try:
            created = await asyncio.to_thread(
                submission.fast_insert, self.db, self.snapshots, parent_id=parent_id,
                owner_id=owner, client_request_id=client_request_id, question=question,
                digest=self._current_digest(), instance_id=self.instance_id)
        finally:
            if created is None:
                self._active -= 1
                if owner_id is not None:
                    self._rates.give_back(owner_id)  # the checked path takes it again
        if created is None:
            return None
        return self._launch(parent_id, created.request, created.generation,
                            created.snapshot, question, owner_id, owner is not None)

    async def _submit_checked(self, parent_id: str, owner_id: str | None,
                              client_request_id: str, question: str, verified: bool
                              ) -> SubmitResult:
        """One question at a time, in the contract's order: no snapshot, a repeated client
        id (200, or 409 with another question), a changed configuration, a busy parent
        (after sweeping a stale row), the process limit, this person's share."""
        snapshot = await asyncio.to_thread(self.snapshots.load, parent_id)
        if snapshot is None:
            raise Conflict("no_snapshot")
        generation, existing, busy = await asyncio.to_thread(
            submission.lookup, self.db, parent_id, client_request_id)
        if existing is not None:
            return submission.same(existing, question)
        if not snapshot.model_digest or snapshot.model_digest != self._current_digest():
            raise Conflict("config_changed")
        if busy and not await asyncio.to_thread(self.sweep, parent_id):
            raise Conflict("busy")  # running, and its owner is alive
        if self._active >= self.max_running:
            raise OverCapacity(self.max_running)
        if owner_id is not None:
            self._admit(owner_id)
        self._active += 1  # reserved before the first await below
        try:
            created = await self._insert_sweeping(parent_id, generation, client_request_id,
                                                  question, snapshot)
        except BaseException:
            self._active -= 1
            raise
        if isinstance(created, SubmitResult):
            self._active -= 1
            return created
        if created is None:  # cleared between the lookup and the insert
            self._active -= 1
            raise Conflict("busy", "The side history was just cleared; please ask again.")
        return self._launch(parent_id, created, generation, snapshot, question, owner_id,
                            verified)

    def _launch(self, parent_id: str, created: SideRequestPublic, generation: int,
                snapshot: StoredSnapshot, question: str, owner_id: str | None,
                verified: bool) -> SubmitResult:
        """Start the answer of a request just inserted (its slot already reserved)."""
        live = LiveRequest(state=created, parent_id=parent_id, generation=generation,
                           owner_id=owner_id, owner_verified=verified)
        self._live[created.id] = live
        live.task = asyncio.get_running_loop().create_task(
            self._drive(live, snapshot, question), name=f"side-{created.id}")
        return SubmitResult(created, created=True)

    def _running_of(self, owner_id: str) -> int:
        return sum(1 for live in self._live.values()
                   if live.owner_id == owner_id and not live.done)

    def _admit(self, owner_id: str) -> None:
        """This person's share: running side questions, then the rate of new ones."""
        cap = self.settings.side_max_running_per_user
        running = self._running_of(owner_id)
        if running >= cap:
            raise OverCapacity(cap, f"You already have {running} side questions running "
                               f"(the limit is {cap}); wait for one to finish.",
                               retry_after_s=2)
        if wait := self._rates.take(owner_id):
            raise OverCapacity(cap, f"Too many side questions in a short time; try again "
                               f"in {wait} s.", retry_after_s=wait)

    async def _insert_sweeping(self, parent_id: str, generation: int, client_request_id: str,
                               question: str, snapshot: StoredSnapshot
                               ) -> SideRequestPublic | SubmitResult | None:
        """Insert; when the one-running index refuses, sweep the parent's stale rows and
        retry once, so a dead replica's row cannot block the parent forever. Returns the
        new request, an earlier one with the same client id, or None (cleared meanwhile)."""
        for attempt in range(2):
            try:
                return await asyncio.to_thread(
                    submission.insert, self.db, parent_id=parent_id, generation=generation,
                    client_request_id=client_request_id, question=question,
                    snapshot=snapshot, instance_id=self.instance_id)
            except IntegrityError:
                _, existing, _ = await asyncio.to_thread(
                    submission.lookup, self.db, parent_id, client_request_id)
                if existing is not None:
                    return submission.same(existing, question)
                if attempt or not await asyncio.to_thread(self.sweep, parent_id):
                    raise Conflict("busy") from None
        raise AssertionError("unreachable")

    async def _drive(self, live: LiveRequest, snapshot: StoredSnapshot, question: str) -> None:
        try:
            with run_span("side_question", **{"side.request_id": live.state.id,
                                              "conversation.id": live.parent_id}):
                await self.runner.run(live, snapshot, question)
        finally:
            self._active -= 1
            live.done = True
            self._live.pop(live.state.id, None)

    # reading -------------------------------------------------------------------------

    def _overlay(self, item: SideRequestPublic) -> SideRequestPublic:
        live = self._live.get(item.id)
        return live.state if live is not None and not live.cleared else item

    async def history(self, *, parent_id: str, before: int | None = None,
                      limit: int = PAGE_SIZE) -> HistoryPage:
        """Newest first; pass the previous page's `next_cursor` as `before`."""
        return await asyncio.to_thread(reads.page, self.db, parent_id, before or None,
                                       max(1, min(limit, PAGE_SIZE)), self._overlay)

    async def get(self, request_id: str) -> SideRequestPublic:
        live = self._live.get(request_id)
        if live is not None and not live.cleared:
            return live.state
        found = await asyncio.to_thread(reads.get_row, self.db, request_id)
        if found is None:
            raise NotFound(NO_SUCH_REQUEST)
        return found[1]

    def verified_owner(self, request_id: str) -> str | None:
        """Who owns the parent of a request running here, when its submission checked it
        (a conversation never changes owner, and is not deleted while it has one running)."""
        live = self._live.get(request_id)
        if live is None or live.cleared or not live.owner_verified:
            return None
        return live.owner_id

    async def parent_of(self, request_id: str) -> str:
        """The parent conversation of a request, for the caller's ownership check."""
        live = self._live.get(request_id)
        if live is not None and not live.cleared:
            return live.parent_id
        found = await asyncio.to_thread(reads.get_row, self.db, request_id)
        if found is None:
            raise NotFound(NO_SUCH_REQUEST)
        return found[0]

    async def follow(self, request_id: str) -> AsyncIterator[SideUpdate]:
        """The request's cumulative state now and after every change, with increasing
        sequence numbers, until it ends (or `cleared`). Works across restarts/replicas by
        polling the database when the request is not running in this process."""
        live = self._live.get(request_id)
        if live is not None:
            async for update in live.follow():
                yield update
            return
        found = await asyncio.to_thread(reads.get_row, self.db, request_id)
        if found is None:
            raise NotFound(NO_SUCH_REQUEST)
        state = found[1]
        yield SideUpdate("state", state.sequence, state)
        while not state.terminal:
            await asyncio.sleep(self.interval_s)
            found = await asyncio.to_thread(reads.get_row, self.db, request_id)
            if found is None:
                yield SideUpdate("cleared", state.sequence + 1, None)
                return
            if found[1].sequence > state.sequence:
                state = found[1]
                yield SideUpdate("state", state.sequence, state)

    # stop, clear, shutdown -----------------------------------------------------------

    def _cancel_live(self, live: LiveRequest, reason: str) -> None:
        if live.cancel_reason is None and live.task is not None and not live.task.done():
            live.cancel_reason = reason
            live.task.cancel()

    def _cancel_row(self, request_id: str) -> None:
        with self.db.session() as session:
            row = repo.get_request(session=session, request_id=request_id)
            if row is not None:
                repo.update_request(session=session, request_id=request_id,
                                    generation=row.generation, status="cancelled",
                                    error="Stopped.", sequence=row.sequence + 1,
                                    finished_at=utcnow())

    async def cancel(self, request_id: str, *, wait_s: float = 10.0) -> SideRequestPublic:
        """Stop only this request; returns its state (terminal unless the wait ran out)."""
        live = self._live.get(request_id)
        if live is not None:
            self._cancel_live(live, "stop")
            if live.task is not None:
                with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(live.task), timeout=wait_s)
            if not live.cleared:
                return live.state
        else:  # running in another process (or already ended): end it in the database
            await asyncio.to_thread(self._cancel_row, request_id)
        return await self.get(request_id)

    def _clear(self, parent_id: str) -> int:
        with self.db.session() as session:
            return repo.clear_parent(session=session, parent_id=parent_id)

    async def clear(self, parent_id: str) -> int:
        """Cancel the parent's running request and delete its side history (the snapshot
        stays); returns the new generation. Late writes of the old generation do nothing."""
        generation = await asyncio.to_thread(self._clear, parent_id)
        for live in list(self._live.values()):
            if live.parent_id == parent_id and live.generation < generation:
                live.mark_cleared()
                self._cancel_live(live, "clear")
        return generation

    async def aclose(self, wait_s: float = 10.0) -> None:
        """Shut down: running requests end as `interrupted`, pending snapshots are saved."""
        self.stop()
        tasks = []
        for live in list(self._live.values()):
            self._cancel_live(live, "shutdown")
            if live.task is not None:
                tasks.append(live.task)
        if tasks:
            await asyncio.wait(tasks, timeout=wait_s)
        await self.snapshots.aclose()
