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
gets a fresh one from the page's defaults on its next event. Making a session no longer
builds that copy either (it was 35 ms on the event loop per new tab or API session).

`install` also stops Gradio's search for a missing matplotlib on every streamed update
(`skip_missing_matplotlib`).
"""

from __future__ import annotations

import datetime
import importlib.util
import sys
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from gradio.components import State
from gradio.state_holder import SessionState, StateHolder

__all__ = ["LeanSessionState", "LeanStateHolder", "install"]


class LeanSessionState(SessionState):
    """A `SessionState` whose `config_values` (the deep-link copy) stays empty.

    Gradio builds that copy (`config_for_block` for every component: 149 here, 35 ms on
    this machine, measured) when the session is made, on the event loop, before the first
    event of a new tab or `gradio_client` runs, and again for a component a handler
    updates. Building it only to empty it stalled every other stream on the process, so it
    is never built: Gradio's own `__init__` runs on a view of the page with no components
    to copy (everything else it sets up is kept), and `__setitem__` skips the copy.
    """

    def __init__(self, blocks: Any) -> None:
        super().__init__(_NoDeepLinks(blocks.default_config))  # type: ignore[arg-type]

    def __setitem__(self, key: int, value: Any) -> None:
        block = self.blocks_config.blocks.get(key)
        if isinstance(block, State):  # Gradio's own bookkeeping, without the config copy
            self._state_ttl[key] = (block.time_to_live, datetime.datetime.now())
            self.state_data[key] = value
        else:
            self.blocks_config.blocks[key] = value

    def _update_config(self, key: int) -> None:
        """Deep links only."""

    def _update_value_in_config(self, key: int, value: Any) -> None:
        """Deep links only: the output's value is not kept per session."""


@dataclass(frozen=True)
class _NoDeepLinks:
    """What `SessionState.__init__` reads of the page: its default config (copied for the
    session) and its components, of which none need a deep-link copy."""

    default_config: Any
    blocks: dict[int, Any] = field(default_factory=dict)


class LeanStateHolder(StateHolder):
    """Gradio's session table, making `LeanSessionState`s."""

    def __getitem__(self, session_id: str) -> SessionState:
        if session_id not in self.session_data:
            self.session_data[session_id] = LeanSessionState(self.blocks)
        return super().__getitem__(session_id)


def skip_missing_matplotlib() -> bool:
    """Make `import matplotlib` fail at once when it is not installed (True if so).

    Gradio switches matplotlib's backend around every call of a function, and a streaming
    handler's every update is such a call: `import matplotlib` twice per update, each a
    fresh search of every import path when it is not installed (about 9 % of the event
    loop's time with ten streams, measured with py-spy). `None` in `sys.modules` is
    Python's own "this module is not there" (the import raises ImportError, as a missing
    module does); a process where matplotlib is installed is left alone.
    """
    if "matplotlib" in sys.modules:
        return sys.modules["matplotlib"] is None
    if importlib.util.find_spec("matplotlib") is not None:
        return False
    sys.modules["matplotlib"] = None  # type: ignore[assignment]
    return True


def install(gradio_app: FastAPI, blocks: Any, capacity: int) -> LeanStateHolder:
    """Replace the mounted Gradio app's session table (before it serves anything), and
    drop Gradio's per-update import of a missing matplotlib."""
    skip_missing_matplotlib()
    blocks.state_session_capacity = capacity
    holder = LeanStateHolder()
    holder.set_blocks(blocks)  # also points `blocks.state_holder` at it, and reads capacity
    gradio_app.state_holder = holder  # type: ignore[attr-defined]
    return holder
