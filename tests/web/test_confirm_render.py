"""Pure rendering of the guardrail UI: the approval card, when the panel shows Confirm/Deny
or Retry, and a continuation shown without a duplicate step."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from web.render import confirmation_card, pending_confirmation, render_turn, retryable_call


def _ev(kind: str, seq: int, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "run_id": "r", "seq": seq, "ts": 0.0, **fields}


CARD = _ev("confirm_required", 3, confirmation_id="c1", call_id="k1", tool="delete_dashboard",
           args={"dashboard_id": 2}, env_id="prod", tool_risk="dangerous", env_risk="prod",
           permission_risk="allowed", dangerous=True, countdown_s=10,
           summary="Delete dashboard #2 '<img src=x onerror=alert(1)>' in prod", expires_at=1.0)


def test_card_escapes_everything_and_carries_the_countdown() -> None:
    html = confirmation_card(CARD)
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'data-confirmation="c1"' in html and 'data-countdown="10"' in html
    assert "Confirm unlocks in 10 s" in html
    calm = confirmation_card({**CARD, "dangerous": False, "countdown_s": 0,
                              "confirmation_id": '"><script>'})
    assert 'data-countdown="0"' in calm and "<script>" not in calm
    assert confirmation_card(None) == ""


def test_panel_shows_confirm_only_when_the_run_waits_and_retry_after_exhaustion() -> None:
    waiting = [CARD, _ev("done", 4, status="awaiting_confirmation")]
    assert pending_confirmation(waiting) == CARD
    assert pending_confirmation([CARD]) is None  # still running
    assert pending_confirmation([CARD, _ev("done", 4, status="completed")]) is None
    failed = [_ev("tool_error", 2, call_id="k2", tool="get_dashboard", error="503",
                  retryable=True, retry_exhausted=True), _ev("done", 3, status="completed")]
    assert retryable_call(failed) == "k2"
    assert retryable_call(failed[:1]) is None
    timeout = [_ev("tool_timeout", 2, call_id="k3", tool="delete_dashboard", timeout_s=60,
                   is_write_tool=True, retryable=False, message="Operation status unknown"),
               _ev("done", 3, status="completed")]
    assert retryable_call(timeout) is None


def test_continuation_shows_the_paused_step_once() -> None:
    rows = [SimpleNamespace(role="user", content="delete it", tool_calls=None,
                            tool_call_id=None, tool_name=None, meta=None, run_id="r0"),
            SimpleNamespace(role="assistant", content="", tool_call_id=None, tool_name=None,
                            meta=None, run_id="r0", tool_calls=[{
                                "id": "k1", "type": "function",
                                "function": {"name": "delete_dashboard",
                                             "arguments": '{"dashboard_id": 2}'}}])]
    events = [_ev("tool_call", 2, call_id="k1", tool="delete_dashboard",
                  args={"dashboard_id": 2}, env_id="prod", tool_risk="dangerous"),
              _ev("tool_result", 3, call_id="k1", tool="delete_dashboard", summary="{}",
                  truncated=False, duration_ms=5)]
    chat = render_turn(rows, events)
    steps = [m for m in chat if (m.get("metadata") or {}).get("id") == "k1"]
    assert len(steps) == 1 and steps[0]["metadata"]["status"] == "done"
    assert chat[0] == {"role": "user", "content": "<p>delete it</p>"}


def test_card_speaks_plainly_with_before_and_after_and_time_left() -> None:
    """Issue 11, item 4: no "Tool risk"/"Permission: allowed" jargon or absolute UTC time;
    what changes from what to what, where, and how long the request stays open."""
    update = {**CARD, "tool": "update_dashboard", "dangerous": False, "countdown_s": 0,
              "summary": "Update dashboard #3 'Sales Overview' in prod: title → 'Revenue 2026'",
              "changes": [{"field": "title", "before": "Sales Overview",
                           "after": "Revenue 2026"},
                          {"field": "description", "before": None, "after": "<b>x</b>"}],
              "expires_at": 1_000 + 14 * 60}
    html = confirmation_card(update, now=1_000)
    text = re.sub(r"<[^>]+>", " ", html)
    assert "Sales Overview" in text and "Revenue 2026" in text and "→" in text
    assert "(could not be read)" in text and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "Where:" in text and "production" in text
    assert "Expires in 14 min" in text
    for jargon in ("Tool risk", "Environment tier", "Permission", "UTC"):
        assert jargon not in text
    assert "<details>" in html  # the raw arguments, folded away
    assert "expired" in confirmation_card({**update, "expires_at": 999}, now=1_000)


def test_one_entry_per_pause_and_the_decision_on_the_step() -> None:
    call = _ev("tool_call", 2, call_id="k1", tool="delete_dashboard",
               args={"dashboard_id": 2}, env_id="prod", tool_risk="dangerous")
    paused = render_turn([], [call, CARD, _ev("done", 4, status="awaiting_confirmation")])
    assert len(paused) == 1  # the step itself, no second "approval needed" message
    assert paused[0]["metadata"]["title"] == "⏸ delete_dashboard · awaiting approval"
    assert "Delete dashboard #2" in paused[0]["content"]
    denied = render_turn([], [call, _ev("tool_error", 5, call_id="k1", tool="delete_dashboard",
                                        error="Denied by you; nothing was executed.",
                                        retryable=False, retry_exhausted=False,
                                        decision="denied")])
    assert denied[0]["metadata"]["title"] == "🚫 delete_dashboard · denied"
    approved = render_turn([], [call, _ev("tool_result", 5, call_id="k1",
                                          tool="delete_dashboard", summary="{}",
                                          truncated=False, duration_ms=3,
                                          decision="approved")])
    assert approved[0]["metadata"]["title"] == "✅ delete_dashboard · approved"


def test_a_denied_continuation_replaces_the_paused_step_and_keeps_its_arguments() -> None:
    """After Deny the page showed the paused call twice: "no result recorded" beside
    "denied" (a deny's continuation has no tool_call event to match it by)."""
    rows = [SimpleNamespace(role="user", content="rename it", tool_calls=None,
                            tool_call_id=None, tool_name=None, meta=None, run_id="r0"),
            SimpleNamespace(role="assistant", content="", tool_call_id=None, tool_name=None,
                            meta=None, run_id="r0", tool_calls=[{
                                "id": "k1", "type": "function",
                                "function": {"name": "update_dashboard",
                                             "arguments": '{"dashboard_id": 3}'}}])]
    events = [_ev("tool_error", 2, call_id="k1", tool="update_dashboard", error="Denied",
                  retryable=False, retry_exhausted=False, decision="denied")]
    steps = [m for m in render_turn(rows, events) if (m.get("metadata") or {}).get("id")]
    assert len(steps) == 1
    assert steps[0]["metadata"]["title"] == "🚫 update_dashboard · denied"
    assert "dashboard_id" in steps[0]["content"]
