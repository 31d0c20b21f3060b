"""Real-browser journeys of the main chat with slow tokens (Playwright on Debian's Chromium),
at a desktop and a phone size (issue 11): messages typed while a run streams are queued,
shown at once and run in order; a reload mid-run follows the same run to its end; Stop
hands queued messages back to the input box. Every journey also asserts that the browser
saw no console error and no 4xx/5xx response. Screenshots go to `test-artifacts/`.

Every wait is on the DOM or the database, never a fixed time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from storage.models import Conversation, Message, Run
from tests.web.conftest import LiveServer, sqlite_server
from tests.web.journey_support import VIEWPORTS, Watched

pytestmark = pytest.mark.browser

LONG = "what can you do?"  # a few hundred words: streams for seconds at 25 ms a word
SHORT = "which environments are there?"
SHORT_TOO = "list the dashboards"
LONG_LAST_LINE = "explicit approval"  # ends the answer to LONG


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from sqlite_server(tmp_path_factory, offline_token_delay_ms=25)


def _newest_conversation(server: LiveServer) -> str:
    with server.runtime.db.session() as session:
        newest = session.exec(select(Conversation).order_by(
            Conversation.created_at.desc()).limit(1)).first()  # type: ignore[attr-defined]
    assert newest is not None
    return newest.id


def _runs(server: LiveServer, conv_id: str) -> list[Run]:
    with server.runtime.db.session() as session:
        return list(session.exec(select(Run).where(Run.conversation_id == conv_id)
                                 .order_by(Run.started_at)))  # type: ignore[arg-type]


def _user_messages(server: LiveServer, conv_id: str) -> list[str]:
    with server.runtime.db.session() as session:
        return [row.content or "" for row in session.exec(
            select(Message).where(Message.conversation_id == conv_id, Message.role == "user")
            .order_by(Message.id))]  # type: ignore[arg-type]


def _wait_idle(server: LiveServer, conv_id: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    agent = server.runtime.agent
    while agent.runs.busy(conv_id) or agent.queued(conv_id):
        assert time.monotonic() < deadline, "the conversation never became idle"
        time.sleep(0.1)


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_messages_typed_during_a_run_are_queued_and_run_in_order(
        browser, live_server: LiveServer, size: str) -> None:  # type: ignore[no-untyped-def]
    watched = Watched(browser, live_server, VIEWPORTS[size])
    watched.send(LONG)
    watched.wait_chat("chat.includes('Superset')")  # the long answer is streaming
    watched.send(SHORT)
    watched.send(SHORT_TOO)

    # Both show at once as queued, while the first answer still streams.
    watched.wait_chat("(chat.match(/Queued: starts when the current run ends/g) || [])"
                      ".length === 2")
    conv_id = _newest_conversation(live_server)
    assert live_server.runtime.agent.runs.busy(conv_id)
    assert [t.text for t in live_server.runtime.agent.queued(conv_id)] == [SHORT, SHORT_TOO]

    _wait_idle(live_server, conv_id)
    watched.wait_chat("!chat.includes('Queued:') && chat.includes('dashboards')")
    assert _user_messages(live_server, conv_id) == [LONG, SHORT, SHORT_TOO]
    assert [run.status for run in _runs(live_server, conv_id)] == ["completed"] * 3
    text = watched.page.locator("#agent-chat").inner_text()
    assert text.index(LONG) < text.index(LONG_LAST_LINE) < text.index(SHORT) < text.index(
        SHORT_TOO)
    watched.close(f"queued-{size}")


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_a_reload_mid_run_follows_the_run_to_its_end(
        browser, live_server: LiveServer, size: str) -> None:  # type: ignore[no-untyped-def]
    watched = Watched(browser, live_server, VIEWPORTS[size])
    watched.send(LONG)
    watched.wait_chat("chat.includes('Superset')")
    conv_id = _newest_conversation(live_server)
    live = live_server.runtime.agent.live_run(conv_id)
    assert live is not None and not live.finished.is_set()

    watched.reload()
    # The reloaded page streams the same run: its text grows on the page to the last line.
    watched.wait_chat("chat.includes(arg)", LONG_LAST_LINE)
    _wait_idle(live_server, conv_id)
    assert live.status == "completed"
    assert [run.status for run in _runs(live_server, conv_id)] == ["completed"]
    watched.close(f"reload-{size}")


@pytest.mark.parametrize("how", ["button", "esc"])
def test_stop_hands_queued_messages_back_to_the_input_box(
        browser, live_server: LiveServer, how: str) -> None:  # type: ignore[no-untyped-def]
    watched = Watched(browser, live_server, VIEWPORTS["desktop"])
    assert not watched.page.locator("#stop-btn").is_visible()  # nothing runs yet
    watched.send(LONG)
    watched.wait_chat("chat.includes('Superset')")
    watched.send(SHORT)
    watched.wait_chat("chat.includes('Queued:')")
    conv_id = _newest_conversation(live_server)

    if how == "button":
        watched.page.locator("#stop-btn").click()
    else:  # Esc stops too, wherever the focus is
        watched.page.locator("#stop-btn").wait_for(state="visible")
        watched.page.keyboard.press("Escape")
    watched.page.wait_for_function(
        "(text) => document.querySelector('#agent-input textarea').value === text",
        arg=SHORT, timeout=30_000)
    watched.wait_chat("chat.includes('Stopped') && !chat.includes('Queued:')")
    watched.page.locator("#stop-btn").wait_for(state="hidden")
    _wait_idle(live_server, conv_id)
    assert [run.status for run in _runs(live_server, conv_id)] == ["cancelled"]
    assert _user_messages(live_server, conv_id) == [LONG]
    watched.close(f"stop-queued-{how}")


def _pick_role(page: Any, role: str) -> None:  # type: ignore[no-untyped-def]
    page.locator("#user-select input").click()
    page.get_by_role("option", name=role, exact=True).click()


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_a_conversation_survives_new_conversation_and_user_switches(
        browser, live_server: LiveServer, size: str) -> None:  # type: ignore[no-untyped-def]
    watched = Watched(browser, live_server, VIEWPORTS[size])
    page = watched.page
    watched.send(SHORT)
    watched.wait_chat("chat.includes('ss-dev') && chat.includes('prod')")
    conv_id = _newest_conversation(live_server)
    _wait_idle(live_server, conv_id)

    page.locator("#new-chat").click()
    watched.wait_chat("!chat.includes(arg)", SHORT)
    page.locator("#conversations").get_by_text("Conversations").first.click()
    listed = page.locator("#conv-list")
    listed.get_by_text(SHORT).wait_for(timeout=30_000)  # kept, not thrown away

    _pick_role(page, "editor")  # another identity: its own (empty) list
    page.wait_for_function(
        "(text) => !(document.querySelector('#conv-list')?.innerText || '').includes(text)",
        arg=SHORT, timeout=30_000)
    _pick_role(page, "viewer")  # back: the viewer's conversation is listed again
    listed.get_by_text(SHORT).wait_for(timeout=30_000)

    listed.get_by_text(SHORT).click()  # reopen it from the list
    watched.wait_chat("chat.includes(arg) && chat.includes('prod')", SHORT)
    watched.send(SHORT_TOO)  # and it goes on
    watched.wait_chat("chat.includes(arg)", SHORT_TOO)
    _wait_idle(live_server, conv_id)
    assert _user_messages(live_server, conv_id) == [SHORT, SHORT_TOO]

    page.locator("#conv-delete").click()  # asks first, saying side questions go too
    page.locator("#conv-delete-warning").get_by_text("side questions").wait_for()
    page.locator("#conv-delete-yes").click()
    watched.wait_chat("!chat.includes(arg)", SHORT_TOO)
    page.wait_for_function(
        "(text) => !(document.querySelector('#conv-list')?.innerText || '').includes(text)",
        arg=SHORT, timeout=30_000)
    with live_server.runtime.db.session() as session:
        assert session.get(Conversation, conv_id) is None
    watched.close(f"conversations-{size}")


def test_opening_another_conversation_stops_showing_a_live_run(
        browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    """A run followed after opening its conversation from the list goes on when another is
    opened, but only in its own conversation: its follower was wired before the list's
    other events, so Gradio's cancels never reached it and its stream wrote over the chat."""
    watched = Watched(browser, live_server, VIEWPORTS["desktop"])
    page = watched.page
    watched.send(SHORT)
    watched.wait_chat("chat.includes('ss-dev') && chat.includes('prod')")
    _wait_idle(live_server, _newest_conversation(live_server))
    page.locator("#new-chat").click()
    watched.wait_chat("!chat.includes('prod')")
    watched.send(LONG)
    watched.wait_chat("chat.includes(arg)", LONG)
    running = _newest_conversation(live_server)
    page.locator("#new-chat").click()
    watched.wait_chat("!chat.includes(arg)", LONG)
    page.locator("#conversations").get_by_text("Conversations").first.click()
    listed = page.locator("#conv-list")
    listed.get_by_text(LONG).click()  # follows the live run
    watched.wait_chat("chat.includes(arg)", LONG)
    listed.get_by_text(SHORT).click()
    watched.wait_chat("chat.includes('prod') && !chat.includes(arg)", LONG)
    page.evaluate("""(text) => {  // from now on, note any write of the other conversation
        window.__otherShown = false;
        const chat = document.querySelector('#agent-chat');
        new MutationObserver(() => { if (chat.innerText.includes(text))
            window.__otherShown = true; }).observe(chat, {subtree: true, childList: true,
                                                      characterData: true});
    }""", LONG)
    _wait_idle(live_server, running)  # its answer streams for seconds meanwhile
    assert page.evaluate("() => window.__otherShown") is False
    assert _runs(live_server, running)[-1].status == "completed"
    watched.close("open-another")


