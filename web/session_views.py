"""Which conversation each browser tab shows, kept on the server per Gradio session.

A stream that follows a conversation (the chat following a run, the side panel following an
answer) asks before each update whether its tab still shows that conversation, and stops
when it does not, instead of writing the old conversation over the new one. Gradio's own
`cancels` cannot do this alone: on a chained (`.then`) event Gradio 6 registers the cancel
without `trigger_after`, so it never fires, and a cancel list is fixed when an event is
wired, so an event wired earlier cannot cancel a follower wired later.

It also keeps how far back the tab's chat reaches when the person asked for earlier
messages ("Show earlier messages"), so a stream renders the same stretch of the
conversation the tab shows; switching to another conversation forgets it.

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
        # session_hash -> (conversation id, the first message shown when extended, or None
        # for the default window of the newest messages)
        self._showing: dict[str, tuple[str, int | None]] = {}

    def show(self, request: Any, conv_id: Any, from_seq: int | None = None) -> None:
        """The tab of `request` shows `conv_id` from now on (`from_seq`: reaching back to
        that message). Showing the same conversation again keeps how far back it reaches
        (every send says which conversation it is for)."""
        key = getattr(request, "session_hash", None)
        if not key:
            return
        conv_id = conv_id.strip() if isinstance(conv_id, str) else ""
        before = self._showing.pop(key, None)  # re-inserted: least recent first
        if from_seq is None and before is not None and before[0] == conv_id:
            from_seq = before[1]
        self._showing[key] = (conv_id, from_seq)
        while len(self._showing) > MAX_TRACKED_SESSIONS:
            self._showing.pop(next(iter(self._showing)))

    def switch(self, request: Any, conv_id: Any) -> None:
        """The tab opened `conv_id` afresh (load, open, new, sign-in): its default window."""
        key = getattr(request, "session_hash", None)
        if key:
            self._showing.pop(key, None)
        self.show(request, conv_id)

    def shown_from(self, request: Any, conv_id: str) -> int | None:
        """The first message the tab's chat shows of `conv_id` when the person extended
        it, else None (the newest messages; also for a caller with no session)."""
        key = getattr(request, "session_hash", None)
        shown = self._showing.get(key) if key else None
        return shown[1] if shown is not None and shown[0] == conv_id else None

    def shown(self, request: Any) -> str | None:
        """The conversation the tab shows now; None when unknown (no session)."""
        key = getattr(request, "session_hash", None)
        shown = self._showing.get(key) if key else None
        return shown[0] if shown is not None else None

    def still_showing(self, request: Any, conv_id: str) -> bool:
        """True unless the tab is known to show another conversation now (a caller with
        no session, such as a program, always follows its own)."""
        key = getattr(request, "session_hash", None)
        shown = self._showing.get(key) if key else None
        return shown is None or shown[0] == conv_id
