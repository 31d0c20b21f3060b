"""Which conversation each browser tab shows, kept on the server per Gradio session.

A stream that follows a conversation (the chat following a run, the side panel following an
answer) asks before each update whether its tab still shows that conversation, and stops
when it does not, instead of writing the old conversation over the new one. Gradio's own
`cancels` cannot do this alone: on a chained (`.then`) event Gradio 6 registers the cancel
without `trigger_after`, so it never fires, and a cancel list is fixed when an event is
wired, so an event wired earlier cannot cancel a follower wired later.

Who sets it: every handler that switches the page's conversation, and every send, approval
and retry from the page (they carry the conversation the page shows, the freshest word:
two switch events in flight at once can reach the server in either order). Streams never
set it: one that starts late would claim the tab for a conversation it has left.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_TRACKED_SESSIONS", "SessionViews"]

MAX_TRACKED_SESSIONS = 10_000  # tabs remembered; the least recently switched go first


class SessionViews:
    def __init__(self) -> None:
        self._showing: dict[str, str] = {}  # session_hash -> conversation id

    def show(self, request: Any, conv_id: Any) -> None:
        """The tab of `request` shows `conv_id` from now on."""
        key = getattr(request, "session_hash", None)
        if not key:
            return
        self._showing.pop(key, None)  # re-inserted: the dict's order is least recent first
        self._showing[key] = conv_id.strip() if isinstance(conv_id, str) else ""
        while len(self._showing) > MAX_TRACKED_SESSIONS:
            self._showing.pop(next(iter(self._showing)))

    def still_showing(self, request: Any, conv_id: str) -> bool:
        """True unless the tab is known to show another conversation now (a caller with
        no session, such as a program, always follows its own)."""
        key = getattr(request, "session_hash", None)
        return not key or self._showing.get(key, conv_id) == conv_id
