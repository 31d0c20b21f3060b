"""Undo in a real browser (issue 15; Playwright on Debian's Chromium): after an approved delete
the chat offers "Undo this change"; clicking it shows the undo's own approval card (as
dangerous as the delete, with its countdown); confirming it brings the dashboard back with
its uuid."""

from __future__ import annotations

import pytest

from tests.web.conftest import LiveServer
from tests.web.test_confirm_browser import _admin_page

pytestmark = pytest.mark.browser

ENABLED_JS = "() => { const b = document.querySelector('#confirm-btn'); return b && !b.disabled; }"


def test_undo_a_delete_from_the_chat(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    store = live_server.runtime.demo_superset.store
    uuid = store.get("prod", "dashboard", 8)["uuid"]
    page, card = _admin_page(browser, live_server, 8)
    assert page.locator("#confirm-without-undo-btn").is_visible()
    page.wait_for_function(ENABLED_JS, timeout=40_000)
    page.locator("#confirm-btn").click()
    undo = page.locator("#undo-btn")
    undo.wait_for(state="visible", timeout=60_000)
    assert store.by_uuid("prod", "dashboard", uuid) is None
    assert "can be undone (change #" in page.locator("#agent-chat").inner_text()

    undo.click()
    card.get_by_text("Restore the deleted dashboard 'Inventory Health' in prod").wait_for(
        timeout=60_000)
    assert page.locator("#confirm-btn").is_disabled()  # as dangerous as the delete
    assert page.locator("#confirm-without-undo-btn").is_disabled()  # an undo keeps a copy too
    page.wait_for_function(ENABLED_JS, timeout=40_000)
    page.locator("#confirm-btn").click()
    page.wait_for_function(
        "() => document.querySelector('#agent-chat').innerText.includes('undo_change · approved')",
        timeout=60_000)
    back = store.by_uuid("prod", "dashboard", uuid)
    assert back is not None and back["dashboard_title"] == "Inventory Health"
    page.close()


def test_undo_from_the_audit_log(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    store = live_server.runtime.demo_superset.store
    uuid = store.get("prod", "dashboard", 10)["uuid"]
    page, card = _admin_page(browser, live_server, 10)
    page.wait_for_function(ENABLED_JS, timeout=40_000)
    page.locator("#confirm-btn").click()
    page.locator("#undo-btn").wait_for(state="visible", timeout=60_000)
    assert store.by_uuid("prod", "dashboard", uuid) is None

    page.locator("#audit-accordion").get_by_text("Audit log").first.click()
    page.locator("#audit-log").get_by_text("available").first.wait_for(timeout=30_000)
    change = page.locator("#undo-btn").inner_text().split("#")[-1].strip(" )")
    page.locator("#audit-undo-id input").fill(change)
    page.locator("#audit-undo-btn").click()
    card.get_by_text("Restore the deleted dashboard 'Logistics and Delivery' in prod").wait_for(
        timeout=60_000)
    page.locator("#deny-btn").click()
    page.locator("#confirm-card").wait_for(state="hidden", timeout=30_000)
    assert store.by_uuid("prod", "dashboard", uuid) is None  # denied: nothing restored
    page.close()
