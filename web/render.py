"""Pure functions that turn stored messages and run events into Chatbot messages.

No gradio import: the Chatbot accepts plain dicts (`role`, `content`, `metadata`), so this is
tested without launching anything. Messages are built as Markdown (model answers as the model
wrote them; values from users, Superset or errors embedded in the app's own sentences
Markdown-escaped) and leave through `web.text_policy`, which renders them to the inert HTML
the chat shows; the approval card is HTML with every value escaped.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from web.approval_card import confirmation_card
from web.footnotes import footnote, links_line, run_footnote
from web.text_policy import DEFAULT_POLICY, TextPolicy, fenced, md_escape

__all__ = [
    "RunRenderer",
    "awaiting_step",
    "call_args",
    "confirmation_card",
    "context_pill",
    "history_messages",
    "pending_confirmation",
    "render_history",
    "render_run",
    "render_turn",
    "retryable_call",
    "run_footnote",
    "run_messages",
    "undoable_change",
]

_RESULT_PREVIEW_CHARS = 1500
# How a decided approval shows on its step (live and from history).
_DECIDED = {"denied": ("🚫", "denied"), "expired": ("⌛", "expired"),
            "superseded": ("⏹", "closed by your next message"),
            "approved": ("✅", "approved")}
_STOPPED = {"role": "assistant", "content": "Stopped. What completed before the stop is kept.",
            "metadata": {"title": "⏹ Stopped", "status": "done"}}
_TITLES = {"dashboard": "📋 Dashboard", "dataset": "🗃️ Dataset", "migration": "🚚 Migration"}


def _json_preview(value: Any, limit: int = _RESULT_PREVIEW_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
    return text if len(text) <= limit else text[:limit] + " …"


def context_pill(context: dict[str, Any] | None, env_id: str | None) -> str:
    """`📋 Dashboard #42 'Sales' · ss-dev` for a Markdown component: the page's values are
    Markdown-escaped, so a name such as `[x](https://…)` shows as typed, never as a link."""
    parts: list[str] = []
    if context and context.get("objectType"):
        label = _TITLES.get(context["objectType"], "📄 Page")
        if context.get("objectId"):
            label += f" #{md_escape(context['objectId'])}"
        if context.get("objectName"):
            label += f" '{md_escape(context['objectName'])}'"
        parts.append(label)
    else:
        parts.append("🏠 No object selected")
    if env_id:
        parts.append(md_escape(env_id))
    return " · ".join(parts)


def _step(call_id: str, tool: str, args: Any, *, status: str = "pending") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": f"Arguments:\n{fenced(_json_preview(args), 'json')}",
        "metadata": {"title": f"🔧 {tool}", "id": call_id, "status": status},
    }


def _undo_note(step: dict[str, Any], audit_id: Any) -> None:
    """On the step of a change that kept its pre-image: its title and body say it can be
    undone, and how (issue 15)."""
    if not isinstance(audit_id, int) or isinstance(audit_id, bool):
        return
    step["metadata"]["title"] += f" · ↩️ can be undone (change #{audit_id})"
    step["content"] += (f"\n\n↩️ Can be undone: change #{audit_id} (“Undo this change” under "
                        "the chat, or from the audit log).")


def _finish_step(step: dict[str, Any], *, title: str | None = None, body: str,
                 duration_ms: int | None = None) -> None:
    step["content"] += f"\n\n{body}"
    metadata = step["metadata"]
    metadata["status"] = "done"
    if title:
        metadata["title"] = title
    if duration_ms is not None:
        metadata["duration"] = round(duration_ms / 1000, 2)


def render_history(rows: Iterable[Any], policy: TextPolicy = DEFAULT_POLICY,
                   awaiting: Collection[str] = ()) -> list[dict[str, Any]]:
    """Stored messages (user, assistant with tool calls, tool results) as chat messages.
    `awaiting`: the call ids with an open approval request; see `history_messages`."""
    return policy.chat(history_messages(rows, awaiting))


def history_messages(rows: Iterable[Any], awaiting: Collection[str] = ()
                     ) -> list[dict[str, Any]]:
    """A stored call without a result shows as "awaiting approval" only when its approval
    request is open (`awaiting`); otherwise nothing recorded its end (the run died before
    the server could say), and the step says exactly that."""
    messages: list[dict[str, Any]] = []
    steps: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.role == "user":
            messages.append({"role": "user", "content": row.content or ""})
        elif row.role == "assistant":
            if (row.meta or {}).get("status") == "stopped":  # what streamed, then the stop
                if row.content:
                    messages.append({"role": "assistant", "content": row.content})
                messages.append(_STOPPED)
            elif row.content and (row.meta or {}).get("status") == "interrupted":
                messages.append({"role": "assistant", "content": row.content,
                                 "metadata": {"title": "⚠️ Interrupted", "status": "done"}})
            elif row.content:
                meta = row.meta or {}
                messages.append({"role": "assistant",
                                 "content": row.content + links_line(meta.get("links"))})
                run = meta.get("run") if isinstance(meta.get("run"), dict) else {}
                note = footnote(run.get("duration_s"), run.get("usage"))
                if note:
                    messages.append({"role": "assistant", "content": note})
            for call in row.tool_calls or []:
                function = call.get("function", {})
                try:
                    args = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    args = function.get("arguments")
                step = _step(call.get("id", ""), function.get("name", "?"), args)
                steps[call.get("id", "")] = step
                messages.append(step)
        elif row.role == "tool":
            step = steps.get(row.tool_call_id or "")
            if step is None:
                continue
            meta = row.meta or {}
            status = meta.get("status", "done")
            decided = _DECIDED.get("denied" if status == "declined"
                                   else str(meta.get("confirmation")))
            icon = {"error": "❌", "denied": "⛔", "cancelled": "⏹",
                    "unknown": "⏱️", "interrupted": "⚠️"}.get(status)
            title = (f"{decided[0]} {row.tool_name} · {decided[1]}" if decided
                     else f"{icon} {row.tool_name}" if icon else None)
            _finish_step(step, title=title,
                         body=f"Result:\n{fenced(_json_preview(row.content))}",
                         duration_ms=meta.get("duration_ms"))
            _undo_note(step, meta.get("undo_audit_id"))
    for call_id, step in steps.items():
        if step["metadata"]["status"] != "pending":
            continue
        tool = step["metadata"]["title"].removeprefix("🔧 ")
        if call_id in awaiting:
            _awaiting(step, tool)
        else:
            _finish_step(step, title=f"⚠️ {tool} · no result recorded",
                         body="The run ended before this call reported back, so its "
                         "outcome was never recorded.")
    return messages


def _awaiting(step: dict[str, Any], tool: str) -> None:
    _finish_step(step, title=f"⏸ {tool} · awaiting approval",
                 body="Not executed yet: waiting for a decision.")


def awaiting_step(call_id: str, tool: str, args: Any) -> dict[str, Any]:
    """The step of a call waiting for a decision, from its approval request alone (a call
    older than the chat's window of stored messages)."""
    step = _step(call_id, tool, args)
    _awaiting(step, tool)
    return step


class RunRenderer:
    """Folds one run's events into chat messages."""

    def __init__(self, known_args: dict[str, Any] | None = None,
                 user_message: str | None = None) -> None:
        self.messages: list[dict[str, Any]] = []
        if user_message is not None and user_message.strip():
            self.messages.append({"role": "user", "content": user_message})
        self.steps: dict[str, dict[str, Any]] = {}
        self.known_args = known_args or {}  # arguments of calls made in an earlier run
        self.started_ts: float | None = None
        self.text: dict[str, Any] | None = None  # the assistant message being streamed

    def _say(self, content: str, title: str | None = None) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if title:
            message["metadata"] = {"title": title, "status": "done"}
        self.messages.append(message)

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "token":
            if self.text is None:
                self.text = {"role": "assistant", "content": ""}
                self.messages.append(self.text)
            self.text["content"] += event["text"]
            return
        if kind == "message":
            if self.text is None and event.get("content"):
                self._say(event["content"])
                self.text = self.messages[-1]
            if self.text is not None:
                self.text["content"] += links_line(event.get("links"))
            self.text = None
            return
        self.text = None  # anything else ends the streamed text block
        handler = getattr(self, f"_on_{kind}", None)
        if handler:
            handler(event)

    def _on_warning(self, event: dict[str, Any]) -> None:
        self._say(md_escape(event["message"]), title="⚠️ Warning")

    def _on_tool_call(self, event: dict[str, Any]) -> None:
        step = _step(event["call_id"], event["tool"], event.get("args") or {})
        if event.get("env_id"):
            step["metadata"]["title"] += f" · {event['env_id']}"
        self.steps[event["call_id"]] = step
        self.messages.append(step)

    def _step_for(self, event: dict[str, Any]) -> dict[str, Any]:
        step = self.steps.get(event["call_id"])
        if step is None:
            step = _step(event["call_id"], event["tool"],
                         self.known_args.get(event["call_id"], {}))
            self.steps[event["call_id"]] = step
            self.messages.append(step)
        return step

    def _on_tool_retry(self, event: dict[str, Any]) -> None:
        step = self._step_for(event)
        step["content"] += (f"\n\nRetrying (attempt {event['attempt'] + 1} of "
                            f"{event['max_attempts']}) after {event['delay_s']:g} s: "
                            f"{md_escape(event['error'])}")

    def _on_tool_result(self, event: dict[str, Any]) -> None:
        note = " (truncated for the model)" if event.get("truncated") else ""
        decided = _DECIDED.get(str(event.get("decision")))
        step = self._step_for(event)
        _finish_step(step,
                     title=f"{decided[0]} {event['tool']} · {decided[1]}" if decided else None,
                     body=f"Result{note}:\n{fenced(_json_preview(event['summary']))}",
                     duration_ms=event.get("duration_ms"))
        _undo_note(step, event.get("undo_audit_id"))

    def _on_tool_error(self, event: dict[str, Any]) -> None:
        decision = event.get("decision")
        if decision in _DECIDED:  # the person's choice, not a failure
            icon, label = _DECIDED[decision]
            _finish_step(self._step_for(event), title=f"{icon} {event['tool']} · {label}",
                         body=md_escape(event["error"]))
            return
        body = f"Error: {md_escape(event['error'])}"
        if event.get("retry_exhausted"):
            body += "\n\nThe retry failed too. You can retry this call."
        _finish_step(self._step_for(event), title=f"❌ {event['tool']}", body=body,
                     duration_ms=event.get("duration_ms"))

    def _on_tool_timeout(self, event: dict[str, Any]) -> None:
        body = (f"Operation status unknown — check Superset. "
                f"({md_escape(event['message'])})" if event.get("is_write_tool")
                else f"Timed out after {event['timeout_s']:g} s.")
        _finish_step(self._step_for(event), title=f"⏱️ {event['tool']}", body=body)

    def _on_permission_denied(self, event: dict[str, Any]) -> None:
        _finish_step(self._step_for(event), title=f"⛔ {event['tool']}",
                     body=f"Not allowed: {md_escape(event['reason'])} Nothing was executed.")

    def _on_confirm_required(self, event: dict[str, Any]) -> None:
        """One entry per pause: the call's own step says what waits and why (the card
        under the chat has the details and the buttons)."""
        step = self.steps.get(event["call_id"])
        danger = "🛑 Dangerous change. " if event.get("dangerous") else ""
        body = (f"{danger}**{md_escape(event['summary'])}**\n\nNot executed yet: waiting for "
                "your decision on the card below.")
        title = f"⏸ {event['tool']} · awaiting approval"
        if step is not None:  # not running: waiting for a person, so no spinner
            _finish_step(step, title=title, body=body)
        else:
            self._say(body, title=title)

    def _on_run_started(self, event: dict[str, Any]) -> None:
        self.started_ts = event.get("ts")

    def _on_done(self, event: dict[str, Any]) -> None:
        status = event.get("status")
        if status in ("completed", "awaiting_confirmation"):
            note = run_footnote(event, self.started_ts)
            if note:
                self._say(note)
        if status == "cancelled":
            self.messages.append(dict(_STOPPED))
        elif status == "failed":
            self._say(md_escape(event.get("error") or "The run failed."), title="❌ Failed")


def render_run(events: Sequence[dict[str, Any]], user_message: str | None = None,
               policy: TextPolicy = DEFAULT_POLICY) -> list[dict[str, Any]]:
    """One run's events (as wire dicts) as chat messages, the user's message first."""
    return policy.chat(run_messages(events, user_message))


def run_messages(events: Sequence[dict[str, Any]], user_message: str | None,
                 known_args: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One run's chat messages before the text policy (`known_args`: arguments of calls
    an earlier run made, which a continuation shows again)."""
    renderer = RunRenderer(known_args, user_message)
    for event in events:
        renderer.feed(event)
    return renderer.messages


def render_turn(prior_rows: Iterable[Any], events: Sequence[dict[str, Any]],
                user_message: str | None = None, policy: TextPolicy = DEFAULT_POLICY
                ) -> list[dict[str, Any]]:
    """Stored history plus a live run. A continuation run repeats the paused call's
    `tool_call`, so that call's pending step from history is shown once, with its outcome."""
    # A continuation answers the paused call (a deny only says "denied"): any event about a
    # call replaces its stored step.
    called = {e.get("call_id") for e in events if e.get("call_id")}
    rows = list(prior_rows)
    prior = [m for m in history_messages(rows)
             if (m.get("metadata") or {}).get("id") not in called]
    return policy.chat(prior + run_messages(events, user_message, call_args(rows, called)))


def call_args(rows: Iterable[Any], wanted: Collection[Any]) -> dict[str, Any]:
    """The stored arguments of the calls `wanted` (a continuation shows them again)."""
    found: dict[str, Any] = {}
    for row in rows:
        for call in (row.tool_calls or []) if row.role == "assistant" else []:
            if call.get("id") in wanted:
                try:
                    found[call["id"]] = json.loads(
                        (call.get("function") or {}).get("arguments") or "{}")
                except ValueError:
                    found[call["id"]] = (call.get("function") or {}).get("arguments")
    return found


def pending_confirmation(events: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The `confirm_required` event a run stopped at, if it stopped for one."""
    if not events or events[-1].get("type") != "done" or (
            events[-1].get("status") != "awaiting_confirmation"):
        return None
    return next((e for e in reversed(events) if e.get("type") == "confirm_required"), None)


def undoable_change(events: Sequence[dict[str, Any]]) -> int | None:
    """The audit id of the run's last change that kept a pre-image, once the run is done."""
    if not events or events[-1].get("type") != "done":
        return None
    kept = [e["undo_audit_id"] for e in events
            if e.get("type") == "tool_result" and isinstance(e.get("undo_audit_id"), int)]
    return kept[-1] if kept else None


def retryable_call(events: Sequence[dict[str, Any]]) -> str | None:
    """The call id of the last read whose automatic retry failed too, once the run is done."""
    if not events or events[-1].get("type") != "done":
        return None
    failed = [e for e in events if e.get("type") == "tool_error" and e.get("retry_exhausted")]
    return failed[-1]["call_id"] if failed else None
