"""Helpers for browser tests of the sign-in strip: open the page, fill the form, read what
the tab keeps (sessionStorage)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ANSWERED", "OnlyThisClick", "open_page", "sign_in", "stored_session"]

# The offline model's capability answer ends with "explicit approval" (plain "approval" is
# also in the empty chat's placeholder, so it would match before any answer arrived).
ANSWERED = ("() => document.querySelector('#agent-chat').innerText"
            ".includes('explicit approval')")


class OnlyThisClick:
    """While in use, the page's server calls other than those of one button's click are
    held back, so a test sees what that click's own update shows, as a person on a slow
    server would before the rest of the event chain arrives. Deterministic: no timing."""

    _EVENT_ID = """(elemId) => {
        const cfg = window.gradio_config;
        const comp = cfg.components.find(c => c.props && c.props.elem_id === elemId);
        return cfg.dependencies.filter(d => d.targets.some(t => t[0] === comp.id
            && t[1] === 'click')).map(d => d.id);
    }"""

    def __init__(self, page: Any, elem_id: str) -> None:
        self.page = page
        self.allowed = set(page.evaluate(self._EVENT_ID, elem_id))
        assert self.allowed, f"no click event on #{elem_id}"
        self.held: list[Any] = []

    def _gate(self, route: Any) -> None:
        body = route.request.post_data_json or {}
        if body.get("fn_index") in self.allowed:
            route.continue_()
        else:
            self.held.append(route)

    def __enter__(self) -> OnlyThisClick:
        self.page.route("**/gradio_api/run/**", self._gate)
        self.page.route("**/gradio_api/queue/join*", self._gate)
        return self

    def __exit__(self, *exc: object) -> None:
        for route in self.held:  # before unroute, which would let them go by itself
            route.continue_()
        self.held.clear()
        self.page.unroute("**/gradio_api/run/**")
        self.page.unroute("**/gradio_api/queue/join*")


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
