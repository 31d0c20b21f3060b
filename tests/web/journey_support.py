"""Shared by the Chromium journeys: a page that records what went wrong in it, and the
layout checks every journey ends with (issue 11)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.web.conftest import LiveServer
from tests.web.side_support import ask_main

__all__ = ["ARTIFACTS", "VIEWPORTS", "Watched", "until"]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
VIEWPORTS = {"desktop": {"width": 1280, "height": 720}, "phone": {"width": 390, "height": 844}}


class Watched:
    """A page plus what went wrong in it: console errors and 4xx/5xx responses."""

    def __init__(self, browser: Any, server: LiveServer, viewport: dict[str, int],
                 query: str = "", init_script: str = "") -> None:
        self.context = browser.new_context(viewport=viewport)
        if init_script:  # runs in every document of the page before its own scripts
            self.context.add_init_script(init_script)
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(
            f"console: {m.text}"))
        self.page.on("response", lambda r: r.status >= 400 and self.problems.append(
            f"{r.status} {r.url}"))
        self.page.goto(f"{server.agent_url}{query}")
        self.ready()

    def reload(self) -> None:
        """Reload mid-stream. The document being torn down logs its own aborted stream
        (Gradio's client: "AbortError", "Connection errored out"); that is the old page
        going away, not a fault, so only those two, logged during the reload, are dropped."""
        before = len(self.problems)
        self.page.reload()
        self.ready()
        self.problems[before:] = [p for p in self.problems[before:] if not (
            "AbortError" in p or "Connection errored out" in p)]

    def ready(self) -> None:
        """The input is enabled once the page's identity has arrived, and the page's own
        click handlers are in (its load events install them; "Show earlier messages" is a
        plain link until then, and a click that lands first does nothing: CI saw a reloaded
        long conversation ignore it under load)."""
        self.page.wait_for_selector("#agent-input textarea:not([disabled])", timeout=60_000)
        self.page.wait_for_function("() => window.__agentEarlier === true", timeout=60_000)

    def send(self, text: str) -> None:
        """Type and press Enter until the page takes it (right after a user switch it
        refuses a send until the new identity is there)."""
        ask_main(self.page, text, tries=10)

    def wait_chat(self, js_condition: str, arg: Any = None, timeout: int = 90_000) -> None:
        """Wait until the chat's text meets `js_condition`; on a timeout the failure says
        what the chat, the pill and the conversation list showed, with a screenshot."""
        try:
            self.page.wait_for_function(
                f"(arg) => {{ const chat = document.querySelector('#agent-chat')?.innerText"
                f" || ''; return {js_condition}; }}", arg=arg, timeout=timeout)
        except Exception as exc:
            raise AssertionError(f"chat never met {js_condition!r} (arg {arg!r}):\n"
                                 f"{self._state()}") from exc

    def _state(self) -> str:
        shown = self.page.evaluate(
            "() => ['#agent-chat', '#context-pill', '#conv-list'].map(s => s + ': ' + "
            "(document.querySelector(s)?.innerText || '').slice(-1500)).join('\\n')")
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / f"wait-chat-timeout-{id(self)}.png"
        self.page.screenshot(path=str(shot), full_page=True)
        return f"{shown}\nscreenshot: {shot}"

    def close(self, name: str) -> None:
        """Layout checks at this size, a screenshot, and no problem seen on the way."""
        pill = self.page.locator("#context-pill").bounding_box()
        assert pill is not None and pill["width"] >= 120, pill
        assert self.page.evaluate(  # nothing needs a horizontal scroll
            "() => document.documentElement.scrollWidth <= window.innerWidth + 1")
        for control in ("#agent-input textarea", "#send-btn"):
            box = self.page.locator(control).bounding_box()
            assert box is not None and box["x"] >= 0 and (
                box["x"] + box["width"] <= self.page.viewport_size["width"] + 1), control
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        self.context.close()
        assert self.problems == [], self.problems


def until(page: Any, js: str, what: str, timeout_s: float = 120) -> Any:
    """Poll the page from here until `js` is truthy, and return it: a page whose own timers
    are held (a "hidden" tab, held zero-delay timers) would hold Playwright's in-page waits."""
    deadline = time.monotonic() + timeout_s
    while not (value := page.evaluate(js)):
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)
    return value