def _in_viewport(page: Any, selector: str) -> bool:  # type: ignore[no-untyped-def]
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"] \
        and box["x"] >= 0 and box["x"] + box["width"] <= size["width"]


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_the_approval_card_is_in_view_plain_and_deny_shows_on_the_step(
        browser, live_server: LiveServer, size: str) -> None:  # type: ignore[no-untyped-def]
    watched = Watched(browser, live_server, VIEWPORTS[size])
    page = watched.page
    _pick_role(page, "editor")
    page.wait_for_function(  # the editor's identity has arrived (it sends as the editor)
        "() => !document.querySelector('#agent-input textarea').disabled")
    store = live_server.runtime.demo_superset.store
    before = store.get("ss-dev", "dashboard", 3)["dashboard_title"]
    watched.send("rename dashboard 3 to 'Revenue 2026'")

    card = page.locator("#confirm-card")
    card.get_by_text("Revenue 2026").first.wait_for(timeout=60_000)
    page.locator("#deny-btn").wait_for(state="visible")
    page.wait_for_function("() => { const b = document.querySelector('#deny-btn');"
                           " const r = b && b.getBoundingClientRect();"
                           " return r && r.top >= 0 && r.bottom <= window.innerHeight; }",
                           timeout=10_000)  # scrolled into view by the page
    assert _in_viewport(page, "#deny-btn") and _in_viewport(page, "#confirm-btn")
    text = card.inner_text()
    assert before in text and "Revenue 2026" in text and "→" in text  # before → after
    assert "Expires in" in text and "Tool risk" not in text and "UTC" not in text

    page.locator("#deny-btn").click()
    watched.wait_chat("chat.includes('denied') && !chat.includes('awaiting approval')")
    assert store.get("ss-dev", "dashboard", 3)["dashboard_title"] == before
    watched.close(f"approval-{size}")


