"""A long conversation in the real page (Playwright on Debian's Chromium; issue 16, item 4):
the chat shows the newest messages, its first row says how many earlier ones there are,
and "Show earlier messages" brings them in, a window at a time, until the first message.
Every wait is on the DOM, never a fixed time."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from sqlmodel import select

from agent.history_window import HISTORY_WINDOW_MESSAGES
from storage import conversations as repo
from storage.models import Conversation
from tests.web.conftest import LiveServer, sqlite_server
from tests.web.journey_support import VIEWPORTS, Watched
from web.layout import KEEP_PLACE_JS

pytestmark = pytest.mark.browser

TURNS = 60  # 120 messages after the first real turn (4 rows): windows of 50 from a question


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from sqlite_server(tmp_path_factory)


def _the_conversation(server: LiveServer) -> str:
    with server.runtime.db.session() as session:
        only = session.exec(select(Conversation)).all()
    assert len(only) == 1, only
    return only[0].id


def _seed(server: LiveServer, conv_id: str) -> None:
    """Questions q-001 … q-060 and their answers after the page's own first turn."""
    with server.runtime.db.session() as session:
        for number in range(1, TURNS + 1):
            repo.append_message(session=session, conversation_id=conv_id, role="user",
                                content=f"Question q-{number:03d}.")
            repo.append_message(session=session, conversation_id=conv_id,
                                role="assistant", content=f"Answer a-{number:03d}.")


def _wait_idle(server: LiveServer, conv_id: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while server.runtime.agent.runs.busy(conv_id):
        assert time.monotonic() < deadline, "the run never ended"
        time.sleep(0.1)


def test_a_long_conversation_shows_its_newest_messages_and_earlier_ones_on_request(
        browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    assert HISTORY_WINDOW_MESSAGES == 50, "the counts below are worked out for 50"
    watched = Watched(browser, live_server, VIEWPORTS["desktop"])
    watched.send("which environments are there?")
    watched.wait_chat("chat.includes('ss-dev') && chat.includes('staging')")
    conv_id = _the_conversation(live_server)
    _wait_idle(live_server, conv_id)
    _seed(live_server, conv_id)

    watched.reload()  # the page restores its conversation: the newest window of it
    watched.wait_chat("chat.includes('q-060.') && chat.includes('Show earlier messages')")
    chat = watched.page.locator("#agent-chat")
    text = chat.inner_text()
    # 50 rows back from the last (124) is an answer (75 is q-036): the window starts there
    assert "q-036." in text and "q-035." not in text and "q-001." not in text
    assert "74 earlier messages" in text  # the first turn's 4 rows and q-001 … a-035

    link = chat.locator('a[href="#show-earlier"]')
    link.click()
    watched.wait_chat("chat.includes('q-011.') && chat.includes('24 earlier messages')")
    assert "q-010." not in chat.inner_text() and "q-060." in chat.inner_text()
    # The reader's place is kept: what was the first question is still in view, not the
    # new top of the chat (nor its bottom).
    watched.page.wait_for_function("""() => {
      const chat = document.querySelector('#agent-chat').getBoundingClientRect();
      const kept = [...document.querySelectorAll('#agent-chat p')]
        .find((p) => p.innerText.trim() === 'Question q-036.');
      if (!kept) return false;
      const box = kept.getBoundingClientRect();
      return box.top >= chat.top && box.bottom <= chat.bottom;
    }""", timeout=30_000)

    # The page holds the reader's place for a moment after the older rows land: a click
    # then could have its target scrolled away from under the pointer (CI saw this click
    # miss once). A person's own input ends the hold at once (checked below).
    watched.page.wait_for_function("() => !window.__agentHoldingPlace", timeout=30_000)
    link.click()  # the rest fits one window: the beginning, and no more link
    watched.wait_chat("chat.includes('q-001.') && "
                      "chat.includes('which environments are there?') && "
                      "!chat.includes('Show earlier messages')")
    assert watched.page.locator('#agent-chat a[href="#show-earlier"]').count() == 0
    _a_readers_scroll_ends_the_hold(watched.page)

    # A new turn streams on top of the whole extended chat, not back to the newest window.
    watched.send("hello")
    watched.wait_chat("chat.includes('hello') && chat.includes('q-001.')")
    _wait_idle(live_server, conv_id)
    watched.wait_chat("chat.includes('q-001.') && chat.includes('which environments')")
    watched.close("long-conversation")


def _a_readers_scroll_ends_the_hold(page) -> None:  # type: ignore[no-untyped-def]
    """While the page holds the place (as right after older rows land), the reader scrolls
    up: the scroll stays theirs instead of being put back on every frame for a second.

    The wheel must land while the hold is on (a hold lasts a second; a loaded machine can
    be slower than that between two Playwright calls), so the page notes, as the wheel is
    dispatched, whether a hold was on, and the test tries again if not. It never waits for
    the hold itself: a state that lasts a second can pass between two polls. Playwright's
    wheel does not wait for the scroll, so the test waits for it; without the fix the hold
    puts the box back at the bottom, and it stays there."""
    at_bottom = ("() => { const box = window.__testBox;"
                 " return box.scrollHeight - box.clientHeight - box.scrollTop; }")
    page.locator("#agent-chat").hover()  # before the hold: its second is for the wheel
    for _ in range(5):
        page.evaluate("""(keepPlace) => {
          let box = document.querySelector('#agent-chat a, #agent-chat p');
          while (box && !(box.scrollHeight > box.clientHeight &&
                          /(auto|scroll)/.test(getComputedStyle(box).overflowY))) {
            box = box.parentElement;
          }
          box.scrollTop = box.scrollHeight;  // the bottom, where the hold keeps it
          window.__testBox = box;
          window.__testWheelInHold = null;
          window.addEventListener('wheel', () => {
            window.__testWheelInHold = window.__agentHoldingPlace;
          }, {capture: true, once: true});
          window.__agentKeepPlace = {box, fromBottom: box.clientHeight, height: -1};
          (0, eval)(`(${keepPlace})`)();
        }""", KEEP_PLACE_JS)
        page.mouse.wheel(0, -600)
        page.wait_for_function("() => !window.__agentHoldingPlace", timeout=30_000)
        if page.evaluate("() => window.__testWheelInHold"):
            break
    else:
        raise AssertionError("the wheel never landed while the hold was on")
    page.wait_for_function(f"() => ({at_bottom})() > 100", timeout=10_000)
