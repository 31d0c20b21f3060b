"""Side-question answers (`/btw`): answered from the snapshot transcript only, never with tools.

The transcript is [system (with the main context block), *main messages, *earlier side
Q&A, question]; answers cite the tools the agent used, the page, and numbers from results.
"""

from __future__ import annotations

import re
from typing import Any

from agent.offline.answers import summarize
from agent.offline.results import clip, count_of, items_of, parse_result, title_of, unwrap
from agent.offline.transcript import ToolExchange, context_of, exchanges, text_of

__all__ = ["answer_side"]

_TOOL_Q = (r"which tools?|what tools?|tools? (?:did|have|do) you|what (?:did|have) you (?:just )?"
           r"(?:do|done|use|used|call|called|run|ran)|last (?:action|step|call)"
           r"|which (?:call|function)"
           r"|what (?:are|were) you doing|what is (?:it|the agent) doing")
_PAGE_Q = (r"looking at|which page|what page|where am i|this page|on screen|current (?:page|context"
           r"|object)|what am i (?:on|viewing|seeing)|which (?:dashboard|dataset|object) (?:is|am)"
           r"|what (?:is|'s) (?:open|this)")
_ENV_Q = r"\benv(?:ironment)?s?\b|\btier\b|\bprod(?:uction)?\b\?"
_ROLE_Q = r"\brole\b|am i (?:allowed|an? |admin|editor|viewer)|my permissions|can i\b"
_COUNT_Q = r"how many (\w+)|number of (\w+)|count of (\w+)|how (?:big|large|long)"
_ANSWER_Q = (r"what did you (?:say|answer|tell|find|conclude)|last answer|summar|recap"
             r"|what was the (?:answer|result)|what happened|what did it (?:say|return|find)")
_ASKED_Q = r"what did i (?:ask|say|request)|my (?:last )?(?:question|request)"
_NAME_Q = r"\b(?:name|title|called|id|uuid|slug)\b"


def _has(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.IGNORECASE) is not None


def _main_tail(messages: list[dict[str, Any]]) -> int:
    """Index just after the main conversation's last tool exchange (side Q&A follow it)."""
    last = 0
    for index, message in enumerate(messages):
        if message.get("role") == "tool" or message.get("tool_calls"):
            last = index + 1
    return last


def _main_answer(messages: list[dict[str, Any]]) -> str | None:
    start = _main_tail(messages)
    for message in messages[start:]:
        if message.get("role") == "assistant" and text_of(message).strip():
            return text_of(message).strip()
    return None


def _call_env(call: ToolExchange, ctx: dict[str, Any]) -> str | None:
    env = call.arguments.get("env_id")
    if not env:
        data = parse_result(call.result).data if call.result else None
        env = data.get("env") if isinstance(data, dict) else None
    if not env and {"source_env", "target_env"} <= set(call.arguments):
        return f"{call.arguments['source_env']} → {call.arguments['target_env']}"
    return env or ctx.get("envId")


def _outcome(call: ToolExchange) -> str:
    result = parse_result(call.result)
    if result.status != "ok":
        return {"error": "it failed", "denied": "it was refused", "declined": "you declined it",
                "pending": "it is waiting for approval",
                "not_executed": "it did not run"}.get(result.status, result.status)
    found = items_of(result.data, result.total)
    if found is not None and call.name.startswith(("list_", "get_dashboard_", "migration")):
        return f"it returned {found[1]} items"
    title = title_of(unwrap(result.data)) if isinstance(unwrap(result.data), dict) else None
    return f"it returned '{title}'" if title else "it returned a result"


def _describe_call(call: ToolExchange, ctx: dict[str, Any]) -> str:
    args = ", ".join(f"{k}={clip(v, 40)}" for k, v in call.arguments.items() if k != "env_id")
    env = _call_env(call, ctx)
    text = f"{call.name}" + (f" ({args})" if args else "") + (f" in {env}" if env else "")
    return text + (f"; {_outcome(call)}" if call.result is not None else "")


def _last_step(calls: list[ToolExchange], messages: list[dict[str, Any]]) -> list[ToolExchange]:
    """The calls of the latest assistant message that made any."""
    for message in reversed(messages):
        if message.get("role") == "assistant" and message.get("tool_calls"):
            ids = {c.get("id") for c in message["tool_calls"] if isinstance(c, dict)}
            step = [c for c in calls if c.call_id in ids]
            if step:
                return step
    return calls[-1:]


def _page(ctx: dict[str, Any]) -> str:
    kind, ident, name = ctx.get("objectType"), ctx.get("objectId"), ctx.get("objectName")
    env, tier = ctx.get("envId"), ctx.get("envTier")
    where = f" in {env}" + (f" ({tier} tier)" if tier else "") if env else ""
    if kind in ("dashboard", "dataset") and ident:
        label = f"{kind} #{ident}" + (f" '{clip(name, 60)}'" if name else "")
        return f"You are looking at {label}{where}."
    if kind == "migration":
        return "You are on the migration page" + (f" (dashboard #{ident})" if ident else "") + (
            f"{where}." if where else ".")
    if kind:
        return f"You are on a {kind} page{where}."
    return "You opened the agent without a page context" + (f"; the environment is {env}"
                                                            f"{f' ({tier} tier)' if tier else ''}"
                                                            if env else "") + "."


