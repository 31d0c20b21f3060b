"""Real-browser side questions with slow tokens (Playwright on Debian's Chromium): a `/btw`
answer streams in the panel while a main run is still streaming, and a refresh in the
middle of a side answer neither cancels it nor loses it (SPEC §9).

A module of its own: the token delay that keeps answers streaming for seconds would slow
the other browser tests down.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from sqlmodel import select

from agent.identity.demo import visitor_of
from storage.models import Conversation
from tests.web.conftest import LiveServer
from tests.web.side_support import (
    LONG_SIDE,
    MAIN_QUESTION,
    SHORT_SIDE,
    ask_main,
    ask_side,
    auth,
    offline_model,
    set_token_delay,
)

pytestmark = pytest.mark.browser

# "what can you do?" answers with a few hundred words, so at 60 ms a word the main run
# streams for many seconds, while the one-line side answer needs about one.
SERVER_SETTINGS = {"offline_token_delay_ms": 60}
SHORT_MAIN = "which environments are there?"  # a one-line main answer: a quick first turn
MAIN_LAST_LINE = "explicit approval"  # ends the answer to MAIN_QUESTION

# The side answer is complete when it has text and neither the cursor nor "… thinking".
SIDE_DONE_JS = """(text) => {
    const chat = document.querySelector('#side-chat')?.innerText || '';
    return chat.includes(text) && !chat.includes('▌') && !chat.includes('thinking');
}"""


@pytest.fixture(autouse=True)
def _module_pace() -> Iterator[None]:
    """Whatever a test left held, the next one starts at the module's pace."""
    yield
    if offline_model() is not None:
        _release_side_answer()


def _wait_text(page, selector: str, text: str, timeout: int = 90_000) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function(
        "([sel, text]) => (document.querySelector(sel)?.innerText || '').includes(text)",
        arg=[selector, text], timeout=timeout)


def _wait_run_done(server: LiveServer, conv_id: str) -> None:
    live = server.runtime.agent.live_run(conv_id)
    deadline = time.monotonic() + 60
    while live is not None and not live.finished.is_set():
        assert time.monotonic() < deadline, "the main run never finished"
        time.sleep(0.1)


def _conversation_id(server: LiveServer) -> str:
    """The page's conversation: the newest one of a visiting demo viewer (each test here
    starts one; the page keeps its ids only in encrypted browser storage)."""
    with server.runtime.db.session() as session:
        newest = session.exec(select(Conversation).where(
            Conversation.owner_id.startswith("demo-viewer-"))  # type: ignore[attr-defined]
            .order_by(Conversation.created_at.desc()).limit(1)).first()  # type: ignore[attr-defined]
    assert newest is not None, "the page's first turn stored no conversation"
    return newest.id


def _owner_token(server: LiveServer, conv_id: str) -> str:
    """A token for whoever owns the conversation (the page's own visitor identity)."""
    with server.runtime.db.session() as session:
        owner = session.get(Conversation, conv_id).owner_id  # type: ignore[union-attr]
    return server.runtime.issuer.mint_demo("viewer", visitor_of(owner))[1]


def _open_page(browser, server: LiveServer):  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(server.agent_url)
    page.locator("#agent-input textarea").wait_for(timeout=60_000)
    return page, dialogs


def _newest_side_question(server: LiveServer, conv_id: str) -> dict:
    """The conversation's newest side question, read over REST as the page's demo viewer."""
    token = _owner_token(server, conv_id)
    response = httpx.get(f"{server.url}/api/conversations/{conv_id}/side-questions",
                         headers=auth(token), timeout=10)
    response.raise_for_status()
    return response.json()["items"][0]


