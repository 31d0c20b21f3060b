"""The page's head script and what it costs (web/page_head.py): it makes Gradio's client
handle each stream message at once by saying the document is hidden, so nothing on the page
may need `visibilityState` to be "visible". In Gradio's bundle that is `gr.Timer` (it ticks
only while visible): a timer added to the page would never fire, and this test says why."""

from __future__ import annotations

import gradio as gr

from web.page_head import PAGE_HEAD
from web.ui import build_blocks


def test_the_head_script_says_hidden() -> None:
    assert "'visibilityState'" in PAGE_HEAD and "'hidden'" in PAGE_HEAD


def test_the_page_has_no_timer(runtime) -> None:  # type: ignore[no-untyped-def]
    blocks = build_blocks(runtime)
    timers = [block for block in blocks.blocks.values() if isinstance(block, gr.Timer)]
    assert timers == [], "gr.Timer never ticks under web/page_head.py's script"
