"""A page whose event stream closes while updates wait to be handled throws nothing
(Playwright on Debian's Chromium): the CI failure of the reload journey.

Why: Gradio's client (6.x, `open_stream`) hands each stream message to its handler through
`setTimeout(0)` while `document.visibilityState` is not "hidden", but runs the stream's
error handler at once. On a reload, Gradio closes its client in `beforeunload`; the aborted
stream's handler tells every event "broken connection", and that drops the event's diff
state. The updates still waiting in their timers then ran against no state: the first was
taken as a whole value (it was a diff), each later one threw "Cannot read properties of
undefined (reading 'content')" (six such errors in CI's reload journey, on the document
being unloaded). A lost connection does the same. The fix is web/page_head.py: the client
hands every message over at once, in arrival order, so none waits behind the error handler.

The script below holds zero-delay timers (as a busy or unloading page does) from the moment
the test says so, counts the stream updates Gradio parses, and records console errors, so
every wait is on a state of the page, never a fixed time.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.web.conftest import LiveServer, sqlite_server
from tests.web.journey_support import VIEWPORTS, Watched, until

pytestmark = pytest.mark.browser

LONG = "what can you do?"  # a few hundred words: streams for seconds at 25 ms a word

HELD_TIMERS = """
(() => {
  const held = [];
  window.__hold = false;
  window.__parsed = 0;  // stream updates Gradio's client parsed
  window.__errors = [];
  const realSetTimeout = window.setTimeout.bind(window);
  window.setTimeout = (fn, ms, ...args) => {
    if (window.__hold && !ms && typeof fn === 'function') {
      held.push(() => fn(...args));
      return 0;
    }
    return realSetTimeout(fn, ms, ...args);
  };
  window.__release = () => { window.__hold = false; held.splice(0).forEach((run) => run()); };
  const realParse = JSON.parse;
  JSON.parse = function (text, reviver) {
    const value = realParse.call(this, text, reviver);
    if (value && value.msg === 'process_generating') window.__parsed += 1;
    return value;
  };
  const realError = console.error.bind(console);
  console.error = (...args) => {
    window.__errors.push(args.map(String).join(' '));
    realError(...args);
  };
})();
"""


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from sqlite_server(tmp_path_factory, offline_token_delay_ms=25)


def test_updates_waiting_when_the_stream_closes_throw_nothing(
        browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    watched = Watched(browser, live_server, VIEWPORTS["desktop"], init_script=HELD_TIMERS)
    page = watched.page
    watched.send(LONG)
    watched.wait_chat("chat.includes('Superset')")  # the run's stream is under way
    parsed = page.evaluate("window.__hold = true; window.__parsed")
    until(page, f"window.__parsed >= {parsed + 3}", "three more updates reached the page")
    # What Gradio does on a reload (its `beforeunload` handler closes the client): the
    # stream is aborted and its error handler tells every event the connection broke.
    page.evaluate("window.dispatchEvent(new Event('beforeunload'))")
    until(page, "window.__errors.some((e) => e.includes('Connection errored out'))",
          "the closed stream's events were told the connection broke")
    thrown = page.evaluate(
        "window.__release(); window.__errors.filter((e) => e.includes('client exception'))")
    assert thrown == []
    watched.context.close()
