"""Passthrough environments act with the person's own Superset token (SPEC §8, §10).

The app signs people in with AUTH_MODE=superset against the demo Superset served over real
HTTP, whose `ss-dev` is configured `auth_mode: passthrough`. The server records each
request's Authorization header, so the tests see whose token every Superset call carried.
Superset's own permission check refusing that person is a `permission_denied`, audited,
with the object unchanged; a write resumed by an approval carries the approver's token.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.identity.superset import SignedIn
from agent.settings import EnvironmentConfig, Settings
from runtime import Runtime, build_runtime
from tests.fakes.runs import all_rows, collect, of_type
from tests.fakes.superset_server import ServedSuperset


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedSuperset]:
    with ServedSuperset(tmp_path / "served.db") as server:
        yield server


def passthrough_runtime(settings: Settings, served: ServedSuperset, **overrides: Any
                        ) -> Runtime:
    env = EnvironmentConfig(name="ss-dev", base_url=served.env_url("ss-dev"), tier="dev",
                            auth_mode="passthrough")
    return build_runtime(settings.model_copy(update={
        "superset_environments": [env], "auth_mode": "superset", **overrides}))


@pytest.fixture
def rt(settings: Settings, served: ServedSuperset) -> Iterator[Runtime]:
    runtime = passthrough_runtime(settings, served)
    yield runtime
    runtime.close()


async def sign_in(rt: Runtime, username: str) -> SignedIn:
    assert rt.signin is not None
    return await rt.signin.sign_in(username=username, password=username, client="127.0.0.1")


async def turn(rt: Runtime, who: SignedIn, message: str, conv_id: str, *,
               dataset: int | None = None) -> list[dict[str, Any]]:
    context = {"objectType": "dataset", "objectId": dataset, "envId": "ss-dev"} if dataset \
        else {"envId": "ss-dev"}
    live = await rt.agent.start_turn(message=message, conv_id=conv_id,
                                     user_id=who.identity.user_id, user_jwt=who.access_token,
                                     env_id="ss-dev", uicontext_str=json.dumps(context))
    return await collect(live)


async def approve(rt: Runtime, who: SignedIn, conv_id: str, events: list[dict[str, Any]]
                  ) -> list[dict[str, Any]]:
    (card,) = of_type(events, "confirm_required")
    live = await rt.agent.confirm(conv_id=conv_id, user_id=who.identity.user_id,
                                  user_jwt=who.access_token,
                                  confirmation_id=card["confirmation_id"], decision="approve")
    return await collect(live)


def api_calls(served: ServedSuperset, since: int) -> list[Any]:
    return [r for r in served.received[since:] if "/api/v1/" in r.path
            and "/security/" not in r.path and not r.path.endswith(("/me/", "/me/roles/"))]


async def test_reads_carry_the_persons_own_token(rt: Runtime, served: ServedSuperset) -> None:
    alpha = await sign_in(rt, "alpha")
    mark = len(served.received)

    events = await turn(rt, alpha, "list the dashboards", "c-read")

    assert of_type(events, "tool_result"), events
    calls = api_calls(served, mark)
    assert calls and {call.token for call in calls} == {alpha.access_token}


async def test_superset_refusing_the_person_is_a_denial_and_nothing_changes(
    settings: Settings, served: ServedSuperset,
) -> None:
    """The role map is deliberately wrong (Gamma -> admin): the app offers the write and
    asks for approval, and Superset's own permissions still refuse it."""
    rt = passthrough_runtime(settings, served, auth_role_map={"Gamma": "admin"})
    try:
        gamma = await sign_in(rt, "gamma")
        assert gamma.identity.role == "admin"
        before = served.demo.store.get("ss-dev", "dataset", 1)
        events = await turn(rt, gamma, "set the description to Owned by gamma", "c-gamma",
                            dataset=1)
        resumed = await approve(rt, gamma, "c-gamma", events)

        (denied,) = of_type(resumed, "permission_denied")
        assert denied["tool"] == "update_dataset"
        assert denied["reason"].startswith("Superset refused this for your account")
        assert "Forbidden" in denied["reason"]
        assert not of_type(resumed, "tool_error") and resumed[-1]["status"] == "completed"
        assert served.demo.store.get("ss-dev", "dataset", 1) == before
        (row,) = [e for e in await rt.agent.audit_entries(
            user_id="gamma", user_jwt=gamma.access_token) if e["action"] == "executed"]
        assert row["user_id"] == "gamma" and row["outcome"].startswith("refused by Superset")
    finally:
        rt.close()


async def test_an_approved_write_lands_with_the_approvers_token_and_is_audited(
    rt: Runtime, served: ServedSuperset,
) -> None:
    asked = await sign_in(rt, "alpha")
    events = await turn(rt, asked, "set the description to Curated by alpha", "c-alpha",
                        dataset=1)
    approver = await sign_in(rt, "alpha")  # a renewed token, as the page holds later
    assert approver.access_token != asked.access_token
    mark = len(served.received)

    resumed = await approve(rt, approver, "c-alpha", events)

    assert of_type(resumed, "tool_result"), resumed
    (write,) = [r for r in served.received[mark:] if r.method == "PUT"]
    assert write.token == approver.access_token
    assert served.demo.store.get("ss-dev", "dataset", 1)["description"] == "Curated by alpha"
    entries = await rt.agent.audit_entries(user_id="admin",
                                           user_jwt=(await sign_in(rt, "admin")).access_token)
    executed = [e for e in entries if e["action"] == "executed"]
    assert [(e["user_id"], e["outcome"]) for e in executed] == [("alpha", "succeeded")]


async def test_tokens_never_reach_the_database(rt: Runtime, served: ServedSuperset) -> None:
    alpha = await sign_in(rt, "alpha")
    events = await turn(rt, alpha, "set the description to Kept", "c-secret", dataset=1)
    await approve(rt, alpha, "c-secret", events)
    await rt.side_questions.snapshots.flush("c-secret")

    dump = repr(all_rows(rt.db))
    assert alpha.access_token not in dump and str(alpha.refresh_token) not in dump
    assert alpha.access_token.split(".")[1] not in dump
    assert alpha.access_token not in json.dumps(events)
