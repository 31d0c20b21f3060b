"""What the agent page puts in its <head>, before Gradio's client reads a stream message.

Gradio's client (6.x, `open_stream` in the bundled client) hands each message of its event
stream to the event's handler through `setTimeout(0)` while `document.visibilityState` is
not "hidden", and calls it at once while it is. Every streamed update is a diff on the one
before it, so the two paths must never mix: a message queued just before the tab went to
the background (its timer then throttled, or frozen on a phone) ran after the messages that
came while it was hidden. The chat then showed garbled text, or the client threw "Cannot
read properties of undefined (reading 'content')", marked the run "Error" and closed the
stream. CI met it on a reload (an unloading document is hidden); a person meets it by
switching tabs during a long answer (tests/web/test_hidden_tab_browser.py).

The fix: the document says it is visible, always, so every message takes the timer path in
arrival order; a hidden tab runs them when the browser lets its timers run, in order.
`document.hidden` and the `visibilitychange` event still tell the truth, and the page's own
code reads those (web/signin_ui.py). What this costs: code reading `visibilityState` sees
"visible" in a background tab; in Gradio's bundle that is only its check for a reloaded app
(a request every 20 s), which now runs in a background tab too.
"""

from __future__ import annotations

__all__ = ["PAGE_HEAD"]

PAGE_HEAD = """<script>
Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'visible'});
</script>"""
