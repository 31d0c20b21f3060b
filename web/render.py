"""Pure functions that turn stored messages and run events into Chatbot messages.

No gradio import: the Chatbot accepts plain dicts (`role`, `content`, `metadata`), so this is
tested without launching anything. Messages are built as Markdown (model answers as the model
wrote them; values from users, Superset or errors embedded in the app's own sentences
Markdown-escaped) and leave through `web.text_policy`, which renders them to the inert HTML
the chat shows; the approval card is HTML with every value escaped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from web.text_policy import DEFAULT_POLICY, TextPolicy, escape_html, fenced, md_escape

__all__ = [
    "confirmation_card",
    "context_pill",
    "pending_confirmation",
    "render_history",
    "render_run",
    "render_turn",
    "retryable_call",
]

_RESULT_PREVIEW_CHARS = 1500
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
    `awaiting`: the call ids with an open approval request; see `_history`."""
    return policy.chat(_history(rows, awaiting))


def _history(rows: Iterable[Any], awaiting: Collection[str] = ()) -> list[dict[str, Any]]:
    """A stored call without a result shows as "awaiting approval" only when its approval
    request is open (`awaiting`); otherwise nothing recorded its end (the run died before
    the server could say), and the step says exactly that."""
    messages: list[dict[str, Any]] = []
    steps: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.role == "user":
            messages.append({"role": "user", "content": row.content or ""})
        elif row.role == "assistant":
            if row.content and (row.meta or {}).get("status") == "interrupted":
                messages.append({"role": "assistant", "content": row.content,
                                 "metadata": {"title": "⚠️ Interrupted", "status": "done"}})
            elif row.content:
                messages.append({"role": "assistant", "content": row.content})
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
            icon = {"error": "❌", "denied": "⛔", "cancelled": "⏹", "declined": "✋",
                    "unknown": "⏱️", "interrupted": "⚠️"}.get(status)
            _finish_step(step, title=f"{icon} {row.tool_name}" if icon else None,
                         body=f"Result:\n{fenced(_json_preview(row.content))}",
                         duration_ms=meta.get("duration_ms"))
    for call_id, step in steps.items():
        if step["metadata"]["status"] != "pending":
            continue
        tool = step["metadata"]["title"].removeprefix("🔧 ")
        if call_id in awaiting:
            _finish_step(step, title=f"⏸ {tool} · awaiting approval",
                         body="Not executed yet: waiting for a decision.")
        else:
            _finish_step(step, title=f"⚠️ {tool} · no result recorded",
                         body="The run ended before this call reported back, so its "
                         "outcome was never recorded.")
    return messages


class _RunRenderer:
    """Folds one run's events into chat messages."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.steps: dict[str, dict[str, Any]] = {}
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
            step = _step(event["call_id"], event["tool"], {})
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
        _finish_step(self._step_for(event),
                     body=f"Result{note}:\n{fenced(_json_preview(event['summary']))}",
                     duration_ms=event.get("duration_ms"))

    def _on_tool_error(self, event: dict[str, Any]) -> None:
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
        step = self.steps.get(event["call_id"])
        if step is not None:  # not running: waiting for a person, so no spinner
            _finish_step(step, title=f"⏸ {event['tool']} · awaiting approval",
                         body="Not executed yet: waiting for your decision.")
        danger = "🛑 Dangerous change" if event.get("dangerous") else "✋ Approval needed"
        wait = (f" Confirm unlocks after {event['countdown_s']} s."
                if event.get("countdown_s") else "")
        self._say(f"**{md_escape(event['summary'])}**\n\n"
                  f"Arguments:\n{fenced(_json_preview(event.get('args') or {}), 'json')}\n\n"
                  f"Approve or deny below.{wait}", title=danger)

    def _on_done(self, event: dict[str, Any]) -> None:
        status = event.get("status")
        if status == "cancelled":
            self._say("Stopped. What completed before the stop is kept.", title="⏹ Stopped")
        elif status == "failed":
            self._say(md_escape(event.get("error") or "The run failed."), title="❌ Failed")


def render_run(events: Sequence[dict[str, Any]], user_message: str | None = None,
               policy: TextPolicy = DEFAULT_POLICY) -> list[dict[str, Any]]:
    """One run's events (as wire dicts) as chat messages, the user's message first."""
    return policy.chat(_run(events, user_message))


def _run(events: Sequence[dict[str, Any]], user_message: str | None) -> list[dict[str, Any]]:
    renderer = _RunRenderer()
    if user_message is not None and user_message.strip():
        renderer.messages.append({"role": "user", "content": user_message})
    for event in events:
        renderer.feed(event)
    return renderer.messages


def render_turn(prior_rows: Iterable[Any], events: Sequence[dict[str, Any]],
                user_message: str | None = None, policy: TextPolicy = DEFAULT_POLICY
                ) -> list[dict[str, Any]]:
    """Stored history plus a live run. A continuation run repeats the paused call's
    `tool_call`, so that call's pending step from history is shown once, with its outcome."""
    called = {e.get("call_id") for e in events if e.get("type") == "tool_call"}
    prior = [m for m in _history(prior_rows) if (m.get("metadata") or {}).get("id") not in called]
    return policy.chat(prior + _run(events, user_message))


def pending_confirmation(events: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The `confirm_required` event a run stopped at, if it stopped for one."""
    if not events or events[-1].get("type") != "done" or (
            events[-1].get("status") != "awaiting_confirmation"):
        return None
    return next((e for e in reversed(events) if e.get("type") == "confirm_required"), None)


def retryable_call(events: Sequence[dict[str, Any]]) -> str | None:
    """The call id of the last read whose automatic retry failed too, once the run is done."""
    if not events or events[-1].get("type") != "done":
        return None
    failed = [e for e in events if e.get("type") == "tool_error" and e.get("retry_exhausted")]
    return failed[-1]["call_id"] if failed else None


_attr = escape_html


def confirmation_card(event: dict[str, Any] | None) -> str:
    """The approval card (raw HTML for gr.HTML, so every value is escaped here). Its data
    attributes drive the client-side countdown of dangerous calls."""
    if not event:
        return ""
    dangerous = bool(event.get("dangerous"))
    countdown = int(event.get("countdown_s") or 0) if dangerous else 0
    rows = "".join(
        f"<tr><th>{label}</th><td>{_attr(value)}</td></tr>"
        for label, value in (("Tool", event.get("tool")), ("Environment", event.get("env_id")),
                             ("Tool risk", event.get("tool_risk")),
                             ("Environment tier", event.get("env_risk")),
                             ("Permission", event.get("permission_risk"))))
    args = _attr(json.dumps(event.get("args") or {}, ensure_ascii=False, indent=1))
    expires = event.get("expires_at")
    if isinstance(expires, int | float):
        when = time.strftime("%H:%M:%S UTC", time.gmtime(expires))
        rows += f"<tr><th>Expires</th><td>{_attr(when)}</td></tr>"
    heading = "🛑 Dangerous change — approval needed" if dangerous else "✋ Approval needed"
    wait = (f'<p class="confirm-countdown" aria-live="polite">Confirm unlocks in {countdown} s'
            "</p>" if countdown else '<p class="confirm-countdown"></p>')
    return (f'<div class="confirm-card{" dangerous" if dangerous else ""}" '
            f'data-confirmation="{_attr(event.get("confirmation_id"))}" '
            f'data-countdown="{countdown}">'
            f"<h4>{heading}</h4><p><strong>{_attr(event.get('summary'))}</strong></p>"
            f"<table>{rows}</table><pre>{args}</pre>{wait}</div>")