def _singular(noun: str) -> str:
    return noun[:-1] if noun.endswith("s") else noun


def _noun(noun: str, count: int) -> str:
    return _singular(noun) if count == 1 else (noun if noun.endswith("s") else f"{noun}s")


def _count_answer(noun: str, calls: list[ToolExchange]) -> str | None:
    """A count from the newest result holding a list called `noun` (or listing that noun)."""
    singular = _singular(noun.lower())
    for call in reversed(calls):
        result = parse_result(call.result)
        if result.status != "ok":
            continue
        data = unwrap(result.data)
        if isinstance(data, dict):
            for key, value in data.items():
                count = count_of(value) if _singular(key.lower()) == singular else None
                if key.lower() in (f"{singular}_count", f"{singular}s_count"):
                    count = value if isinstance(value, int) else count
                if count is not None and not isinstance(count, bool):
                    subject = _subject(call, data)
                    if subject is None:
                        return f"{call.name} found {count} {_noun(noun, count)}."
                    return f"{subject} has {count} {_noun(noun, count)} (from {call.name})."
        if singular in call.name or (singular == "item" and call.name.startswith("list_")):
            found = items_of(result.data, result.total)
            if found is not None:
                return f"{call.name} found {found[1]} {_noun(noun, found[1])}."
    return None


def _subject(call: ToolExchange, data: dict[str, Any]) -> str | None:
    for kind in ("dataset", "dashboard"):
        ident = call.arguments.get(f"{kind}_id")
        if ident is not None:
            title = title_of(data)
            return f"{kind.capitalize()} #{ident}" + (f" '{title}'" if title else "")
    return None


def _name_answer(calls: list[ToolExchange]) -> str | None:
    for call in reversed(calls):
        result = parse_result(call.result)
        data = unwrap(result.data)
        if result.status == "ok" and isinstance(data, dict) and title_of(data):
            facts = [f"{k}: {clip(data[k], 60)}" for k in ("id", "uuid", "slug", "env")
                     if data.get(k) is not None]
            return f"From {call.name}: '{title_of(data)}'" + (
                f" ({', '.join(facts)})" if facts else "") + "."
    return None


def _main_user_messages(messages: list[dict[str, Any]]) -> list[str]:
    end = _main_tail(messages)
    return [text_of(m) for m in messages[1:end] if m.get("role") == "user"]


def answer_side(messages: list[dict[str, Any]]) -> str:
    """Answer the last user question from the transcript alone."""
    ctx = context_of(messages)
    question = text_of(messages[-1]).strip() if messages else ""
    body = messages[1:-1]
    calls = [c for c in exchanges(body) if c.name]
    if not question:
        return ("Ask me anything about what the agent is doing, for example \"which tool did "
                "you use?\".")
    q = question.lower()
    if _has(_TOOL_Q, q):
        if not calls:
            return "The agent has not used any tool yet in this conversation."
        step = _last_step(calls, body)
        return "I last used " + "; and ".join(_describe_call(c, ctx) for c in step) + "."
    if _has(_PAGE_Q, q):
        return _page(ctx)
    if (match := re.search(_COUNT_Q, q)) is not None:
        noun = next((g for g in match.groups() if g), "items")
        found = _count_answer(noun, calls)
        if found:
            return found
        return f"The conversation so far does not say how many {noun} there are."
    if _has(_ROLE_Q, q):
        role = ctx.get("role")
        return (f"Your role is {role}." if role else "I don't know your role from here.") + (
            " Viewers can only read; editors can also change things (with approval); "
            "admins can also delete and promote to prod.")
    if _has(_ENV_Q, q):
        env, tier = ctx.get("envId"), ctx.get("envTier")
        text = (f"The session's environment is {env}" + (f" ({tier} tier)" if tier else "") + "."
                if env else "No environment is selected.")
        if calls and (used := _call_env(calls[-1], ctx)) and used != env:
            text += f" The last tool call ({calls[-1].name}) used {used}."
        return text
    if _has(_ASKED_Q, q):
        asked = _main_user_messages(messages)
        return f"You asked: \"{clip(asked[-1], 200)}\"." if asked else "You have not asked the " \
            "main agent anything yet."
    if _has(_ANSWER_Q, q):
        answer = _main_answer(body)
        return f"The agent's last answer: {clip(answer, 600)}" if answer else (
            "The agent has not answered yet.")
    if _has(_NAME_Q, q) and (named := _name_answer(calls)):
        return named
    return _recap(ctx, calls, body)


def _recap(ctx: dict[str, Any], calls: list[ToolExchange], body: list[dict[str, Any]]) -> str:
    parts = [_page(ctx)]
    if calls:
        last = calls[-1]
        parts.append(f"The last tool call was {_describe_call(last, ctx)}.")
        result = parse_result(last.result)
        if result.status == "ok" and isinstance(result.data, (dict, list)):
            parts.append(f"Result: {clip(summarize(result.data), 300)}.")
    answer = _main_answer(body)
    if answer:
        parts.append(f"The agent's last answer: {clip(answer, 300)}")
    return " ".join(parts)
