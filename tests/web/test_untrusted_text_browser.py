"""Untrusted text stays inert in Chromium (issue 10, item 1; web/text_policy.py).

The same hostile payloads arrive by every way text reaches the page: a Superset dashboard
title (shown in a tool result, quoted in the answer and in the approval card), a model
answer, the user's own message, a side question and its answer, and the page's
`objectName` (the context pill). A loopback "pixel" server counts every request; the page
must make none to it, open no dialog and hold no live element from the payloads, while a
link to the configured Superset base URL stays live and a Markdown table renders as one.

The model is a scripted OpenAI-compatible server (what a real model could be tricked into
writing); everything else is the real app on SQLite (rendering does not depend on the
database backend).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent.settings import DEMO_ENVIRONMENTS, EnvironmentConfig
from tests.fakes.loopback import LoopbackServer
from tests.fakes.openai_server import ScriptedCall, ScriptedOpenAIServer
from tests.fakes.runs import SENTINEL_KEY
from tests.web.conftest import LiveServer, sqlite_server
from tests.web.side_support import ask_main, ask_side

pytestmark = pytest.mark.browser

SUPERSET = "http://superset.example.test/"  # the configured base URL: links there are live
SUPERSET_LINK = f"{SUPERSET}superset/dashboard/3/"
SURFACES = ("#agent-chat", "#side-chat", "#context-pill", "#confirm-card")

# Every element the payloads could create, and every attribute that would make one act.
LIVE_ELEMENTS_JS = """([selectors, superset]) => {
    const found = [];
    for (const sel of selectors) {
        const root = document.querySelector(sel);
        if (!root) continue;
        for (const el of root.querySelectorAll('img, iframe, object, embed, script, svg image'))
            if (el.closest('.message, .message-wrap, .prose, .md, p, td, li'))
                found.push(sel + ' ' + el.outerHTML.slice(0, 120));
        for (const el of root.querySelectorAll('[onerror], [onload], [onclick]'))
            found.push(sel + ' ' + el.outerHTML.slice(0, 120));
        for (const a of root.querySelectorAll('a[href]')) {
            const href = a.getAttribute('href');
            if (!href.startsWith(superset) && !a.closest('button'))
                found.push(sel + ' link ' + href);
        }
    }
    return found;
}"""


class PixelServer(LoopbackServer):
    """Counts every request, whatever its path: a hit means the page fetched a payload."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self._lock = threading.Lock()

        async def count(request: Request) -> Response:
            with self._lock:
                self.hits.append(str(request.url))
            return Response(b"GIF89a", media_type="image/gif")

        super().__init__(Starlette(routes=[Route("/{path:path}", count)]), name="pixel")


def payloads(pixel: str) -> str:
    """One line holding each attack the issue names."""
    return (f"![x]({pixel}/pixel) <img src=x onerror=alert(1)> "
            f"<img src={pixel}/raw-img> [js](javascript:alert(1)) <a href=//evil>evil</a> "
            f"[elsewhere]({pixel}/link)")


@pytest.fixture(scope="module")
def pixel() -> Iterator[PixelServer]:
    with PixelServer() as server:
        yield server


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def live_server(model: ScriptedOpenAIServer, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[LiveServer]:
    linked = EnvironmentConfig(name="linked", base_url=SUPERSET, tier="dev")
    yield from sqlite_server(
        tmp_path_factory, auth_mode="demo", agent_model="openai/scripted",
        agent_api_base=model.base_url, agent_api_key=SENTINEL_KEY,
        superset_environments=[*(env.model_copy() for env in DEMO_ENVIRONMENTS), linked])


def _wait_text(page, selector: str, text: str, timeout: int = 60_000) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function(
        "([sel, text]) => (document.querySelector(sel)?.innerText || '').includes(text)",
        arg=[selector, text], timeout=timeout)


def test_hostile_text_is_inert_everywhere_and_superset_links_stay_live(  # type: ignore[no-untyped-def]
        browser, live_server: LiveServer, pixel: PixelServer,
        model: ScriptedOpenAIServer) -> None:
    evil = payloads(pixel.url)
    demo = live_server.runtime.demo_superset.store
    dashboard = demo.get("ss-dev", "dashboard", 3)
    demo.put("ss-dev", "dashboard", {**dashboard, "dashboard_title": f"Sales {evil}"})

    # The model reads the dashboard, answers with the payloads, a table and a Superset link,
    # then proposes a rename whose approval card quotes the hostile title.
    model.reply_tool_calls(ScriptedCall("get_dashboard", json.dumps(
        {"dashboard_id": 3, "env_id": "ss-dev"})))
    model.reply_text(f"Here it is: {evil}\n\n| metric | value |\n|---|---|\n| rows | 42 |\n\n"
                     f"[Open it in Superset]({SUPERSET_LINK}) — answer end.", deltas=4)
    model.reply_tool_calls(ScriptedCall("update_dashboard", json.dumps(
        {"dashboard_id": 3, "env_id": "ss-dev", "title": f"Renamed {evil}"})))

    url = (f"{live_server.agent_url}?objectType=dashboard&objectId=3"
           f"&objectName={quote(evil)}&envId=ss-dev")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(url)
    page.wait_for_selector("#agent-input textarea", timeout=60_000)
    page.locator("#user-select input").click()
    page.get_by_role("option", name="editor", exact=True).click()
    _wait_text(page, "#context-pill", "onerror=alert(1)")

    ask_main(page, f"show it {evil}")  # once the switch to editor has landed
    _wait_text(page, "#agent-chat", "answer end.")
    ask_main(page, "now rename it")
    page.locator("#confirm-card").get_by_text("Approval needed").wait_for(timeout=60_000)

    model.reply_text(f"Side answer: {evil} side end.")
    page.locator("#side-open").click()
    ask_side(page, f"what about {evil}?")
    _wait_text(page, "#side-chat", "side end.")

    live = page.evaluate(LIVE_ELEMENTS_JS, [list(SURFACES), SUPERSET])
    assert live == []
    assert page.locator(f'#agent-chat a[href="{SUPERSET_LINK}"]').count() == 1
    assert page.locator("#agent-chat table td", has_text="42").count() == 1
    for surface in ("#agent-chat", "#side-chat", "#context-pill"):  # shown, as text
        assert "onerror=alert(1)" in page.locator(surface).inner_text(), surface
    assert "image not loaded" in page.locator("#agent-chat").inner_text()
    # Whatever rendered last has been in the DOM before this: a fetch would have been made.
    page.reload()
    page.wait_for_selector("#agent-input textarea", timeout=60_000)
    _wait_text(page, "#agent-chat", "answer end.")  # the history, rendered again
    assert page.evaluate(LIVE_ELEMENTS_JS, [list(SURFACES), SUPERSET]) == []
    assert pixel.hits == [] and dialogs == []
    page.close()
