"""This process's live main runs: each in its own asyncio task, the queue of turns waiting
for them, the database lease that makes a conversation's run unique across replicas, and
graceful shutdown.

A run belongs to the server, not to a page: a reader that goes away (a reload, a closed tab,
a lost connection) only stops reading. Only Stop, the API caller's own `job.cancel()`, the
run's time limit or shutdown cancel it. When a run ends (completed or failed) the next
queued turn of its conversation is admitted in a worker thread (its database work never
runs on the event loop); the conversation is held from that run's end to the next one's
launch, so it never looks idle in between, and a reader following the conversation waits
for the launch (or the refusal) and moves on to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

from agent import events as ev
from agent.live_run import LiveRun
from agent.logs import internal_error_message, run_context
from agent.loop import AgentDeps, RunRequest, run_agent
from agent.run_leases import RunLeases, keep_alive
from agent.tracing import run_span
from agent.turn_queue import QueuedTurn, TurnQueue
from storage import off_loop
from storage.retry import DatabaseUnavailable

__all__ = ["FINISHED_RUN_TTL_S", "MAX_FINISHED_RUNS", "SHUTDOWN_WAIT_S", "RunHost"]

log = logging.getLogger(__name__)

# Finished runs stay readable (Stop, late readers, a reloaded page) this long, then leave
# process memory; at most MAX_FINISHED_RUNS of them are kept (the oldest leave first), so
# a busy process does not hold every conversation of the last five minutes.
FINISHED_RUN_TTL_S = 300.0
MAX_FINISHED_RUNS = 200
SHUTDOWN_WAIT_S = 10.0  # how long a graceful shutdown waits for cancelled runs to record
# After these the next queued turn starts; after a stop or a pause for approval it waits.
_QUEUE_GOES_ON = frozenset({"completed", "failed"})


class RunHost:
    """Live runs by conversation id, their queue, lease heartbeat and shutdown."""

    def __init__(self, deps: AgentDeps, leases: RunLeases) -> None:
        self.deps = deps
        self.leases = leases
        self.queue = TurnQueue()
        self._live: dict[str, LiveRun] = {}
        self._heartbeat: asyncio.Task[None] | None = None
        # Set by the service: admits (off the loop) and launches a queued turn; raises what
        # starting a turn raises.
        self.start_queued: Callable[[QueuedTurn, str], Awaitable[LiveRun]] | None = None
        self.closing = False
        self._starting: dict[str, str] = {}  # conversation -> who, while a turn is admitted
        # conversation -> set when the turn admitted there is launched or refused
        self._admitted: dict[str, asyncio.Event] = {}
        self._stop_at_launch: set[str] = set()  # Stop came while a turn there was admitted
        self._queue_tasks: set[asyncio.Task[None]] = set()  # queued turns being admitted

    def get(self, conv_id: str) -> LiveRun | None:
        return self._live.get(conv_id)

    def busy(self, conv_id: str) -> bool:
        """A run is live in the conversation, or a turn of it is being admitted."""
        return conv_id in self._starting or self.running(conv_id)

    def running(self, conv_id: str) -> bool:
        """The conversation's run is live (not counting a turn still being admitted)."""
        live = self._live.get(conv_id)
        return live is not None and not live.finished.is_set()

    @contextlib.contextmanager
    def starting(self, conv_id: str, user_id: str) -> Iterator[None]:
        """Hold the conversation while `user_id`'s turn is admitted off the loop (owner,
        lease, open approval, decision): it is busy from here, so a second send queues
        behind it."""
        self._hold(conv_id, user_id)
        try:
            yield
        finally:
            self._let_go(conv_id)

    def _hold(self, conv_id: str, user_id: str) -> None:
        self._starting[conv_id] = user_id
        self._admitted.setdefault(conv_id, asyncio.Event())

    def _let_go(self, conv_id: str) -> None:
        """The admission ended (its run launched, or it was refused): wake who waits."""
        self._starting.pop(conv_id, None)
        self._stop_at_launch.discard(conv_id)
        ended = self._admitted.pop(conv_id, None)
        if ended is not None:
            ended.set()

    async def admitted(self, conv_id: str) -> None:
        """Wait until no turn of the conversation is being admitted: each one has been
        launched (it is the conversation's live run now) or refused."""
        while (ended := self._admitted.get(conv_id)) is not None:
            await ended.wait()

    def stop_starting(self, conv_id: str) -> None:
        """Stop: a turn of the conversation admitted right now is cancelled as it launches
        (its message and run are stored by then: it ends "cancelled", lease released)."""
        if conv_id in self._starting:
            self._stop_at_launch.add(conv_id)

    def starting_for(self, conv_id: str) -> str | None:
        """Who is starting a turn in the conversation right now, if anyone."""
        return self._starting.get(conv_id)

    def running_for(self, user_id: str) -> int:
        """The person's runs in progress, counting those still being admitted."""
        starting = sum(1 for who in self._starting.values() if who == user_id)
        return starting + sum(1 for live in self._live.values()
                              if live.owner_id == user_id and not live.finished.is_set())

    def is_live(self, run_id: str) -> bool:
        """Also asked from a worker thread (a lease claim): it iterates over a copy."""
        return any(live.run_id == run_id and not live.finished.is_set()
                   for live in list(self._live.values()))

    def launch(self, request: RunRequest) -> LiveRun:
        self._forget_finished()
        live = LiveRun(run_id=request.run_id, conversation_id=request.conversation_id,
                       owner_id=request.identity.user_id, request=request)
        self._live[request.conversation_id] = live
        live.task = asyncio.create_task(self._drive(live), name=f"run-{request.run_id}")
        live.task.add_done_callback(lambda _: live.settle())
        if self.closing or request.conversation_id in self._stop_at_launch:
            live.cancel()  # admitted during shutdown or a Stop: it records its end at once
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.create_task(keep_alive(
                self.leases, self._running, self._lost), name="run-lease-heartbeat")
        return live

    async def follow(self, conv_id: str) -> AsyncIterator[LiveRun]:
        """Yield the conversation's live run whenever it changes, moving on to each queued
        turn as it starts, until nothing runs (a run that paused for approval ends it).
        Between two runs it waits while the next turn is admitted; a turn refused there
        yields the run before it once more, so the reader shows why (`queue.take_refused`)."""
        await self.admitted(conv_id)
        live = self._live.get(conv_id)
        while live is not None and not live.finished.is_set():
            async for _ in live.follow():
                yield live
            await self.admitted(conv_id)
            following, live = live, self._live.get(conv_id)
            if live is following:  # no queued turn started after it
                if self.queue.has_refused(conv_id):
                    yield following
                return

    def poke(self, conv_id: str) -> None:
        """Wake the conversation's readers (its queue changed)."""
        live = self._live.get(conv_id)
        if live is not None:
            live.poke()

    def _running(self) -> list[tuple[str, str]]:
        return [(live.run_id, live.streamed_text()) for live in self._live.values()
                if not live.finished.is_set() and not live.request.finishing]

    def _lost(self, run_id: str) -> None:
        """Another replica ended this run as dead (this process stalled past the stale
        window): it no longer holds the conversation, so it stops."""
        for live in self._live.values():
            # A run writing its end releases the lease in that transaction: not lost.
            if live.run_id == run_id and not live.request.finishing:
                live.cancel()

    async def _drive(self, live: LiveRun) -> None:
        request = live.request
        with run_context(run_id=live.run_id, conv_id=request.conversation_id,
                         user=request.identity.user_id), run_span(  # on every log line
                "agent.run", **{"run.id": live.run_id, "conversation.id":
                                request.conversation_id, "user.id": request.identity.user_id,
                                "run.env": request.env_id}):
            await self._drive_run(live)

    async def _drive_run(self, live: LiveRun) -> None:
        stamp_seq = 0
        try:
            async for event in run_agent(self.deps, live.request):
                # Begun once its first event is out: the run is stored by then, so a Stop
                # from here cancels the task (it stores the person's message, and the stop,
                # before the cancellation ends it); a Stop before only sets the flag.
                live.started = True
                stamp_seq = event.seq
                live.append(event)
        except asyncio.CancelledError:
            live.append(ev.EventStamper(live.run_id, stamp_seq)(ev.Done, status="cancelled"))
        except Exception as exc:  # the loop's own last line failed too (e.g. the database)
            error = (str(exc) if isinstance(exc, DatabaseUnavailable)
                     else internal_error_message(exc, log, "a run's driver"))
            live.append(ev.EventStamper(live.run_id, stamp_seq)(ev.Done, status="failed",
                                                                error=error))
        finally:
            # A second cancellation (Stop, then shutdown) must not skip what follows: it is
            # raised again once the run's end is in place.
            stopped_again = False
            try:
                if not live.request.lease_released:  # else released with the run's end
                    await off_loop(self.leases.release, live.run_id)
            except asyncio.CancelledError:
                stopped_again = True
            except Exception:  # the lease goes stale and is swept
                pass
            live.finished_at = time.monotonic()
            live.finished.set()
            live.changed.set()
            # No await between the end and this: the conversation is held (busy) before any
            # reader wakes, and its readers wait for the next turn's launch.
            if live.status in _QUEUE_GOES_ON and not self.closing:
                self.start_next(live.conversation_id)
            if stopped_again:
                raise asyncio.CancelledError

    def start_next(self, conv_id: str) -> None:
        """Start the conversation's queued turns, oldest first, in a task: each is admitted
        in a worker thread; one that cannot start (the database is down, the person lost
        access) is reported to its readers, and the next is tried. The conversation is held
        from here (no await before) to the launch: nobody, not even another thread, sees it
        idle (no run, nothing queued) while its next turn is admitted."""
        waiting = self.queue.waiting(conv_id)
        if self.start_queued is None or not waiting or conv_id in self._starting:
            return
        self._hold(conv_id, waiting[0].identity.user_id)
        task = asyncio.create_task(self._start_queued_turns(conv_id),
                                   name=f"queue-{conv_id}")
        self._queue_tasks.add(task)
        task.add_done_callback(self._queue_tasks.discard)

    async def _start_queued_turns(self, conv_id: str) -> None:
        try:
            while self.start_queued is not None and (turn := self.queue.pop(conv_id)) \
                    is not None:
                self._starting[conv_id] = turn.identity.user_id
                try:
                    await self.start_queued(turn, conv_id)
                    return
                except Exception as exc:  # reported in the chat by the reader
                    log.warning("queued turn %s not started: %s", turn.turn_id,
                                type(exc).__name__)
                    self.queue.refused(conv_id, turn, exc)
        finally:
            self._let_go(conv_id)

    async def aclose(self, wait_s: float = SHUTDOWN_WAIT_S) -> None:
        """Graceful shutdown: refuse new runs, cancel live ones and wait (bounded) until
        each has recorded its end (a write in flight records "status unknown")."""
        self.closing = True
        deadline = time.monotonic() + wait_s
        if self._admitted:  # turns being admitted: launched (and cancelled) or refused
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_admitted(), timeout=wait_s)
        wait_s = max(0.0, deadline - time.monotonic())
        running = [live for live in self._live.values() if not live.finished.is_set()]
        for live in running:
            if not live.request.cancel_requested.is_set():  # else stopping: let it record
                live.cancel()
        if running:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(live.finished.wait()
                                                        for live in running)), timeout=wait_s)
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._heartbeat

    async def _all_admitted(self) -> None:
        while self._admitted:
            await self.admitted(next(iter(self._admitted)))

    def _forget_finished(self) -> None:
        """Drop runs that ended long ago, and the oldest beyond MAX_FINISHED_RUNS, so
        process memory does not grow with every chat. A conversation with queued turns
        keeps its last run (its readers move on from it)."""
        cutoff = time.monotonic() - FINISHED_RUN_TTL_S
        ended = sorted(((live.finished_at, conv_id) for conv_id, live in self._live.items()
                        if live.finished_at is not None and live.finished.is_set()
                        and not self.queue.waiting(conv_id)
                        and conv_id not in self._starting), key=lambda pair: pair[0])
        excess = len(ended) - MAX_FINISHED_RUNS
        for index, (finished_at, conv_id) in enumerate(ended):
            if index < excess or finished_at < cutoff:
                del self._live[conv_id]