def test_a_listing_is_a_table_and_next_page_goes_on_with_the_total(
        browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    """Issue 11, item 5: "list the dashboards" answers with a Markdown table (rendered as a
    <table>) and the total; "next page" shows the rows after it, same page size."""
    total = len(live_server.runtime.demo_superset.store.all("ss-dev", "dashboard"))
    assert total > 10, "the demo needs more than one chat page of dashboards"
    watched = Watched(browser, live_server, VIEWPORTS["desktop"])
    rows = ("() => { const tables = document.querySelectorAll('#agent-chat table');"
            " return tables.length ? tables[tables.length - 1].querySelectorAll('tbody tr')"
            ".length : 0; }")
    watched.send("list the dashboards")
    watched.wait_chat("chat.includes(arg)", f"Showing 1–10 of {total}.")
    assert watched.page.evaluate(rows) == 10
    watched.send("next page")
    watched.wait_chat("chat.includes(arg)", f"Showing 11–{min(20, total)} of {total}.")
    assert watched.page.evaluate(rows) == min(20, total) - 10
    watched.close("listing-pages")


def test_an_export_downloads_a_zip_the_demo_superset_imports(
        browser, live_server: LiveServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Issue 11, item 7: the bundle `export_dashboard` read is offered as a file; the file
    is a real Superset bundle (the demo Superset's own import accepts it)."""
    from superset_demo.bundle import import_bundle

    watched = Watched(browser, live_server, VIEWPORTS["desktop"])
    page = watched.page
    watched.send("export dashboard 3")
    offered = page.locator("#export-file")
    offered.wait_for(state="visible", timeout=60_000)
    link = offered.locator("a[download='dashboard-3-ss-dev.zip']")
    link.wait_for(timeout=30_000)
    with page.expect_download() as download:
        link.click()
    saved = tmp_path / "bundle.zip"
    download.value.save_as(saved)
    assert saved.read_bytes()[:2] == b"PK", saved.read_bytes()[:200]

    store = live_server.runtime.demo_superset.store
    title = store.get("ss-dev", "dashboard", 3)["dashboard_title"]
    before = {d["id"] for d in store.all("staging", "dashboard")}
    import_bundle(store, "staging", saved.read_bytes(), overwrite=True)
    imported = [d for d in store.all("staging", "dashboard") if d["id"] not in before
                or d["dashboard_title"] == title]
    assert any(d["dashboard_title"] == title for d in imported)
    watched.close("export")
