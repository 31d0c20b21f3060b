"""An answer still streaming, shaped so each update reaches the page as an append.

Gradio sends a streamed output as a diff on the one before: a text that begins with the
previous one goes as an `append` of the new part, any other change replaces the whole text.
The HTML of a growing answer is never a prefix of the next one, so every update carried the
whole answer again (324 kB of the 490 kB a page received for one long answer, measured on
its event stream; the chat's other messages do not change and cost nothing). Two causes:

- The closing tags at the end (`<p>Hello wor</p>`, then `<p>Hello world</p>`): `open_ended`
  drops them (`<p>Hello wor`). The browser's HTML parser closes whatever is open at the end
  of the text, so the page shows the same.
- A table row still streaming is rendered with its missing cells empty, so each word moves
  the cells after it: `growing_markdown` holds the row back until its line ends (the table
  grows a row at a time, without empty cells flickering).

Only for a page following a run (`web/page_runs.py`): the run's last update (its `done`)
carries the answer whole, closing tags and all, and that is what the chat keeps when the
stream ends. Programs on `/agent_handler` get whole HTML at every update, as documented.
"""

from __future__ import annotations

import re

__all__ = ["growing_markdown", "open_ended"]

_CLOSING_TAIL = re.compile(r"(?:</[a-z][a-z0-9]*>)+\Z")
_TABLE_ROW = re.compile(r" {0,3}\|")


def open_ended(html: str) -> str:
    """`html` without the closing tags at its very end."""
    return _CLOSING_TAIL.sub("", html)


def growing_markdown(text: str) -> str:
    """`text` without its last line while that line is an unfinished table row (a line
    that starts with `|` and has no newline yet). A paragraph line that happens to start
    with `|` waits for its newline too; the run's last update shows everything."""
    start = text.rfind("\n") + 1
    return text[:start] if _TABLE_ROW.match(text, start) else text
