"""Real-browser journeys of the approval card (Playwright on Debian's Chromium): a dangerous
call's Confirm stays disabled for 10 s with a visible countdown; Deny works at once."""

from __future__ import annotations

import pytest

from tests.web.conftest import LiveServer

pytestmark = pytest.mark.browser

# Page-side timestamps: when the card appeared and when Confirm became enabled, both from
# one clock in the page, so the measure does not depend on how fast the test polls.
WATCH_JS = """
() => {
  window.__cardAt = null; window.__enabledAt = null;
  const check = () => {
    const card = document.querySelector('#confirm-card [data-confirmation]');
    const button = document.querySelector('#confirm-btn');
    if (card && window.__cardAt === null) window.__cardAt = performance.now();
    if (card && button && !button.disabled && window.__enabledAt === null
        && window.__cardAt !== null) window.__enabledAt = performance.now();
  };
  new MutationObserver(check).observe(document.body,
    {subtree: true, childList: true, attributes: true, attributeFilter: ['disabled']});
}
"""


def _admin_page(browser, live_server: LiveServer, pk: int):  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{live_server.agent_url}?objectType=dashboard&objectId={pk}&envId=prod")
    page.wait_for_selector("#agent-input textarea", timeout=60_000)
    assert not page.locator("#audit-accordion").is_visible()
    page.locator("#user-select input").click()
    page.get_by_role("option", name="admin", exact=True).click()
    page.locator("#audit-accordion").wait_for(state="visible", timeout=30_000)
    page.evaluate(WATCH_JS)
    page.locator("#agent-input textarea").fill(f"delete dashboard {pk}")
    page.locator("#agent-input textarea").press("Enter")
    card = page.locator("#confirm-card")
    card.get_by_text(f"Delete dashboard #{pk}").wait_for(timeout=60_000)
    return page, card


def test_dangerous_confirm_unlocks_after_the_countdown(browser, live_server: LiveServer  # type: ignore[no-untyped-def]
                                                       ) -> None:
    page, card = _admin_page(browser, live_server, 2)
    confirm, deny = page.locator("#confirm-btn"), page.locator("#deny-btn")
    assert confirm.is_disabled() and deny.is_enabled()
    card.get_by_text("Confirm unlocks in").wait_for(timeout=5_000)
    assert "prod" in card.inner_text() and "Dangerous change" in card.inner_text()

    page.wait_for_function("() => window.__enabledAt !== null", timeout=40_000)
    waited_ms = page.evaluate("() => window.__enabledAt - window.__cardAt")
    assert waited_ms >= 9_900, waited_ms
    card.get_by_text("You can confirm now.").wait_for(timeout=5_000)

    confirm.click()
    page.wait_for_function(
        "() => document.querySelector('#agent-chat').innerText.includes('deleted')",
        timeout=60_000)
    assert not page.locator("#confirm-card").is_visible()
    assert live_server.runtime.demo_superset.store.get("prod", "dashboard", 2) is None
    page.locator("#audit-accordion").get_by_text("Audit log").first.click()
    page.locator("#audit-log").get_by_text("executed").first.wait_for(timeout=30_000)
    page.close()


def test_deny_works_at_once(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    page, _ = _admin_page(browser, live_server, 1)
    assert page.locator("#confirm-btn").is_disabled()

    page.locator("#deny-btn").click()

    page.wait_for_function(
        "() => document.querySelector('#agent-chat').innerText.includes('declined')",
        timeout=60_000)
    assert not page.locator("#confirm-card").is_visible()
    assert page.evaluate("() => window.__enabledAt") is None
    assert live_server.runtime.demo_superset.store.get("prod", "dashboard", 1)
    page.close()


def test_a_reload_brings_the_approval_card_back(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    page, card = _admin_page(browser, live_server, 4)
    page.reload()
    page.wait_for_selector("#agent-input textarea", timeout=60_000)
    card = page.locator("#confirm-card")
    card.get_by_text("Delete dashboard #4").wait_for(timeout=60_000)
    assert page.locator("#agent-chat").get_by_text("awaiting approval").first.is_visible()
    assert page.locator("#confirm-btn").is_disabled()  # the countdown starts again
    page.locator("#deny-btn").click()
    page.wait_for_function(
        "() => document.querySelector('#agent-chat').innerText.includes('declined')",
        timeout=60_000)
    assert live_server.runtime.demo_superset.store.get("prod", "dashboard", 4)
    page.close()
