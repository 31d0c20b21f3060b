"""Each step's prompt of a main run, within the model's context budget (SPEC §9's rules).

    [system (+ the summary of older turns, a data block), the latest request if it was
     folded?, *the newest turns verbatim, *this run's messages]

The summary goes into the one system message rather than a message of its own: chat
templates of many local models accept a system message only first and want user and
assistant turns to alternate, and the offline model reads user messages as requests.

A step reads the conversation's rolling summary, the messages after it (this run's and at
most 2 × AGENT_HISTORY_MESSAGES earlier ones: the read stays bounded) and the latest user
message. When they do not fit the input budget, or more than AGENT_HISTORY_MESSAGES
earlier messages are unsummarised, the oldest of them are folded into the summary by
model calls (agent/summarise.py, at most 12 per run, counted in the run's usage) and the
summary is stored (storage/prompt_summaries.py): the next step, the next turn and the next
process start from it, and later folds extend it. Folds leave room to spare (half the
budget, half the message cap), so a summary call is not needed at every turn.

A run's later steps read nothing: the prompt is the last one's view (what was read, the
stored summary and the window) with the messages the run stored since appended in memory,
built by the same code as a stored read (the same rows, `storage.conversations.message_row`),
while the run's store writes them behind the model call (agent/run_store.py). A fold needs
the stored numbers: then every queued message is written first and the view is read again.

A fold never separates a tool call from its results: it ends before a user message (a
turn's start) when it can, else before an assistant message. The latest request is always
sent verbatim, even when the turn it starts is folded (a very long run in a small window).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from agent.budget import (
    Budget,
    estimate_message,
    estimate_messages,
    estimate_text,
    estimate_tools,
    main_budget,
    model_window,
)
from agent.history import model_message, to_model_messages
from agent.model_gateway import ModelGateway, ModelReply, ModelRequest
from agent.settings import Settings
from agent.summarise import (
    CONVERSATION_SUMMARY_MARKER,
    Summariser,
    render_for_summary,
    summary_room,
    summary_section,
)
from storage import Database, off_loop
from storage import conversations as repo
from storage import prompt_summaries as summaries
from storage.models import Message

__all__ = ["Prompt", "PromptWindow", "RunMessages", "StoredContext", "fold_point",
           "read_context"]


class RunMessages(Protocol):
    """What a run stored (agent/run_store.py's `RunStore`), as the window uses it."""

    log: list[dict[str, Any]]  # every message the run stored, in order

    def write_behind(self) -> None: ...  # start writing the queued ones; do not wait

    async def settle(self) -> None: ...  # wait for that write

    def writer(self) -> Callable[[], None] | None: ...  # the queued ones' write


@dataclass
class Prompt:
    system: str  # the run's system prompt, with the summary when there is one
    messages: list[dict[str, Any]]  # what follows the system prompt
    estimate: int  # input tokens, system prompt and tool definitions included


@dataclass
class _View:
    summary: str
    through_seq: int
    rows: list[Message]  # after `through_seq`: the earlier window, then this run's own
    run_start: int  # index of this run's first row in `rows`
    latest_user: Message | None
    gap: bool  # unsummarised rows older than the window were not read


@dataclass(frozen=True)
class _Known:
    """What a run's first read found before the run's own messages."""

    view: _View  # summary, window, latest request; its rows: the earlier window only
    first_of_run: int  # the number of the run's first message after the summary


@dataclass(frozen=True)
class StoredContext:
    """A run's first read of its stored context (`read_context`)."""

    view: _View
    known: _Known | None  # for the run's later reads: only its own messages are new


def read_context(db: Database, settings: Settings, conversation_id: str, run_id: str
                 ) -> StoredContext:
    """The summary, the window of earlier messages and the run's own, and the latest
    request (synchronous: a worker thread's)."""
    earlier = 2 * settings.agent_history_messages
    with db.read() as session:
        stored = summaries.get_summary(session=session, conversation_id=conversation_id)
        through = stored.through_seq if stored is not None else 0
        window, own = repo.list_prompt_window(
            session=session, conversation_id=conversation_id, run_id=run_id,
            earlier=earlier, after_seq=through)
        latest = repo.latest_user_message(session=session, conversation_id=conversation_id)
    gap = bool(window) and window[0].seq > through + 1
    view = _View(stored.text if stored is not None else "", through, [*window, *own],
                 len(window), latest, gap)
    return StoredContext(view, _Known(replace(view, rows=window), own[0].seq) if own else None)


def new_context(first: Message) -> StoredContext:
    """What `read_context` finds for a conversation whose only message is `first` (its
    number 1), the run's own, written by the run's admission: no summary, no earlier
    window, that message as the run's and the latest request. Built from the row as written
    instead of read back (three queries, 2.5 ms of a 52 ms first turn, traced)."""
    view = _View("", 0, [first], 0, first, False)
    return StoredContext(view, _Known(replace(view, rows=[]), first.seq))


class PromptWindow:
    """Builds the prompts of one run; its budget and summary allowance are the run's."""

    def __init__(self, *, db: Database, settings: Settings, gateway: ModelGateway,
                 conversation_id: str, run_id: str, system_prompt: str,
                 tools: list[dict[str, Any]], record: Callable[[ModelReply | None], None],
                 first_read: StoredContext | None = None,
                 run_messages: RunMessages | None = None) -> None:
        self.db, self.settings, self.gateway = db, settings, gateway
        self.conversation_id, self.run_id = conversation_id, run_id
        self.system_prompt = system_prompt
        self.tools_cost = estimate_tools(tools)
        self.fixed = _system_cost(system_prompt) + self.tools_cost
        self.summariser = Summariser(gateway, self.request, record, CONVERSATION_SUMMARY_MARKER)
        self._budget: Budget | None = None
        self._known: _Known | None = None
        # Read in the admission's worker thread right after it committed: the first view.
        self._first = first_read
        # With the run's messages: the last view built and how many of them it holds (the
        # next step appends the rest in memory instead of reading them back).
        self.run_messages = run_messages
        self._view: _View | None = None
        self._logged = 0

    def request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                max_tokens: int) -> ModelRequest:
        settings = self.settings
        return ModelRequest(
            model=settings.agent_model, messages=messages, tools=tools,
            temperature=settings.agent_temperature, max_tokens=max_tokens,
            api_base=settings.agent_api_base, api_key=settings.agent_api_key,
            timeout_s=settings.agent_model_timeout_s)

    async def budget(self) -> Budget:
        if self._budget is None:
            window = await model_window(self.gateway, self.settings)
            self._budget = main_budget(context_window=window,
                                       max_output_tokens=self.settings.agent_max_output_tokens)
        return self._budget

    def shrink(self) -> Budget:
        """The provider's overflow said the estimate runs short: the rest of the run keeps
        to the smaller budget of the retry."""
        assert self._budget is not None
        self._budget = self._budget.shrunk()
        return self._budget

    async def build(self, *, fold: bool = True, budget: Budget | None = None) -> Prompt:
        """The prompt of the next model request; with `fold`, older turns that do not fit
        are folded into the stored summary first (snapshots at a run's end do not fold).
        With the run's messages, a prompt that needs no fold is the last view and what the
        run stored since, and their write goes on behind it (module docstring)."""
        budget = budget or await self.budget()
        view = self._in_memory()
        cut = self._cut(view, budget) if fold and view is not None else 0
        if view is None or cut:
            view = await self._read_through()
            cut = self._cut(view, budget) if fold else 0
        elif self.run_messages is not None:
            self.run_messages.write_behind()
        summary, through = view.summary, view.through_seq
        if cut:
            if view.gap:
                self.summariser.omitted = True
            folded = to_model_messages(view.rows[:cut])
            summary = await self.summariser.summarise(
                render_for_summary(folded), prior=summary, budget=budget)
            through = view.rows[cut - 1].seq
            await off_loop(self._save, summary, through)
        system = self.system_prompt + (f"\n\n{summary_section(summary)}" if summary else "")
        messages = []
        latest = view.latest_user
        if latest is not None and latest.seq <= through:
            messages.append({"role": "user", "content": latest.content})
        messages += to_model_messages(view.rows[cut:])
        estimate = _system_cost(system) + self.tools_cost + estimate_messages(messages)
        return Prompt(system, messages, estimate)

    def _cut(self, view: _View, budget: Budget) -> int:
        costs = [_cost(row) for row in view.rows]
        room = budget.input_tokens - self.fixed
        if view.summary:
            room -= estimate_text(f"\n\n{summary_section(view.summary)}")
        if view.latest_user is not None and view.latest_user.seq <= view.through_seq:
            room -= _cost(view.latest_user)
        if sum(costs) <= room and view.run_start <= self.settings.agent_history_messages:
            return 0
        roles = [row.role for row in view.rows]
        room = budget.input_tokens - self.fixed - summary_room(budget)
        cap = self.settings.agent_history_messages
        cut = fold_point(roles, costs, view.run_start, room=room, max_earlier=cap)
        latest = view.latest_user
        if latest is not None and any(row.seq == latest.seq for row in view.rows[:cut]):
            # the latest request will be sent on its own: make room for it
            cut = fold_point(roles, costs, view.run_start, room=room - _cost(latest),
                             max_earlier=cap)
        return cut

    def _in_memory(self) -> _View | None:
        """The last view and the run's messages stored since (as the rows a read would give
        back, numbered after it); None when there is no view to extend."""
        first, self._first = self._first, None
        if first is not None:  # read where the turn was admitted
            self._view, self._logged = self._use(first), 0
        elif self.run_messages is None:
            return None  # nothing tells the window what was stored: read it
        view = self._view
        if view is None or self.run_messages is None:
            return view
        stored = self.run_messages.log[self._logged:]
        if stored:
            last = max([view.through_seq, *(row.seq for row in view.rows[-1:]),
                        *([view.latest_user.seq] if view.latest_user else [])])
            rows = [repo.message_row(self.conversation_id, last + offset, run_id=self.run_id,
                                     **_as_read(fields)) for offset, fields in enumerate(stored, 1)]
            latest = next((row for row in reversed(rows) if row.role == "user"),
                          view.latest_user)
            view = replace(view, rows=[*view.rows, *rows], latest_user=latest)
            self._view, self._logged = view, len(self.run_messages.log)
        return view

    async def _read_through(self) -> _View:
        """Write what the run queued, then read the view back (one trip to a thread)."""
        before, logged = None, 0
        if self.run_messages is not None:
            await self.run_messages.settle()
            before, logged = self.run_messages.writer(), len(self.run_messages.log)
        view = await off_loop(self._read, before)
        self._view, self._logged = view, logged
        return view

    # database (worker threads) ----------------------------------------------------------

    def _read(self, before: Callable[[], None] | None = None) -> _View:
        if before is not None:
            before()
        known = self._known
        if known is None:
            return self._read_all()
        # Later steps of a run: what precedes the run does not change while it runs (the
        # run's lease keeps other writers out; a fold forgets `known`), so one read of the
        # run's own messages replaces four statements.
        with self.db.read() as session:
            own = repo.list_messages_from(session=session,
                                          conversation_id=self.conversation_id,
                                          from_seq=known.first_of_run)
        return replace(known.view, rows=[*known.view.rows, *own])

    def _read_all(self) -> _View:
        return self._use(read_context(self.db, self.settings, self.conversation_id,
                                      self.run_id))

    def _use(self, context: StoredContext) -> _View:
        if context.known is not None:
            self._known = context.known
        return context.view

    def _save(self, text: str, through_seq: int) -> None:
        self._known = self._view = None  # the next read starts after the new summary
        with self.db.session() as session:
            summaries.save_summary(session=session, conversation_id=self.conversation_id,
                                   text=text, through_seq=through_seq,
                                   model=self.settings.agent_model)


