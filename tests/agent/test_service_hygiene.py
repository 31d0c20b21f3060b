"""Regression tests: finished runs leave memory, racing creators of one new conversation,
and odd but validly signed role claims."""

from __future__ import annotations

import threading
import time

import jwt
import pytest

from agent import run_host as service_module
from agent.errors import ConversationAccessError, IdentityError
from agent.identity import ISSUER, Identity
from tests.fakes.runs import collect


async def test_finished_runs_are_forgotten_after_a_while(runtime, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    agent = runtime.agent
    first = await agent.start_turn(message="", conv_id="c-old", user_id="", user_jwt="",
                                   env_id="ss-dev", uicontext_str=None)
    await collect(first)
    assert agent.live_run("c-old") is first
    monkeypatch.setattr(service_module, "FINISHED_RUN_TTL_S", 0.0)
    time.sleep(0.01)
    second = await agent.start_turn(message="", conv_id="c-new", user_id="", user_jwt="",
                                    env_id="ss-dev", uicontext_str=None)
    await collect(second)
    assert agent.live_run("c-old") is None
    assert agent.live_run("c-new") is second


def test_two_users_racing_for_one_new_conversation_id(runtime) -> None:  # type: ignore[no-untyped-def]
    agent = runtime.agent
    people = [Identity(user_id=f"user-{i}", name=f"U{i}", role="viewer") for i in range(6)]
    barrier = threading.Barrier(len(people))
    outcomes: list[str] = []

    def open_it(identity: Identity) -> None:
        barrier.wait()
        try:
            agent.open_conversation(identity, "shared-new-id")
            outcomes.append("owner")
        except ConversationAccessError:
            outcomes.append("refused")

    threads = [threading.Thread(target=open_it, args=(p,)) for p in people]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["owner"] + ["refused"] * (len(people) - 1)


@pytest.mark.parametrize("roles", ["admin", {"admin": True}, [{"x": 1}, "editor"], None, 7])
async def test_signed_tokens_with_odd_role_claims(runtime, roles) -> None:  # type: ignore[no-untyped-def]
    secret = runtime.settings.jwt_secret()
    token = jwt.encode({"sub": "someone", "iss": ISSUER, "exp": int(time.time()) + 60,
                        "roles": roles}, secret, algorithm="HS256")
    identity = await runtime.agent.authenticate("someone", token)
    assert identity.role == ("editor" if isinstance(roles, list) else "viewer")
    with pytest.raises(IdentityError):
        await runtime.agent.authenticate("someone-else", token)
