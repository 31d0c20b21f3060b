"""The agent loop against the real instances: sign a seeded Superset user in and run a turn
on a dashboard's page, as the chat would."""

from __future__ import annotations

import json
from typing import Any

from runtime import Runtime
from tests.fakes.runs import collect

__all__ = ["sign_in_as", "turn_on_dashboard"]


async def sign_in_as(rt: Runtime, role: str) -> tuple[str, str]:
    """Real environments mean real sign-in: the seeded Superset user with that role signs in
    at the identity environment (dev); the tools themselves use the service login."""
    assert rt.signin is not None
    username = {"viewer": "gamma", "editor": "alpha", "admin": "admin"}[role]
    signed = await rt.signin.sign_in(username=username, password=username, client="tests")
    assert signed.identity.role == role
    return signed.identity.user_id, signed.access_token


async def turn_on_dashboard(rt: Runtime, message: str, *, role: str, dashboard_id: int,
                conv_id: str) -> list[dict[str, Any]]:
    user_id, token = await sign_in_as(rt, role)
    page = json.dumps({"objectType": "dashboard", "objectId": dashboard_id, "envId": "dev"})
    live = await rt.agent.start_turn(message=message, conv_id=conv_id, user_id=user_id,
                                     user_jwt=token, env_id="dev", uicontext_str=page)
    return await collect(live)
