"""Pure rendering of events and stored messages into Chatbot messages."""

from __future__ import annotations

from types import SimpleNamespace

from web.render import context_pill, render_history, render_run
from web.text_policy import TextPolicy


def _ev(kind: str, seq: int, **fields):  # type: ignore[no-untyped-def]
    return {"type": kind, "run_id": "r", "seq": seq, "ts": 0.0, **fields}


def test_tool_step_goes_pending_then_done_with_duration() -> None:
    call = _ev("tool_call", 2, call_id="c1", tool="list_dashboards", args={"env_id": "ss-dev"},
               env_id="ss-dev", tool_risk="read")
    pending = render_run([call], "list the dashboards")
    assert pending[0] == {"role": "user", "content": "<p>list the dashboards</p>"}
    assert pending[1]["metadata"]["status"] == "pending"
    assert pending[1]["metadata"]["title"] == "🔧 list_dashboards · ss-dev"
    done = render_run([call, _ev("tool_result", 3, call_id="c1", tool="list_dashboards",
                                 summary='{"count": 12}', truncated=True, duration_ms=1500)])
    step = done[0]
    assert step["metadata"]["status"] == "done" and step["metadata"]["duration"] == 1.5
    assert "truncated" in step["content"] and "&quot;count&quot;: 12" in step["content"]


def test_tokens_stream_into_one_message_and_message_closes_it() -> None:
    events = [_ev("token", 1, text="Hello "), _ev("token", 2, text="<b>world</b>"),
              _ev("message", 3, content="Hello <b>world</b>")]
    chat = render_run(events)
    assert len(chat) == 1
    assert chat[0]["content"] == "<p>Hello &lt;b&gt;world&lt;/b&gt;</p>"


def test_errors_timeouts_denials_and_done_states() -> None:
    events = [
        _ev("tool_call", 1, call_id="a", tool="get_dashboard", args={}, env_id=None,
            tool_risk="read"),
        _ev("tool_error", 2, call_id="a", tool="get_dashboard", error="502 Bad Gateway",
            retryable=True, retry_exhausted=True),
        _ev("tool_timeout", 3, call_id="b", tool="delete_dashboard", timeout_s=60,
            is_write_tool=True, retryable=False, message="no answer in 60 s"),
        _ev("permission_denied", 4, call_id="c", tool="delete_dataset", reason="Not offered.",
            required_role="admin"),
        _ev("warning", 5, message="UI context ignored"),
        _ev("done", 6, status="cancelled"),
    ]
    chat = render_run(events)
    titles = [m.get("metadata", {}).get("title") for m in chat]
    assert titles == ["❌ get_dashboard", "⏱️ delete_dashboard", "⛔ delete_dataset",
                      "⚠️ Warning", "⏹ Stopped"]
    assert "retry" in chat[0]["content"]
    assert "Operation status unknown — check Superset" in chat[1]["content"]
    assert "Nothing was executed" in chat[2]["content"]


def test_failed_run_shows_the_error() -> None:
    chat = render_run([_ev("done", 1, status="failed", error="Model <unavailable>")])
    assert chat[0]["content"] == "<p>Model &lt;unavailable&gt;</p>"


def test_history_pairs_tool_results_with_their_calls() -> None:
    rows = [
        SimpleNamespace(role="user", content="hi <script>", tool_calls=None, tool_call_id=None,
                        tool_name=None, meta=None),
        SimpleNamespace(role="assistant", content="", tool_calls=[{
            "id": "c1", "type": "function",
            "function": {"name": "show_capabilities", "arguments": "{}"}}],
            tool_call_id=None, tool_name=None, meta=None),
        SimpleNamespace(role="tool", content='{"tools": []}', tool_calls=None,
                        tool_call_id="c1", tool_name="show_capabilities",
                        meta={"status": "done", "duration_ms": 20}),
        SimpleNamespace(role="assistant", content="Done.", tool_calls=None, tool_call_id=None,
                        tool_name=None, meta=None),
    ]
    chat = render_history(rows)
    assert chat[0]["content"] == "<p>hi &lt;script&gt;</p>"
    assert chat[1]["metadata"]["status"] == "done" and chat[1]["metadata"]["duration"] == 0.02
    assert chat[2] == {"role": "assistant", "content": "<p>Done.</p>"}


def test_code_fence_in_a_result_cannot_escape_the_block() -> None:
    events = [_ev("tool_call", 1, call_id="a", tool="t", args={}, env_id=None, tool_risk="read"),
              _ev("tool_result", 2, call_id="a", tool="t", summary="```\n<img src=x>",
                  truncated=False, duration_ms=1)]
    content = render_run(events)[0]["content"]
    assert content.count("<pre>") == 2  # one block for the args, one for the whole result
    assert "<code>```\n&lt;img src=x&gt;\n</code></pre>" in content


def test_context_pill_escapes_names() -> None:
    pill = context_pill({"objectType": "dashboard", "objectId": 42,
                         "objectName": "<img src=x onerror=alert(1)>"}, "ss-dev")
    assert pill == r"📋 Dashboard #42 '\<img src\=x onerror\=alert\(1\)\>' · ss\-dev"
    link = context_pill({"objectType": "dashboard", "objectName": "[pill](https://x.io)"}, None)
    assert link == r"📋 Dashboard '\[pill\]\(https\:\/\/x\.io\)'"
    assert context_pill(None, None) == "🏠 No object selected"


