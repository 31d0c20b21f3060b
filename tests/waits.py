"""Bounds of the waits tests make for things that announce themselves: generous on purpose.

A test waits for an event, a state or an answer, never for a fixed time; these only bound
how long it waits before it calls the thing lost. On a loaded 2-core machine a first
`import litellm` takes 30 s to minutes and `python app.py` (gradio and litellm) several
minutes, so a tight bound there measures the load, not the app.
"""

from __future__ import annotations

__all__ = ["EVENT_WAIT_S", "PROCESS_START_S"]

EVENT_WAIT_S = 120.0  # a held model reply reached, a run's first event, a child's line
PROCESS_START_S = 300.0  # `python app.py` (or a helper process) answering its first request
