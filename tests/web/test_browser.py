"""Real-browser journeys (Playwright on Debian's Chromium) against a real app server."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.web.conftest import LiveServer
from tests.web.side_support import ask_main

pytestmark = pytest.mark.browser

def _open(browser, url: str, width: int = 1280, height: int = 720):  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": width, "height": height})
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(url)
    page.wait_for_selector("#agent-input textarea", timeout=60_000)
    return page, dialogs


def test_chat_journey_with_escaped_context(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    evil = "<img src=x onerror=alert(1)>"
    # The pill shows Superset's name for the page's object (checked after load), so the
    # hostile text is that name: dashboard #42, a copy of #3 titled with it.
    store = live_server.runtime.demo_superset.store
    store.put("ss-dev", "dashboard", {**store.get("ss-dev", "dashboard", 3), "id": 42,
                                      "uuid": "0b1e6f7a-4242-4242-8242-424242424242",
                                      "dashboard_title": evil})
    url = (f"{live_server.agent_url}?objectType=dashboard&objectId=42"
           f"&objectName={quote(evil)}&envId=ss-dev&route=/dashboards/42")
    page, dialogs = _open(browser, url)
    pill = page.locator("#context-pill")
    pill.get_by_text("Dashboard #42").wait_for(timeout=30_000)
    assert evil in pill.inner_text()
    assert pill.locator("img").count() == 0

    page.locator("#agent-input textarea").fill("what can you do?")
    page.locator("#agent-input textarea").press("Enter")
    chat = page.locator("#agent-chat")
    chat.get_by_text("show_capabilities").first.wait_for(timeout=60_000)
    page.wait_for_function(
        # "explicit approval" ends the real answer; plain "approval" is also in the
        # empty chat's placeholder, so it would match before any answer arrived.
        "() => document.querySelector('#agent-chat').innerText.includes('explicit approval')",
        timeout=60_000)
    assert page.locator("#agent-input textarea").input_value() == ""
    assert not dialogs
    page.close()


def test_prod_environment_shows_the_banner_at_once(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    page, _ = _open(browser, live_server.agent_url)
    banner = page.locator("#prod-banner")
    assert not banner.is_visible()
    page.locator("#env-select input").click()
    page.get_by_role("option", name="prod", exact=True).click()
    banner.get_by_text("PRODUCTION").wait_for(timeout=10_000)
    assert "prod-tier" in (page.locator("#agent-shell").get_attribute("class") or "")
    page.close()


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)])
def test_layout_is_usable(browser, live_server: LiveServer, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    page, _ = _open(browser, live_server.agent_url, *size)
    for selector in ("#agent-input textarea", "#send-btn", "#env-select"):
        box = page.locator(selector).bounding_box()
        assert box is not None and box["width"] > 0
        assert box["x"] >= 0 and box["x"] + box["width"] <= size[0] + 1
    assert not page.locator("#stop-btn").is_visible()  # shown only while something runs
    page.close()


def _as_user(page, role: str) -> None:  # type: ignore[no-untyped-def]
    page.locator("#user-select input").click()
    page.get_by_role("option", name=role, exact=True).click()


def test_refresh_restores_the_conversation(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    page, _ = _open(browser, live_server.agent_url)
    _as_user(page, "editor")
    ask_main(page, "which environments are there?")  # once the switch has landed
    chat = page.locator("#agent-chat")
    chat.get_by_text("list_environments").first.wait_for(timeout=60_000)
    page.wait_for_function(
        "() => document.querySelector('#agent-chat').innerText.includes('staging')",
        timeout=60_000)
    page.reload()
    page.wait_for_selector("#agent-input textarea", timeout=60_000)
    chat.get_by_text("which environments are there?").wait_for(timeout=30_000)
    assert page.locator("#user-select input").input_value() == "editor"
    page.close()


def test_demo_faults_panel_is_for_admins_only(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    page, _ = _open(browser, live_server.agent_url)
    faults = page.locator("#faults-accordion")
    assert not faults.is_visible()
    _as_user(page, "admin")
    faults.wait_for(state="visible", timeout=30_000)
    faults.get_by_text("Demo faults (admin)").click()
    page.locator("#fault-apply").click()
    page.wait_for_function(
        "() => document.querySelector('#fault-state').innerText.includes('502')",
        timeout=30_000)
    demo = live_server.runtime.demo_superset
    assert demo.get_faults()["ss-dev"]["status"] == 502
    page.locator("#fault-clear").click()
    page.wait_for_function(
        "() => document.querySelector('#fault-state').innerText.includes('No faults')",
        timeout=30_000)
    assert demo.get_faults() == {}
    _as_user(page, "viewer")
    faults.wait_for(state="hidden", timeout=30_000)
    page.close()


def test_the_run_events_panel_ends_with_every_event(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    """The follower's events reach the page as appends (`web/wire_updates.py`); the page's
    "Run events" panel, which the approval card and the export read back, ends holding the
    whole run, first event to last."""
    page, _ = _open(browser, live_server.agent_url)
    page.locator("#agent-input textarea").fill("what can you do?")
    page.locator("#agent-input textarea").press("Enter")
    page.wait_for_function(
        "() => document.querySelector('#agent-chat').innerText.includes('explicit approval')",
        timeout=60_000)
    page.locator("#events-accordion").get_by_text("Run events").click()
    events = page.locator("#run-events")
    page.wait_for_function(
        "() => document.querySelector('#run-events').innerText.includes('completed')",
        timeout=30_000)
    text = events.inner_text()
    for kind in ("run_started", "tool_call", "show_capabilities", "tool_result", "done"):
        assert kind in text, kind
    assert text.index("run_started") < text.index("tool_result") < text.index("done")
    page.close()
