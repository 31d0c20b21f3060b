"""Helpers for the offline-model tests: real tool schemas, real prompts, real truncation.

Tool schemas come from the app's own catalog through the real selection pipeline, the
system prompt from `build_system_prompt`, and results pass through `truncate` exactly as
the loop does, so the brain is tested on what it really receives.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent.offline.brain import Decision, decide
from agent.prompts import build_system_prompt
from agent.tools.catalog import all_tools
from agent.tools.registry import ToolRegistry, select_tools
from agent.truncation import truncate

__all__ = [
    "after_call",
    "context",
    "messages_for",
    "only_call",
    "run",
    "tools_for",
]

_REGISTRY = ToolRegistry(all_tools())


def tools_for(role: str = "viewer", object_type: str | None = None) -> list[dict[str, Any]]:
    """The OpenAI tool schemas the loop would offer this role on this page."""
    return [spec.openai_schema for spec in select_tools(_REGISTRY, role=role,
                                                        object_type=object_type)]


def context(object_type: str | None = None, object_id: int | None = None, *,
            role: str = "viewer", env: str | None = "ss-dev", name: str | None = None,
            ) -> dict[str, Any]:
    tier = {"ss-dev": "dev", "staging": "staging", "prod": "prod"}.get(env or "", "prod")
    return {"objectType": object_type, "objectId": object_id, "objectName": name,
            "envId": env, "envTier": tier if env else None, "role": role, "mode": "main"}


def messages_for(text: str, ctx: dict[str, Any] | None = None,
                 history: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    ctx = ctx if ctx is not None else context()
    return [{"role": "system", "content": build_system_prompt(ctx)}, *history,
            {"role": "user", "content": text}]


def run(text: str, object_type: str | None = None, object_id: int | None = None, *,
        role: str = "viewer", env: str | None = "ss-dev",
        history: Sequence[dict[str, Any]] = ()) -> Decision:
    """decide() for one utterance on a page, with the tools that page and role get."""
    ctx = context(object_type, object_id, role=role, env=env)
    return decide(messages_for(text, ctx, history), tools_for(role, object_type))


def only_call(decision: Decision) -> tuple[str, dict[str, Any]]:
    assert len(decision.tool_calls) == 1, decision
    name, arguments = decision.tool_calls[0]
    return name, json.loads(arguments)


def after_call(messages: list[dict[str, Any]], calls: Sequence[tuple[str, dict[str, Any], Any]],
               *, call_prefix: str = "call") -> list[dict[str, Any]]:
    """Messages extended by one assistant step with these calls and their (truncated) results."""
    parts, results = [], []
    for index, (name, args, result) in enumerate(calls):
        call_id = f"{call_prefix}_{len(messages)}_{index}"
        parts.append({"id": call_id, "type": "function",
                      "function": {"name": name, "arguments": json.dumps(args)}})
        text = result if isinstance(result, str) else truncate(result, 4000)[0]
        results.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": text})
    return [*messages, {"role": "assistant", "content": None, "tool_calls": parts}, *results]
