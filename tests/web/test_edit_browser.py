"""Edit before approve in a real browser (issue 15; Playwright on Debian's Chromium): the
card's form holds the proposed arguments; a bad value is refused with the field's message
and the card stays; retargeting the rename at prod makes it dangerous, so the card comes
back with the countdown; confirming then renames the prod dashboard, not the dev one."""

from __future__ import annotations

import pytest

from tests.web.conftest import LiveServer

pytestmark = pytest.mark.browser

ENABLED_JS = "() => { const b = document.querySelector('#confirm-btn'); return b && !b.disabled; }"


def test_edit_retarget_at_prod_restarts_the_countdown(browser, live_server: LiveServer  # type: ignore[no-untyped-def]
                                                      ) -> None:
    store = live_server.runtime.demo_superset.store
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{live_server.agent_url}?objectType=dashboard&objectId=9&envId=ss-dev")
    page.wait_for_selector("#agent-input textarea", timeout=60_000)
    page.locator("#user-select input").click()
    page.get_by_role("option", name="admin", exact=True).click()
    page.locator("#audit-accordion").wait_for(state="visible", timeout=30_000)
    page.locator("#agent-input textarea").fill("rename dashboard 9 to 'Headcount'")
    page.locator("#agent-input textarea").press("Enter")
    card = page.locator("#confirm-card")
    card.get_by_text("Headcount").first.wait_for(timeout=60_000)
    assert page.locator("#confirm-btn").is_enabled()  # a dev rename: no countdown

    page.locator("#edit-btn").click()
    title = page.locator("#edit-field-2 textarea")
    title.wait_for(state="visible", timeout=10_000)
    assert title.input_value() == "Headcount"
    assert "title" in page.locator("#edit-field-2").inner_text()
    slug = page.locator("#edit-field-3 textarea")
    slug.fill("not a slug!")
    page.locator("#edit-submit-btn").click()
    page.locator("#edit-error").get_by_text("slug: String should match pattern").wait_for(
        timeout=30_000)
    assert page.locator("#confirm-card").is_visible()
    assert store.get("ss-dev", "dashboard", 9)["dashboard_title"] == "HR Headcount"

    slug.fill("")
    title.fill("People")
    page.locator("#edit-field-0 textarea").fill("prod")  # env_id: retarget at prod
    page.locator("#edit-submit-btn").click()
    card.get_by_text("Dangerous change — approval needed").wait_for(timeout=60_000)
    card.get_by_text("Confirm unlocks in").wait_for(timeout=10_000)
    assert page.locator("#confirm-btn").is_disabled() and "prod" in card.inner_text()
    assert store.get("prod", "dashboard", 9)["dashboard_title"] == "HR Headcount"
    page.wait_for_function(ENABLED_JS, timeout=40_000)
    page.locator("#confirm-btn").click()
    page.wait_for_function(
        "() => document.querySelector('#agent-chat').innerText.includes('update_dashboard · "
        "approved')", timeout=60_000)
    assert store.get("prod", "dashboard", 9)["dashboard_title"] == "People"
    assert store.get("ss-dev", "dashboard", 9)["dashboard_title"] == "HR Headcount"
    page.close()
