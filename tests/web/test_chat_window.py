"""Pure rendering of a window of stored messages (issue 16, item 4): the first row that
offers earlier messages, open approvals older than the window, and a live run on top of a
window rendered once."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from agent.history_window import HistoryWindow, PendingCall
from web.chat_window import EARLIER_HREF, ChatView, render_window, without_run


def _row(seq: int, role: str, content: str = "", run_id: str = "r0", **fields: Any
         ) -> SimpleNamespace:
    base = {"tool_calls": None, "tool_call_id": None, "tool_name": None, "meta": None}
    return SimpleNamespace(seq=seq, role=role, content=content, run_id=run_id,
                           **{**base, **fields})


def _call(call_id: str, tool: str = "update_dashboard") -> list[dict[str, Any]]:
    return [{"id": call_id, "function": {"name": tool, "arguments": '{"dashboard_id": 3}'}}]


def _ev(kind: str, seq: int, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "run_id": "r9", "seq": seq, "ts": 0.0, **fields}


def test_the_first_row_says_how_many_earlier_messages_and_links_to_them() -> None:
    window = HistoryWindow(rows=[_row(9_851, "user", "hi"), _row(9_852, "assistant", "yo")],
                           earlier=9_850)
    chat = render_window(window)
    assert chat[0]["role"] == "assistant"
    assert f'<a href="{EARLIER_HREF}">Show earlier messages</a>' in chat[0]["content"]
    assert "9 850 earlier messages" in chat[0]["content"]
    assert [m["content"] for m in chat[1:]] == ["<p>hi</p>", "<p>yo</p>"]
    assert render_window(HistoryWindow(rows=window.rows))[0]["content"] == "<p>hi</p>"


def test_an_open_approval_older_than_the_window_is_still_shown_as_awaiting() -> None:
    """Issue 12's transcript truth holds outside the window: the open request is read
    apart from the messages, and its step says it waits."""
    older = PendingCall("k-old", "delete_chart", {"chart_id": 7})
    inside = PendingCall("k-in", "update_dashboard", {"dashboard_id": 3})
    rows = [_row(101, "user", "rename it"), _row(102, "assistant", tool_calls=_call("k-in")),
            _row(103, "assistant", tool_calls=_call("k-gone"))]
    chat = render_window(HistoryWindow(rows=rows, earlier=100, awaiting=[older, inside]))
    titles = [(m.get("metadata") or {}).get("title") for m in chat]
    assert titles == [None, "⏸ delete_chart · awaiting approval", None,
                      "⏸ update_dashboard · awaiting approval",
                      "⚠️ update_dashboard · no result recorded"]
    assert "chart_id" in chat[1]["content"]


def test_a_continuation_of_an_old_approval_shows_its_step_once_with_its_arguments() -> None:
    older = PendingCall("k-old", "delete_chart", {"chart_id": 7})
    window = HistoryWindow(rows=[_row(101, "user", "hello")], earlier=100, awaiting=[older])
    view = ChatView(window, awaiting=False)
    assert len(view.render()) == 2  # a live run's window: its events say what happened
    events = [_ev("tool_result", 1, call_id="k-old", tool="delete_chart", summary="{}",
                  decision="approved")]
    chat = view.render(events)
    steps = [m for m in chat if (m.get("metadata") or {}).get("id") == "k-old"]
    assert len(steps) == 1 and "chart_id" in steps[0]["content"]
    assert steps[0]["metadata"]["title"] == "✅ delete_chart · approved"


def test_a_live_run_is_rendered_on_top_of_the_window_rendered_once() -> None:
    rows = [_row(1, "user", "first"), _row(2, "assistant", "answer"),
            _row(3, "user", "now", run_id="live")]
    window = HistoryWindow(rows=rows)
    view = ChatView(without_run(window, "live"), awaiting=False)
    first = view.render([_ev("token", 1, text="Hel")], "now")
    second = view.render([_ev("token", 1, text="Hel"), _ev("token", 2, text="lo")], "now")
    assert [m["content"] for m in second] == ["<p>first</p>", "<p>answer</p>", "<p>now</p>",
                                              "<p>Hello</p>"]
    assert first[0] is second[0]  # the window's messages are not rendered again


def test_an_undo_note_on_a_step_inside_the_window_is_kept() -> None:
    rows = [_row(5, "user", "publish 3"), _row(6, "assistant", tool_calls=_call("k1")),
            _row(7, "tool", "{}", tool_call_id="k1", tool_name="update_dashboard",
                 meta={"status": "done", "undo_audit_id": 42})]
    chat = render_window(HistoryWindow(rows=rows, earlier=4))
    assert "can be undone (change #42)" in chat[2]["metadata"]["title"]


def _one_tool_run() -> list[dict[str, Any]]:
    """A live run as the loop publishes it: a tool call and its result, streamed words,
    the answer, the end; then a continuation step of a call from the window."""
    events = [_ev("run_started", 1),
              _ev("tool_call", 2, call_id="k1", tool="list_dashboards", args={"page": 0}),
              _ev("tool_result", 3, call_id="k1", tool="list_dashboards",
                  summary='{"count": 2, "result": [{"id": 1}, {"id": 2}]}', duration_ms=12)]
    events += [_ev("token", 4 + n, text=f"word{n} ") for n in range(12)]
    events += [_ev("message", 16, content="", links=[]),
               _ev("tool_result", 17, call_id="k-in", tool="update_dashboard", summary="{}",
                   decision="approved"),
               _ev("done", 18, status="completed", ts=1.0)]
    return events


def _window() -> HistoryWindow:
    rows = [_row(1, "user", "rename it"), _row(2, "assistant", tool_calls=_call("k-in"))]
    return HistoryWindow(rows=rows, awaiting=[PendingCall("k-in", "update_dashboard",
                                                          {"dashboard_id": 3})])


def test_each_update_of_a_live_run_shows_what_rendering_all_its_events_anew_shows() -> None:
    events, view, shown = _one_tool_run(), ChatView(_window(), awaiting=False), []
    for end in range(len(events) + 1):
        chat = view.render(events[:end], "list them")
        assert chat == ChatView(_window(), awaiting=False).render(events[:end], "list them")
        shown.append((chat, repr(chat)))
    # what an update handed to Gradio is never changed by a later one (Gradio diffs it)
    assert all(repr(chat) == text for chat, text in shown)


def test_a_streaming_update_leaves_the_growing_message_open_and_the_last_one_whole() -> None:
    """For a page following the run (web/stream_text.py): the growing answer without its
    closing tags, so Gradio sends each update as an append; the same events rendered as
    the run's last update are whole."""
    events, view = _one_tool_run()[:10], ChatView(_window(), awaiting=False)
    streaming = view.render(events, "list them", streaming=True)
    whole = view.render(events, "list them")
    assert whole[-1]["content"].endswith("</p>")
    assert streaming[-1]["content"] == whole[-1]["content"].removesuffix("</p>")
    assert streaming[:-1] == whole[:-1]
    assert view.render(events, "list them") == whole  # the renderer's own messages unchanged


