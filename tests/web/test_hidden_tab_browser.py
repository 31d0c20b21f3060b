"""A run that streams while its tab is in the background shows whole and in order when the
tab returns, with no console error (Playwright on Debian's Chromium).

Why: Gradio's client hands each stream message to its handler through `setTimeout(0)` while
the page is visible and calls it at once while hidden, and each message is a diff on top of
the one before. A message queued just before the tab went to the background (whose timer
the browser then throttles, or freezes on a phone) ran after the ones that came while it
was hidden: garbled text, or "Cannot read properties of undefined (reading 'content')", an
"Error" in place of the chat and a dead stream. The fix is web/page_head.py (every message
handled at once; the same error on a reload had another order behind it:
tests/web/test_stream_close_browser.py).

Headless Chromium never hides a page, so the script below does what the browser does to a
background tab: `visibilityState` and `hidden` say so, `visibilitychange` fires, and timers
due meanwhile wait until the tab is shown again. It hides the tab right after the page
queues the first message of the run's stream, the moment that lost the order. It also
copies what arrives on Gradio's event stream (a tee of the response, which Gradio reads
unchanged), so the test knows when later updates reached the hidden page without waiting a
fixed time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.web.conftest import LiveServer, sqlite_server
from tests.web.journey_support import VIEWPORTS, Watched, until

pytestmark = pytest.mark.browser

LONG = "what can you do?"  # a few hundred words: streams for seconds at 25 ms a word
LONG_LAST_LINE = "explicit approval"  # ends the answer to LONG

BACKGROUND_TAB = """
(() => {
  let hidden = false;
  const held = [];
  const cleared = new Set();
  Object.defineProperty(Document.prototype, 'visibilityState',
                        {configurable: true, get() { return hidden ? 'hidden' : 'visible'; }});
  Object.defineProperty(Document.prototype, 'hidden',
                        {configurable: true, get() { return hidden; }});
  const realSetTimeout = window.setTimeout.bind(window);
  const realClearTimeout = window.clearTimeout.bind(window);
  window.setTimeout = (fn, ms, ...args) => {
    if (typeof fn !== 'function') return realSetTimeout(fn, ms, ...args);
    const id = realSetTimeout(() => {
      if (hidden) held.push(() => cleared.has(id) || fn(...args));
      else fn(...args);
    }, ms);
    if (window.__hideAfterNextTimer && !ms) {
      window.__hideAfterNextTimer = false;
      hidden = true;
      document.dispatchEvent(new Event('visibilitychange'));
    }
    return id;
  };
  window.clearTimeout = (id) => { cleared.add(id); realClearTimeout(id); };
  window.__showTab = () => {
    hidden = false;
    document.dispatchEvent(new Event('visibilitychange'));
    held.splice(0).forEach((run) => run());
  };
  window.__isHidden = () => hidden;
  // Hide right after the page queues the first message of the run's stream (the whole chat;
  // every later message is a diff against it and the ones before).
  const realParse = JSON.parse;
  JSON.parse = function (text, reviver) {
    const value = realParse.call(this, text, reviver);
    const chat = value && value.msg === 'process_generating' && value.output
      && Array.isArray(value.output.data) ? value.output.data[0] : null;
    if (window.__hideAtStreamStart && Array.isArray(chat) && chat.length
        && chat[0] && typeof chat[0] === 'object' && 'role' in chat[0]) {
      window.__hideAtStreamStart = false;
      window.__hideAfterNextTimer = true;
    }
    return value;
  };
  window.__sse = '';
  window.__count = (message) => window.__sse.split(message).length - 1;
  const realFetch = window.fetch.bind(window);
  window.fetch = async (...args) => {
    const response = await realFetch(...args);
    const url = String(args[0] && args[0].url ? args[0].url : args[0]);
    if (!url.includes('/queue/data') || !response.body) return response;
    const [copy, gradios] = response.body.tee();
    (async () => {
      const reader = copy.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const {value, done} = await reader.read();
        if (done) return;
        window.__sse += decoder.decode(value, {stream: true});
      }
    })();
    return new Response(gradios, {status: response.status, statusText: response.statusText,
                                  headers: response.headers});
  };
})();
"""


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from sqlite_server(tmp_path_factory, offline_token_delay_ms=25)


def _seen(page: Any) -> tuple[int, int]:
    """How many stream updates and completed events reached the page so far."""
    return page.evaluate("[window.__count('process_generating'),"
                         " window.__count('process_completed')]")


def test_a_run_streamed_into_a_background_tab_shows_whole_when_the_tab_returns(
        browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    watched = Watched(browser, live_server, VIEWPORTS["desktop"], init_script=BACKGROUND_TAB)
    page = watched.page
    page.evaluate("window.__hideAtStreamStart = true")
    watched.send(LONG)
    until(page, "window.__isHidden()", "the tab went to the background mid-stream")
    # Later updates of the run reach the hidden tab (the browser still reads the network).
    generated, completed = _seen(page)
    until(page, f"window.__count('process_generating') >= {generated + 5}"
                f" || window.__count('process_completed') > {completed}",
          "the run's next updates reached the hidden tab (a client that threw on an update"
          " out of order closes its stream)")
    page.evaluate("window.__showTab()")

    watched.wait_chat("chat.includes(arg)", LONG_LAST_LINE)
    page.locator("#stop-btn").wait_for(state="hidden")
    text = page.locator("#agent-chat").inner_text()
    assert text.index("show_capabilities") < text.index("Here (role viewer") < text.index(
        LONG_LAST_LINE)
    watched.close("background-tab")  # and no console error on the way
