"""How far a plan got: which of its calls already ran (the exchanges after the person's
message), and the next calls, or why it stops.

Only structured fields of results move a plan on: the `id` of the single item a search
found, the comparison's `differs` flag, a result's status (error, declined). The text of a
result (a title, a description) is never read here, so it cannot cause a call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.offline.plan import Plan, Step
from agent.offline.refer import Listed, listed_items
from agent.offline.results import parse_result, unwrap
from agent.offline.transcript import ToolExchange

__all__ = ["Progress", "advance", "differs"]


@dataclass
class Progress:
    """`calls` to make next; else `stop` says why the plan ends early (None: it is done)."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    stop: str | None = None  # ask | no_match | same | unknown | failed | missing | off_plan
    step: Step | None = None  # the step the calls or the stop belong to
    candidates: list[Listed] = field(default_factory=list)  # for "ask": the matches
    failed: ToolExchange | None = None
    remaining: list[Step] = field(default_factory=list)  # steps not done when it stops


def differs(call: ToolExchange) -> bool | None:
    """The comparison's verdict from its structured fields; None when unreadable."""
    result = parse_result(call.result)
    data = unwrap(result.data) if result.status == "ok" else None
    if not isinstance(data, dict):
        return None
    flag = data.get("differs")
    if isinstance(flag, bool):
        return flag
    counts = data.get("counts")
    if isinstance(counts, dict) and all(isinstance(counts.get(k), int)
                                        for k in ("missing", "different")):
        return counts["missing"] + counts["different"] > 0
    return None


def _problem(call: ToolExchange) -> bool:
    return parse_result(call.result).status != "ok"


def advance(plan: Plan, done: list[ToolExchange], resolved: int | None = None) -> Progress:
    """The next calls of `plan` after the exchanges `done` (oldest first)."""
    position, compared = 0, None
    for index, step in enumerate(plan.steps):
        rest = plan.steps[index:]
        if step.intent.missing and not (step.intent.missing == "object" and resolved):
            return Progress(stop="missing", step=step, remaining=rest)
        if step.condition == "differs":
            verdict = differs(compared) if compared is not None else None
            if verdict is None:
                return Progress(stop="unknown", step=step, remaining=rest)
            if not verdict:
                return Progress(stop="same", step=step, remaining=rest)
        calls = step.calls(resolved)
        ran = done[position:position + len(calls)]
        if not ran:
            return Progress(calls=calls, step=step, remaining=rest)
        if [c.name for c in ran] != [name for name, _ in calls] or len(ran) < len(calls):
            return Progress(stop="off_plan", step=step, remaining=rest)
        position += len(calls)
        failed = next((c for c in ran if _problem(c)), None)
        if failed is not None:
            return Progress(stop="failed", step=step, failed=failed, remaining=rest[1:])
        if step.lookup:
            items = listed_items(ran[0]) or []
            if len(items) != 1:
                return Progress(stop="ask" if items else "no_match", step=step,
                                candidates=items, remaining=rest[1:])
            resolved = items[0].id
        if step.intent.tool == "compare_environments":
            compared = ran[-1]
    return Progress()
