"""Decisions of the offline model: which offered tools to call next, or what to say.

Pure functions over OpenAI-format messages and tool schemas, so they are tested directly.
Three modes: a side question (answer from the transcript, never a tool); a new request
(plan it from the person's words and make its first calls, or explain why not); a step
that ends in tool results (answer them, then make the plan's next calls if it has more).
The plan comes from the person's message alone, rebuilt at each step; results move it on
only through structured fields (agent/offline/progress.py), so text inside a result can
never cause a call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agent.offline.answers import answer_results
from agent.offline.catalog import TOOLS
from agent.offline.intents import Request
from agent.offline.plan import Plan, Step, make_plan
from agent.offline.progress import Progress, advance
from agent.offline.refer import Listed
from agent.offline.replies import ask_missing, not_offered, preamble, stopped, unknown
from agent.offline.results import parse_result
from agent.offline.side import answer_side
from agent.offline.slots import ordinal
from agent.offline.transcript import (
    ToolExchange,
    context_of,
    is_side_mode,
    pending_exchange,
    tool_schemas,
    user_turns,
)

__all__ = ["PARSE_LIMIT", "Decision", "decide"]

PARSE_LIMIT = 4000  # characters of a request that are read; the rest is ignored

_EMPTY_PROMPT = ("Please type a question or a request, for example \"what can you do?\" or "
                 "\"list the dashboards\".")


@dataclass
class Decision:
    text: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, JSON arguments)


def _known_envs(ctx: dict[str, Any], history: list[ToolExchange]) -> list[str]:
    """Environment names the conversation knows: the page's, and any listed earlier."""
    names = [ctx["envId"]] if isinstance(ctx.get("envId"), str) else []
    for call in history:
        if call.name != "list_environments":
            continue
        data = parse_result(call.result).data
        for env in data.get("environments", []) if isinstance(data, dict) else []:
            if isinstance(env, dict) and isinstance(env.get("name"), str):
                names.append(env["name"])
    return names


def _choose(text: str, candidates: list[Listed]) -> int | None:
    """The candidate a reply picks: "the first one", "#5", "5", or words of one title."""
    index = ordinal(text)
    if index is not None and -len(candidates) <= index < len(candidates):
        return candidates[index].id
    numbers = [int(n) for n in re.findall(r"\b\d{1,10}\b", text)]
    picked = [c.id for c in candidates if c.id in numbers]
    if len(picked) == 1:
        return picked[0]
    words = " ".join(re.findall(r"\w+", text.lower()))
    named = [c.id for c in candidates if c.title and len(words) >= 3 and (
        " ".join(re.findall(r"\w+", c.title.lower())) in words)]
    return named[0] if len(named) == 1 else None


def _request(text: str, ctx: dict[str, Any], history: list[ToolExchange]) -> Request:
    return Request(text=text[:PARSE_LIMIT], context=ctx, history=history,
                   known_envs=_known_envs(ctx, history))


def _plan(messages: list[dict[str, Any]], ctx: dict[str, Any]) -> tuple[Plan, list[ToolExchange]]:
    """The plan of the newest request and the calls made since it. A reply to the question
    of the turn before ("the first one", "to staging") continues that turn's plan."""
    turns = user_turns(messages)
    if not turns:
        return Plan(), []
    earlier = [call for _, calls in turns[:-1] for call in calls]
    text, since = turns[-1]
    plan = make_plan(_request(text, ctx, earlier))
    if len(turns) < 2 or plan.steps:
        return plan, since
    before = [call for _, calls in turns[:-2] for call in calls]
    previous_text, previous_calls = turns[-2]
    previous = make_plan(_request(previous_text, ctx, before))
    progress = advance(previous, previous_calls)
    if progress.stop == "ask" and (chosen := _choose(text, progress.candidates)) is not None:
        steps = [Step(s.intent, condition=s.condition, ids=s.ids or [chosen])
                 for s in progress.remaining]
        return Plan(steps=steps, first=steps[0].intent if steps else plan.first), since
    if progress.stop == "missing" and plan.say is None and text.strip():
        missing = progress.step.intent.missing if progress.step else None
        answer = text.strip()
        if missing == "object" and answer.lstrip("#").isdigit():
            answer = f"#{answer.lstrip('#')}"
        elif missing not in ("object", "envs"):
            answer = f"to \"{answer.strip(chr(34))}\""
        combined = make_plan(_request(f"{previous_text} {answer}", ctx, before))
        if combined.steps:
            return combined, since
    return plan, since