def test_btw_answers_while_the_main_run_streams(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    page, dialogs = _open_page(browser, live_server)
    ask_main(page, SHORT_MAIN)  # a first, quick turn: the conversation has a snapshot
    _wait_text(page, "#agent-chat", "You are working in")
    _wait_run_done(live_server, _conversation_id(live_server))

    ask_main(page, MAIN_QUESTION)  # a long answer that streams for many seconds
    _wait_text(page, "#agent-chat", "show_capabilities")
    _wait_text(page, "#agent-chat", "I can:")  # its answer has started streaming
    conv_id = _conversation_id(live_server)
    live = live_server.runtime.agent.live_run(conv_id)
    assert live is not None and not live.finished.is_set()

    ask_main(page, f"/btw {SHORT_SIDE}")
    page.wait_for_function(SIDE_DONE_JS, arg="show_capabilities", timeout=60_000)
    # the side answer is complete while the main answer is still streaming
    assert not live.finished.is_set(), "the main run ended before the side answer showed"
    assert MAIN_LAST_LINE not in page.locator("#agent-chat").inner_text()

    # the main run then completes untouched by the side question
    _wait_text(page, "#agent-chat", MAIN_LAST_LINE, timeout=120_000)
    main_text = page.locator("#agent-chat").inner_text()
    assert "/btw" not in main_text and SHORT_SIDE not in main_text
    _wait_run_done(live_server, conv_id)
    assert live.events[-1]["type"] == "done" and live.events[-1]["status"] == "completed"
    assert not dialogs
    page.close()


def _release_side_answer() -> None:
    """Back to the module's pace: the held side answer streams to its end."""
    set_token_delay(SERVER_SETTINGS["offline_token_delay_ms"] / 1000)


def _side_answer_streaming(browser, server: LiveServer):  # type: ignore[no-untyped-def]
    """A page whose conversation has a first turn and a side answer that has begun and is
    held mid-answer (a token every 5 s) until `_release_side_answer`: on a loaded machine
    the answer at the module's pace could end before the page showed its first words."""
    page, dialogs = _open_page(browser, server)
    ask_main(page, SHORT_MAIN)
    _wait_text(page, "#agent-chat", "You are working in")
    conv_id = _conversation_id(server)
    _wait_run_done(server, conv_id)
    set_token_delay(0.5)  # slow enough that its start is seen before its end
    page.locator("#side-open").click()
    ask_side(page, LONG_SIDE)
    _wait_text(page, "#side-chat", "The agent's last answer")  # streaming has begun
    set_token_delay(5.0)  # held: the rest waits for the test
    return page, dialogs, conv_id


def test_refresh_mid_answer_then_the_answer_completes_in_history(  # type: ignore[no-untyped-def]
        browser, live_server: LiveServer) -> None:
    page, dialogs, conv_id = _side_answer_streaming(browser, live_server)
    assert "▌" in page.locator("#side-chat").inner_text()
    assert _newest_side_question(live_server, conv_id)["status"] == "running"
    page.reload()  # mid-answer: the model request must go on

    page.locator("#agent-input textarea").wait_for(timeout=60_000)
    _release_side_answer()
    page.locator("#side-open").click()
    _wait_text(page, "#side-chat", LONG_SIDE)
    deadline = time.monotonic() + 90
    while (stored := _newest_side_question(live_server, conv_id))["status"] == "running":
        assert time.monotonic() < deadline, "the side answer never finished"
        time.sleep(0.2)
    assert stored["status"] == "completed", stored
    last_word = stored["answer"].split()[-1]
    page.wait_for_function(SIDE_DONE_JS, arg=last_word, timeout=60_000)
    assert not dialogs
    page.close()


def test_a_new_conversation_stops_showing_the_old_side_answer(  # type: ignore[no-untyped-def]
        browser, live_server: LiveServer) -> None:
    """The old conversation's side answer goes on, but not in the panel of the new one (the
    panel's stream on it stops; once a listener on the conversation id cancelled it)."""
    page, dialogs, conv_id = _side_answer_streaming(browser, live_server)
    page.locator("#new-chat").click()
    page.wait_for_function("(text) => !document.querySelector('#side-chat')"
                           "?.innerText.includes(text)", arg=LONG_SIDE, timeout=60_000)
    assert _newest_side_question(live_server, conv_id)["status"] == "running"
    page.evaluate("""(text) => {  // from now on, note any write of the old answer
        window.__oldSideShown = false;
        const chat = document.querySelector('#side-chat');
        new MutationObserver(() => { if (chat.innerText.includes(text))
            window.__oldSideShown = true; }).observe(chat, {subtree: true, childList: true,
                                                        characterData: true});
    }""", LONG_SIDE)
    _release_side_answer()
    deadline = time.monotonic() + 90
    while (stored := _newest_side_question(live_server, conv_id))["status"] == "running":
        assert time.monotonic() < deadline, "the side answer never finished"
        time.sleep(0.2)  # the old answer streams for seconds meanwhile
    assert stored["status"] == "completed", stored
    assert page.evaluate("() => window.__oldSideShown") is False
    assert not dialogs
    page.close()
