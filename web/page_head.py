"""What the agent page puts in its <head>, before Gradio's client reads a stream message.

Gradio's client (6.x, `open_stream` in the bundled client) hands each message of its event
stream to the event's handler through `setTimeout(0)` while `document.visibilityState` is
not "hidden", and calls it at once while it is. Every streamed update is a diff on the one
before it, applied to state the event keeps, so a message must never run after one that
came later, nor after that state is gone. The deferred path broke both:

- Mixed with the direct path: a message queued just before the tab went to the background
  (its timer then throttled, or frozen on a phone) ran after the messages that came while
  it was hidden: garbled text, or "Cannot read properties of undefined (reading
  'content')", "Error" in place of the chat and a dead stream
  (tests/web/test_hidden_tab_browser.py).
- Against the stream's error handler, which runs at once: when the stream closes (a reload:
  Gradio closes its client in `beforeunload`; a lost connection) it tells each event "broken
  connection" and drops its diff state; the updates still waiting in their timers then ran
  against no state and threw the same error, once per update. That was CI's reload journey
  after a first fix that pinned "visible" (tests/web/test_stream_close_browser.py).

The fix: the document says "hidden" to whoever reads `visibilityState`, so every message is
handled the moment the client parses it, in arrival order, and none is left waiting when
the stream closes. Updates that arrive together are handled in one task and the page paints
once after them (Svelte batches them); Gradio deferred them to let the browser paint between
updates, which a stream coalesced at 50 ms (agent/coalesce.py) does not need.
`document.hidden` and the `visibilitychange` event still tell the truth, and the page's own
code reads those (web/signin_ui.py). What this costs, read in Gradio's bundle (the only
other readers of `visibilityState`): its check every 20 s for a changed app version never
runs, and a `gr.Timer` would never tick; the page has none (tests/web/test_page_head.py
keeps it so).
"""

from __future__ import annotations

__all__ = ["PAGE_HEAD"]

PAGE_HEAD = """<script>
Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'hidden'});
</script>"""