def _as_read(fields: dict[str, Any]) -> dict[str, Any]:
    """A queued message's fields as a read gives them back: its calls through JSON, as
    their column stores them (and none shared with the write still to come)."""
    calls = fields.get("tool_calls")
    return {**fields, "tool_calls": json.loads(json.dumps(calls))} if calls else fields


def _system_cost(system: str) -> int:
    return estimate_message({"role": "system", "content": system})


def _cost(row: Message) -> int:
    message = model_message(row)
    return estimate_message(message) if message is not None else 0


def fold_point(roles: Sequence[str], costs: Sequence[int], run_start: int, *, room: int,
               max_earlier: int) -> int:
    """How many of the oldest rows to fold so that the rest fits `room` tokens with room to
    spare (half of it) and at most half of `max_earlier` earlier rows remain; this run's
    rows are folded only when they alone exceed `room`. Snapped to a boundary that keeps
    every tool call with its results (0: nothing can be folded)."""
    def first_fitting(limit: int, start: int = 0) -> int:
        kept = sum(costs[start:])
        index = start
        while index < len(costs) and kept > limit:
            kept -= costs[index]
            index += 1
        return index

    run_cost = sum(costs[run_start:])
    if run_cost > room:
        cut = first_fitting(room, run_start)
    elif run_cost > room // 2:
        cut = run_start
    else:
        cut = first_fitting(room // 2)
    if run_start - cut > max_earlier:
        cut = max(cut, run_start - max_earlier // 2)
    return _snap(roles, cut, run_start)


def _snap(roles: Sequence[str], cut: int, run_start: int) -> int:
    """The first boundary at or after `cut`: a turn's start while in earlier turns, else
    any message that is not a tool result; back to the last call when only results follow."""
    if cut <= 0:
        return 0
    for index in range(cut, min(run_start, len(roles) - 1) + 1):
        if roles[index] == "user":
            return index
    for index in range(cut, len(roles)):
        if roles[index] != "tool":
            return index
    for index in range(min(cut, len(roles)) - 1, -1, -1):
        if roles[index] != "tool":
            return index
    return 0