def test_a_call_awaiting_approval_is_not_shown_as_running() -> None:
    events = [
        _ev("tool_call", 1, call_id="c", tool="delete_dashboard", args={"dashboard_id": 3},
            env_id="prod", tool_risk="dangerous"),
        _ev("confirm_required", 2, confirmation_id="k", call_id="c", tool="delete_dashboard",
            args={"dashboard_id": 3}, env_id="prod", tool_risk="dangerous", env_risk="prod",
            permission_risk="allowed", dangerous=True, countdown_s=10,
            summary="Delete dashboard #3 in prod", expires_at=0.0),
    ]
    step = render_run(events)[0]
    assert step["metadata"]["status"] == "done"
    assert step["metadata"]["title"] == "⏸ delete_dashboard · awaiting approval"
    assert "Not executed yet" in step["content"]


def test_history_shows_an_unanswered_call_as_awaiting_approval() -> None:
    rows = [SimpleNamespace(role="assistant", content="", tool_calls=[{
        "id": "c1", "type": "function",
        "function": {"name": "delete_dashboard", "arguments": '{"dashboard_id": 3}'}}],
        tool_call_id=None, tool_name=None, meta=None)]
    step = render_history(rows, awaiting={"c1"})[0]
    assert step["metadata"]["status"] == "done"
    assert step["metadata"]["title"] == "⏸ delete_dashboard · awaiting approval"


def test_an_unanswered_call_without_an_open_approval_says_no_result_was_recorded() -> None:
    """Issue 12: a read killed mid-call used to show as "awaiting approval" with no card."""
    rows = [SimpleNamespace(role="assistant", content="", tool_calls=[{
        "id": "c1", "type": "function",
        "function": {"name": "list_dashboards", "arguments": "{}"}}],
        tool_call_id=None, tool_name=None, meta=None)]
    step = render_history(rows)[0]
    assert step["metadata"]["title"] == "⚠️ list_dashboards · no result recorded"
    assert "awaiting" not in step["content"] and "never recorded" in step["content"]


def test_a_finished_run_shows_its_duration_tokens_and_cost() -> None:
    """Issue 11, item 8: like smolagents' step footnotes; the cost only when it is known."""
    from web.render import render_run, run_footnote

    started = {"type": "run_started", "run_id": "r", "seq": 1, "ts": 100.0, "conv_id": "c",
               "context": None, "env_id": None, "env_tier": None, "tools": [], "model": "m"}
    done = {"type": "done", "run_id": "r", "seq": 2, "ts": 102.44, "status": "completed",
            "usage": {"prompt_tokens": 1100, "completion_tokens": 134, "total_tokens": 1234,
                      "cost_usd": 0.00123}}
    assert run_footnote(done, 100.0) == "*2.4 s · 1 234 tokens (1 100 in, 134 out) · $0.0012*"
    offline = {**done, "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                 "total_tokens": 15, "cost_usd": None}}
    assert "$" not in run_footnote(offline, 100.0)
    chat = render_run([started, done])
    assert "1 234 tokens" in chat[-1]["content"]


def test_the_footnote_and_links_are_shown_again_after_a_reload() -> None:
    """What the live page showed under an answer comes back from the answer's stored meta."""
    usage = {"prompt_tokens": 1100, "completion_tokens": 134, "total_tokens": 1234,
             "cost_usd": 0.00123}
    answer = SimpleNamespace(
        role="assistant", content="Sales is yours.", tool_calls=None, tool_call_id=None,
        tool_name=None, run_id="r", meta={
            "run": {"duration_s": 2.44, "usage": usage},
            "links": [{"title": "Sales", "url": "https://bi.example.com/superset/dashboard/5/"}]})
    chat = render_history([answer], TextPolicy(["https://bi.example.com/"]))
    assert 'href="https://bi.example.com/superset/dashboard/5/"' in chat[0]["content"]
    assert "2.4 s · 1 234 tokens (1 100 in, 134 out) · $0.0012" in chat[1]["content"]
    assert len(render_history([SimpleNamespace(**{**vars(answer), "meta": None})])) == 1


def test_the_live_footnote_reads_the_time_the_stored_answer_keeps() -> None:
    """`done` comes after the run's end is written, on another clock than the stored
    answer's time: under load the live footer read 0.1 s more than the same answer after a
    reload. The live footnote takes the stored time when `done` carries it."""
    from web.render import run_footnote

    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    done = {"type": "done", "run_id": "r", "seq": 2, "ts": 102.49, "status": "completed",
            "usage": usage, "duration_s": 2.44}
    answer = SimpleNamespace(role="assistant", content="Done.", tool_calls=None,
                             tool_call_id=None, tool_name=None, run_id="r",
                             meta={"run": {"duration_s": 2.44, "usage": usage}})
    live = run_footnote(done, 100.0)
    assert live.startswith("*2.4 s")
    assert live.strip("*") in render_history([answer])[-1]["content"]
    assert run_footnote({**done, "duration_s": None}, 100.0).startswith("*2.5 s")  # no stored time
