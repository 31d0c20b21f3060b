"""Helpers for the guardrail tests (guard, confirmations, retries, audit): a runtime wired
like the app (real demo Superset, real storage) driven by the scripted OpenAI server or by
the offline model, plus ways to look at what really happened."""

from __future__ import annotations

import json
from typing import Any

from agent.identity import Identity
from agent.settings import Settings
from runtime import Runtime, build_runtime
from storage import audit as audit_repo
from storage import conversations as repo
from tests.fakes.openai_server import ScriptedCall, ScriptedOpenAIServer
from tests.fakes.runs import collect, of_type, scripted_settings

__all__ = [
    "audit_actions",
    "call",
    "confirm",
    "dashboard",
    "dataset",
    "pending_id",
    "scripted_runtime",
    "stored",
    "turn",
    "user",
]


def scripted_runtime(settings: Settings, server: ScriptedOpenAIServer, **overrides: Any
                     ) -> Runtime:
    return build_runtime(scripted_settings(settings, server.base_url, **overrides))


def user(rt: Runtime, role: str) -> tuple[Identity, str]:
    return rt.issuer.mint_demo(role)


async def turn(rt: Runtime, message: str, *, role: str = "admin", conv_id: str = "conv-g",
               env: str | None = "ss-dev", page: str | None = None, object_id: int | None = None
               ) -> list[dict[str, Any]]:
    identity, token = user(rt, role)
    context = json.dumps({"objectType": page, "objectId": object_id, "envId": env}
                         if page else {"envId": env})
    live = await rt.agent.start_turn(message=message, conv_id=conv_id,
                                     user_id=identity.user_id, user_jwt=token, env_id=env,
                                     uicontext_str=context)
    return await collect(live)


async def confirm(rt: Runtime, confirmation_id: str, decision: str = "approve", *,
                  role: str = "admin", conv_id: str = "conv-g") -> list[dict[str, Any]]:
    identity, token = user(rt, role)
    live = await rt.agent.confirm(conv_id=conv_id, user_id=identity.user_id, user_jwt=token,
                                  confirmation_id=confirmation_id, decision=decision)
    return await collect(live)


def pending_id(events: list[dict[str, Any]]) -> str:
    (card,) = of_type(events, "confirm_required")
    return card["confirmation_id"]


def call(name: str, **arguments: Any) -> ScriptedCall:
    return ScriptedCall(name, json.dumps(arguments))


def dashboard(rt: Runtime, env: str, pk: int) -> dict[str, Any] | None:
    return rt.demo_superset.store.get(env, "dashboard", pk)


def dataset(rt: Runtime, env: str, pk: int) -> dict[str, Any] | None:
    return rt.demo_superset.store.get(env, "dataset", pk)


def audit_actions(rt: Runtime, tool: str | None = None) -> list[tuple[str, str, str]]:
    """(action, tool, outcome) oldest first."""
    with rt.db.session() as session:
        rows = audit_repo.list_entries(session=session, limit=500)
    return [(r.action, r.tool, r.outcome) for r in reversed(rows)
            if tool is None or r.tool == tool]


def stored(rt: Runtime, conv_id: str = "conv-g") -> list[Any]:
    with rt.db.session() as session:
        return list(repo.list_messages(session=session, conversation_id=conv_id))
