"""The chat of a window of stored messages plus a live run (issue 16, item 4).

A turn's cost must not grow with the conversation: the server reads a bounded window of
the newest messages (`agent/history_window.py`), renders it once per run (Markdown to HTML
is the costly part), and each streamed update renders only the live run's events on top.
When older messages exist the chat's first row says how many and offers "Show earlier
messages": a link the page's script turns into a click on a hidden button
(`web/layout.py`, `SHOW_EARLIER_JS`), because a Gradio Chatbot row cannot carry an event
of its own. No gradio import: tested without launching anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent.history_window import HistoryWindow
from web.render import RunRenderer, awaiting_step, call_args, history_messages
from web.stream_text import growing_markdown, open_ended
from web.text_policy import DEFAULT_POLICY, TextPolicy

__all__ = ["EARLIER_CLASS", "EARLIER_HREF", "ChatView", "earlier_row", "render_window",
           "without_run"]

EARLIER_HREF = "#show-earlier"
EARLIER_CLASS = "show-earlier"


def _count(n: int) -> str:
    return f"{n:,}".replace(",", " ")  # 9 850, as the footnotes group digits


def earlier_row(earlier: int) -> dict[str, Any]:
    """The chat's first row when `earlier` stored messages are not shown. App text with a
    number only, so it is built as HTML here rather than through the text policy (whose
    link rule would show a fragment link as text)."""
    noun = "message" if earlier == 1 else "messages"
    return {"role": "assistant", "content": (
        f'<p class="{EARLIER_CLASS}">⬆ <a href="{EARLIER_HREF}">Show earlier messages</a>'
        f" · {_count(earlier)} earlier {noun} in this conversation are not shown</p>")}


class ChatView:
    """A window rendered once; `render(events)` adds a live run's messages per update.

    `awaiting`: show calls with an open approval as awaiting (an idle conversation, or the
    window read before a new turn closed them); a live run's own events say what happened
    to its calls instead, as `render_turn` does. An open approval whose call is older than
    the window is shown after the first row, from its approval request."""

    def __init__(self, window: HistoryWindow, policy: TextPolicy = DEFAULT_POLICY, *,
                 awaiting: bool = True) -> None:
        self.window = window
        self.policy = policy
        ids = window.awaiting_ids if awaiting else set()
        self._prior = policy.chat(history_messages(window.rows, ids))
        in_window = {call.get("id") for row in window.rows if row.role == "assistant"
                     for call in row.tool_calls or []}
        older = [call for call in window.awaiting if call.call_id not in in_window]
        self._head = ([earlier_row(window.earlier)] if window.earlier else []) + (
            policy.chat([awaiting_step(call.call_id, call.tool, call.args)
                         for call in older]) if awaiting else [])
        self._pending_args = {call.call_id: call.args for call in window.awaiting}
        self._args: dict[frozenset[Any], dict[str, Any]] = {}
        self._run: _RunProgress | None = None

    def render(self, events: Sequence[dict[str, Any]] = (),
               user_message: str | None = None, *, streaming: bool = False
               ) -> list[dict[str, Any]]:
        """The window, then the run of `events`. A continuation repeats the paused call's
        `tool_call`: that call's stored step is replaced by the run's, shown once.
        `streaming`: the run is still going and a page follows it (`web/stream_text.py`):
        the last message goes without its closing tags, and while the answer is being
        written (the last event is a token) without its unfinished table row. A person's
        message or a tool's step is whole already, so nothing of it is held back."""
        if not events and not (user_message or "").strip():
            return [*self._head, *self._prior]
        called = frozenset(e.get("call_id") for e in events if e.get("call_id"))
        prior = self._prior if not called else [
            m for m in self._prior if (m.get("metadata") or {}).get("id") not in called]
        head = self._head if not called else [
            m for m in self._head if (m.get("metadata") or {}).get("id") not in called]
        if called not in self._args:
            self._args[called] = {**{k: v for k, v in self._pending_args.items()
                                     if k in called}, **call_args(self.window.rows, called)}
        messages = self._run_messages(events, user_message, self._args[called])
        if streaming and messages and isinstance(messages[-1].get("content"), str):
            last = messages[-1]
            if events and events[-1].get("type") == "token":  # the answer being written
                last = {**last, "content": growing_markdown(last["content"])}
            run = self.policy.chat([*messages[:-1], last])
            run[-1]["content"] = open_ended(run[-1]["content"])
        else:
            run = self.policy.chat(messages)
        return [*head, *prior, *run]

    def _run_messages(self, events: Sequence[dict[str, Any]], user_message: str | None,
                      known_args: dict[str, Any]) -> list[dict[str, Any]]:
        """The run's messages (`run_messages`), folding in only the events that came since
        the last update. Folding every event again on every update (each tool result's JSON
        preview dumped again) made an update's cost grow with the run, on the event loop
        that every other stream shares. A sequence that is not the last one grown (its last
        folded event is not the same object) is folded anew."""
        progress = self._run
        if (progress is None or progress.user_message != user_message
                or len(events) < progress.folded
                or (progress.folded and events[progress.folded - 1] is not progress.last)):
            progress = self._run = _RunProgress(user_message, RunRenderer(None, user_message))
        # Arguments of earlier runs' calls, for the calls seen so far: what a call already
        # folded looked up stays the same as the set grows.
        progress.renderer.known_args = known_args
        for event in events[progress.folded:]:
            progress.renderer.feed(event)
        progress.folded, progress.last = len(events), events[-1] if events else None
        return progress.renderer.messages


@dataclass
class _RunProgress:
    """How far `ChatView` has folded a live run's events."""

    user_message: str | None
    renderer: RunRenderer
    folded: int = 0
    last: dict[str, Any] | None = None


def render_window(window: HistoryWindow, policy: TextPolicy = DEFAULT_POLICY
                  ) -> list[dict[str, Any]]:
    """An idle conversation's chat: the window, open approvals shown as awaiting."""
    return ChatView(window, policy).render()


def without_run(window: HistoryWindow, run_id: str) -> HistoryWindow:
    """The window without the rows a live run already stored (its events show them)."""
    return replace(window, rows=[row for row in window.rows if row.run_id != run_id])
