"""Which conversation each tab shows (web/session_views.py): the switch handlers set it,
streams on another conversation stop; programs (no session) always follow their own."""

from __future__ import annotations

from types import SimpleNamespace

from web import session_views
from web.session_views import SessionViews


def _tab(key: str | None) -> SimpleNamespace:
    return SimpleNamespace(session_hash=key)


def test_a_switch_stops_streams_on_the_old_conversation_in_that_tab_only() -> None:
    views = SessionViews()
    assert views.still_showing(_tab("t1"), "a")  # nothing known yet: follow
    views.show(_tab("t1"), "a")
    views.show(_tab("t2"), "b")
    views.show(_tab("t1"), "c")
    assert not views.still_showing(_tab("t1"), "a")
    assert views.still_showing(_tab("t1"), "c") and views.still_showing(_tab("t2"), "b")
    assert views.still_showing(None, "a") and views.still_showing(_tab(None), "a")


def test_it_remembers_a_bounded_number_of_tabs_least_recent_first(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(session_views, "MAX_TRACKED_SESSIONS", 2)
    views = SessionViews()
    views.show(_tab("t1"), "a")
    views.show(_tab("t2"), "b")
    views.show(_tab("t1"), "a")  # t1 switched again: t2 is now the oldest
    views.show(_tab("t3"), "c")
    assert views.still_showing(_tab("t2"), "anything")  # forgotten: follows again
    assert not views.still_showing(_tab("t1"), "other")


def test_how_far_back_a_tab_reaches_survives_sends_and_ends_with_a_switch() -> None:
    """Issue 16, item 4: "Show earlier messages" extends the tab's chat; sends into the
    same conversation keep that reach (so streams render it), opening one resets it."""
    views = SessionViews()
    views.show(_tab("t1"), "a")
    assert views.shown_from(_tab("t1"), "a") is None  # the newest window
    views.show(_tab("t1"), "a", from_seq=501)
    views.show(_tab("t1"), "a")  # a send or an approval in the same conversation
    assert views.shown_from(_tab("t1"), "a") == 501
    assert views.shown_from(_tab("t1"), "b") is None and views.shown_from(None, "a") is None
    views.show(_tab("t1"), "b")  # another conversation: its newest window
    views.show(_tab("t1"), "a")
    assert views.shown_from(_tab("t1"), "a") is None
    views.show(_tab("t1"), "a", from_seq=7)
    views.switch(_tab("t1"), "a")  # opened afresh (load, the list): the newest again
    assert views.shown_from(_tab("t1"), "a") is None and views.still_showing(_tab("t1"), "a")
