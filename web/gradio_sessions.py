"""Gradio's per-tab session state, bounded and without its deep-link copy of the page.

Gradio keeps a `SessionState` for every session (a page load, a `gradio_client`), up to
10 000 of them, and each began with a copy of every component's config (~190 KB for this
page, measured) and then kept the last value of every output it sent (the whole chat, its
events), all only to serve "deep links" (`gr.DeepLinkButton`), which this app does not use.
Across 1 000 new visitors that was most of the process's growth (issue 16, item 7).

`LeanStateHolder` keeps Gradio's per-session state that does matter (components a handler
updated, e.g. the conversation list's choices, which Gradio checks a pick against) and
drops the deep-link copy; `UI_SESSION_CAPACITY` bounds how many sessions are kept (Gradio's
own least-recently-used limit, `state_session_capacity`). A tab whose session was dropped
gets a fresh one from the page's defaults on its next event.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from gradio.state_holder import SessionState, StateHolder

__all__ = ["LeanSessionState", "LeanStateHolder", "install"]


class LeanSessionState(SessionState):
    """A `SessionState` whose `config_values` (the deep-link copy) stays empty."""

    def __init__(self, blocks: Any) -> None:
        super().__init__(blocks)
        self.config_values = {}

    def __setitem__(self, key: int, value: Any) -> None:
        super().__setitem__(key, value)
        self.config_values.pop(key, None)

    def _update_config(self, key: int) -> None:
        """Deep links only."""

    def _update_value_in_config(self, key: int, value: Any) -> None:
        """Deep links only: the output's value is not kept per session."""


class LeanStateHolder(StateHolder):
    """Gradio's session table, making `LeanSessionState`s."""

    def __getitem__(self, session_id: str) -> SessionState:
        if session_id not in self.session_data:
            self.session_data[session_id] = LeanSessionState(self.blocks)
        return super().__getitem__(session_id)


def install(gradio_app: FastAPI, blocks: Any, capacity: int) -> LeanStateHolder:
    """Replace the mounted Gradio app's session table (before it serves anything)."""
    blocks.state_session_capacity = capacity
    holder = LeanStateHolder()
    holder.set_blocks(blocks)  # also points `blocks.state_holder` at it, and reads capacity
    gradio_app.state_holder = holder  # type: ignore[attr-defined]
    return holder