def _offered_problem(plan: Plan, ctx: dict[str, Any], offered: dict[str, Any]) -> str | None:
    for index, step in enumerate(plan.steps):
        if step.intent.tool in offered:
            continue
        if step.lookup and index + 1 < len(plan.steps):  # a name this page cannot look up
            wanted = plan.steps[index + 1].intent
            kind = wanted.kind or "dashboard"
            if wanted.tool not in offered:
                return not_offered(wanted, ctx, offered)
            return (f"I can't look up a {kind} by name on this page (that needs "
                    f"list_{kind}s), so tell me its id, for example \"{kind} 3\". Nothing "
                    "was changed.")
        return not_offered(step.intent, ctx, offered)
    return None


def _calls(progress: Progress, offered: dict[str, Any]) -> Decision:
    """The next calls with only the arguments their schemas declare, said before a change."""
    made, texts = [], []
    for name, args in progress.calls:
        schema = offered.get(name) or {}
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) \
            else {}
        kept = {key: value for key, value in args.items() if key in properties}
        missing = [key for key in schema.get("required") or [] if key not in kept]
        if missing:
            return Decision(text=f"I need the {missing[0].replace('_', ' ')} to "
                            f"{name.replace('_', ' ')}. Please tell me.")
        fact = TOOLS.get(name)
        if fact and fact.risk != "read":
            texts.append(preamble(name, kept))
        made.append((name, json.dumps(kept, sort_keys=True)))
    return Decision(text=" ".join(texts), tool_calls=made)


def _next(plan: Plan, since: list[ToolExchange], ctx: dict[str, Any],
          offered: dict[str, Any]) -> Decision:
    progress = advance(plan, since)
    if progress.calls:
        if (problem := _offered_problem(Plan(steps=[progress.step] if progress.step else []),
                                        ctx, offered)) is not None:
            return Decision(text=problem)
        return _calls(progress, offered)
    return Decision(text=stopped(progress))


def _respond(messages: list[dict[str, Any]], offered: dict[str, Any]) -> Decision:
    ctx = context_of(messages)
    turns = user_turns(messages)
    raw = turns[-1][0] if turns else ""
    text = raw.strip()
    if not text:
        return Decision(text=_EMPTY_PROMPT)
    note = ""
    if len(text) > PARSE_LIMIT:
        note = (f"Your message is long ({len(text):,} characters); I read only the first "
                f"{PARSE_LIMIT:,}. ")
    plan, since = _plan(messages, ctx)
    if not plan.steps:
        if plan.first.tool is not None and plan.first.tool not in offered:
            return Decision(text=note + not_offered(plan.first, ctx, offered))
        if plan.first.missing:
            return Decision(text=note + ask_missing(plan.first))
        if plan.say is not None:
            return Decision(text=note + plan.say)
        if note:
            return Decision(text=note + "I couldn't find a request in it; please send a short "
                            "question, for example \"list the dashboards\".")
        return Decision(text=unknown(text, offered))
    problem = _offered_problem(plan, ctx, offered)
    if problem is not None:
        return Decision(text=note + problem)
    decision = _next(plan, since, ctx, offered)
    decision.text = note + decision.text
    return decision


def _after_results(messages: list[dict[str, Any]], latest: list[ToolExchange],
                   offered: dict[str, Any]) -> Decision:
    """Answer the newest results; then the plan's next calls, if the person asked for more."""
    ctx = context_of(messages)
    answer = answer_results(latest, ctx)
    plan, since = _plan(messages, ctx)
    if not plan.steps or not since:
        return Decision(text=answer)
    if plan.notes:
        answer = f"{answer}\n\n{plan.notes}"
    progress = advance(plan, since)
    if progress.calls:
        following = _next(plan, since, ctx, offered)
        return Decision(text=f"{answer}\n\n{following.text}".rstrip(),
                        tool_calls=following.tool_calls)
    if progress.stop in (None, "off_plan"):
        return Decision(text=answer)
    return Decision(text=f"{answer}\n\n{stopped(progress)}".rstrip())


def decide(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Decision:
    """The offline model's whole reply to one request."""
    if is_side_mode(messages):
        return Decision(text=answer_side(messages))
    offered = tool_schemas(tools)
    finished = pending_exchange(messages)
    if finished:
        return _after_results(messages, finished, offered)
    return _respond(messages, offered)
