"""What follows an answer in the chat: its links to Superset and the run's footnote
(duration, tokens, cost), live from the run's events and again from the stored answer."""

from __future__ import annotations

from typing import Any

from web.text_policy import md_escape

__all__ = ["footnote", "links_line", "run_footnote"]


def links_line(links: Any) -> str:
    """`🔗 Open in Superset: [Sales](…) · [Revenue](…)` under an answer: the server's links
    to the objects it names (agent/object_links.py); titles are Superset text, escaped."""
    if not isinstance(links, list):
        return ""
    shown = [f"[{md_escape(link['title'])}]({link['url']})" for link in links
             if isinstance(link, dict) and isinstance(link.get("title"), str)
             and isinstance(link.get("url"), str)]
    return "\n\n🔗 Open in Superset: " + " · ".join(shown) if shown else ""


def run_footnote(done: dict[str, Any], started_ts: Any) -> str:
    """The footnote of a run that just ended (its `done` event and its start). The time its
    stored answer keeps when `done` carries it: the page reads the same after a reload
    (the event's own time is a few ms to 0.1 s later, on another clock)."""
    duration = done.get("duration_s")
    if not isinstance(duration, int | float):
        ended = done.get("ts")
        duration = ended - started_ts if isinstance(started_ts, int | float) and isinstance(
            ended, int | float) and ended >= started_ts else None
    return footnote(duration, done.get("usage"))


def footnote(duration_s: Any, usage: Any) -> str:
    """`*2.4 s · 1 234 tokens (1 100 in, 134 out) · $0.0012*` under a finished run, as
    smolagents shows per step; the cost only when litellm prices the model. Live from the
    `done` event, after a reload from the answer's stored meta (agent/loop.py)."""
    parts = []
    if isinstance(duration_s, int | float) and duration_s >= 0:
        parts.append(f"{duration_s:.1f} s")
    usage = usage if isinstance(usage, dict) else {}
    if usage.get("total_tokens"):
        def count(n: Any) -> str:  # 1 234: grouped by a space, neither a comma nor a dot
            return f"{int(n or 0):,}".replace(",", " ")

        parts.append(f"{count(usage['total_tokens'])} tokens "
                     f"({count(usage.get('prompt_tokens'))} in, "
                     f"{count(usage.get('completion_tokens'))} out)")
    if isinstance(usage.get("cost_usd"), int | float):
        parts.append(f"${usage['cost_usd']:.4f}")
    return f"*{' · '.join(parts)}*" if parts else ""
