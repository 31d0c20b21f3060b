"""Real-browser journey of the side-question panel (Playwright on Debian's Chromium): `/btw`
from the main input, a streamed answer, Stop, Clear, and history after a refresh."""

from __future__ import annotations

import pytest

from tests.web.conftest import LiveServer
from tests.web.side_support import LONG_SIDE, ask_side, set_token_delay

pytestmark = pytest.mark.browser

SERVER_SETTINGS = {"offline_token_delay_ms": 40}


def _text(page, selector: str) -> str:  # type: ignore[no-untyped-def]
    return page.locator(selector).inner_text()


def _wait_text(page, selector: str, text: str, timeout: int = 60_000) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function(
        "([sel, text]) => (document.querySelector(sel)?.innerText || '').includes(text)",
        arg=[selector, text], timeout=timeout)


def test_side_panel_journey(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(live_server.agent_url)
    main_input = page.locator("#agent-input textarea")
    main_input.wait_for(timeout=60_000)

    # before any agent turn there is no context to answer from
    main_input.fill("/btw anything yet?")
    main_input.press("Enter")
    page.get_by_text("Ask the agent something first").first.wait_for(timeout=30_000)

    main_input.fill("what can you do?")
    main_input.press("Enter")
    _wait_text(page, "#agent-chat", "explicit approval")  # the main answer's last line

    # /btw in the main input: the panel opens and answers; the main chat is untouched
    main_input.fill("/btw which tools did you use?")
    main_input.press("Enter")
    _wait_text(page, "#side-chat", "show_capabilities")
    # the answer is complete (no cursor) before the follow-up: one running per parent
    page.wait_for_function(
        "() => !(document.querySelector('#side-chat')?.innerText || '').includes('▌')",
        timeout=60_000)
    assert page.locator("#side-input textarea").is_visible()
    assert main_input.input_value() == ""
    main_text = _text(page, "#agent-chat")
    assert "/btw" not in main_text and "which tools did you use" not in main_text

    # a long answer streams; Stop ends only it. The answer is held mid-stream (a token every
    # 5 s) once it has begun: at the module's pace a loaded machine could finish it before
    # the click landed, and Stop would rightly have nothing left to stop.
    set_token_delay(0.5)
    try:
        ask_side(page, LONG_SIDE)
        _wait_text(page, "#side-chat", "The agent's last answer")  # partial answer streamed
        set_token_delay(5.0)
        assert "Stopped" not in _text(page, "#side-chat")
        page.locator("#side-stop").click()
        _wait_text(page, "#side-chat", "Stopped")
    finally:
        set_token_delay(SERVER_SETTINGS["offline_token_delay_ms"] / 1000)

    # history survives a refresh (the page restores the conversation)
    page.reload()
    page.locator("#agent-input textarea").wait_for(timeout=60_000)
    page.locator("#side-open").click()
    _wait_text(page, "#side-chat", "which tools did you use?")
    _wait_text(page, "#side-chat", "Stopped")

    # Clear empties the panel; the main chat stays
    page.locator("#side-clear").click()
    page.wait_for_function(
        "() => !(document.querySelector('#side-chat')?.innerText || '').includes('tools')",
        timeout=30_000)
    assert "show_capabilities" in _text(page, "#agent-chat")
    assert not dialogs
    page.close()


def test_side_panel_fits_a_phone(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(live_server.agent_url)
    page.locator("#agent-input textarea").wait_for(timeout=60_000)
    page.locator("#side-open").click()
    for selector in ("#side-input textarea", "#side-ask", "#side-stop", "#side-clear"):
        locator = page.locator(selector)
        locator.wait_for(timeout=10_000)
        box = locator.bounding_box()
        assert box is not None and box["width"] > 0
        assert box["x"] >= 0 and box["x"] + box["width"] <= 391
    page.close()
