"""Helpers for browser tests of the sign-in strip: open the page, fill the form, read what
the tab keeps (sessionStorage)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ANSWERED", "open_page", "sign_in", "stored_session"]

# The offline model's capability answer ends with "explicit approval" (plain "approval" is
# also in the empty chat's placeholder, so it would match before any answer arrived).
ANSWERED = ("() => document.querySelector('#agent-chat').innerText"
            ".includes('explicit approval')")


def open_page(browser: Any, url: str, *, ready: str = "#agent-input textarea") -> Any:
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(url)
    page.wait_for_selector(ready, timeout=60_000)
    return page


def sign_in(page: Any, username: str, password: str | None = None) -> None:
    """Fill the form and press Sign in (the password defaults to the username)."""
    page.locator("#signin-username input").fill(username)
    page.locator("#signin-password input").fill(username if password is None else password)
    page.locator("#signin-btn").click()


def stored_session(page: Any) -> dict[str, Any]:
    """What the tab keeps: `{"user_id", "user_jwt", "refresh_token"}`, or {} when none."""
    return json.loads(page.evaluate(
        "() => sessionStorage.getItem('superset-agent-auth')") or "{}")