def test_only_the_answer_being_written_holds_back_a_table_row() -> None:
    """A person's message (or a tool's step) that ends in a table row is whole already: it
    shows whole while the run streams; the answer's own unfinished row waits."""
    question = "fix this\n| a | b |\n|---|---|\n| 1 | 2 |"
    view = ChatView(_window(), awaiting=False)
    started = view.render([_ev("run_started", 1)], question, streaming=True)
    assert "<td>1</td><td>2" in started[-1]["content"]
    writing = [_ev("run_started", 1), _ev("token", 2, text="| x | y |\n|---|---|\n| 3 |")]
    answer = view.render(writing, question, streaming=True)[-1]["content"]
    assert "<th>x</th>" in answer and "3" not in answer


def test_an_update_folds_only_the_events_that_came_since_the_last(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A run of n events cost n folds per update, n^2 per run, on the shared event loop."""
    from web.render import RunRenderer

    folded: list[int] = []
    real_feed = RunRenderer.feed
    monkeypatch.setattr(RunRenderer, "feed",
                        lambda self, event: (folded.append(event["seq"]), real_feed(self, event)))
    events, view = _one_tool_run(), ChatView(_window(), awaiting=False)
    live: list[dict[str, Any]] = []
    for event in events:
        live.append(event)  # the live run's list grows in place, as LiveRun.events does
        view.render(live, "list them")
    assert folded == [event["seq"] for event in events]


def test_events_that_are_not_the_last_ones_grown_are_folded_anew() -> None:
    """A follower that read the run again (a reload, a window read) brings new objects."""
    events, view = _one_tool_run(), ChatView(_window(), awaiting=False)
    view.render(events[:8], "list them")
    again = [dict(event) for event in events[:5]]
    assert view.render(again, "list them") == ChatView(_window(), awaiting=False).render(
        again, "list them")
    assert view.render(events, "other") == ChatView(_window(), awaiting=False).render(
        events, "other")
    longer = [_ev("token", n, text=f"x{n} ") for n in range(len(events) + 2)]
    assert view.render(longer, "other") == ChatView(_window(), awaiting=False).render(
        longer, "other")
