"""Passthrough and the identity cache against real Apache Superset 6.1 (SPEC §8, §10).

With the person's own token on every Superset call, Superset's own permissions apply: a
write the role map wrongly allows is still refused by Superset (reported as such, object
unchanged), and an Alpha's approved update lands and is audited under the Superset
username. Verified identities are cached, so 100 turns ask Superset `/me/` at most once,
counted in the instance's gunicorn access log. Asynchronous tests live here, apart from
the browser tests in test_signin_real.py (Playwright's sync API holds the event loop).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.identity.superset import SignedIn
from runtime import Runtime, build_runtime
from tests.fakes.runs import collect, of_type
from tests.real_superset.signin_support import requests_in, settings_for
from tests.real_superset.tools_support import AdminRest, unique

pytestmark = pytest.mark.real_superset


@pytest.fixture
async def admin_rest(real_superset_auth: dict[str, str]) -> AsyncIterator[AdminRest]:
    async with AdminRest(real_superset_auth["url"]) as rest:
        yield rest


@pytest.fixture
async def rt(real_superset_auth: dict[str, str], tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = build_runtime(settings_for(real_superset_auth["url"], tmp_path))
    yield runtime
    await runtime.aclose()



async def _sign_in(rt: Runtime, username: str) -> SignedIn:
    assert rt.signin is not None
    return await rt.signin.sign_in(username=username, password=username, client="tests")


async def _turn_and_approve(rt: Runtime, who: SignedIn, message: str, context: dict,
                            conv_id: str) -> list[dict[str, Any]]:
    live = await rt.agent.start_turn(message=message, conv_id=conv_id,
                                     user_id=who.identity.user_id, user_jwt=who.access_token,
                                     env_id="auth", uicontext_str=json.dumps(context))
    events = await collect(live)
    (card,) = of_type(events, "confirm_required")
    resumed = await rt.agent.confirm(conv_id=conv_id, user_id=who.identity.user_id,
                                     user_jwt=who.access_token,
                                     confirmation_id=card["confirmation_id"], decision="approve")
    return await collect(resumed)


async def test_superset_refuses_a_write_the_role_map_wrongly_allows(
    real_superset_auth: dict[str, str], tmp_path: Path, admin_rest: AdminRest,
) -> None:
    rt = build_runtime(settings_for(real_superset_auth["url"], tmp_path,
                                    auth_role_map={"Gamma": "admin", "Admin": "admin"}))
    try:
        gamma = await _sign_in(rt, "gamma")
        assert gamma.identity.role == "admin"  # the app would allow everything...
        sales = await admin_rest.sales_dataset()
        before = await admin_rest.get("dataset", sales["id"])
        events = await _turn_and_approve(
            rt, gamma, "set the description to Gamma was here",
            {"objectType": "dataset", "objectId": sales["id"], "envId": "auth"}, "c-gamma")

        (denied,) = of_type(events, "permission_denied")  # ...Superset does not
        assert denied["tool"] == "update_dataset"
        assert denied["reason"] == "Superset refused this for your account: Forbidden"
        assert not of_type(events, "tool_error")
        assert await admin_rest.get("dataset", sales["id"]) == before
        entries = await rt.agent.audit_entries(user_id="gamma", user_jwt=gamma.access_token)
        (executed,) = [e for e in entries if e["action"] == "executed"]
        assert (executed["user_id"], executed["outcome"]) == ("gamma",
                                                              "refused by Superset: Forbidden")
    finally:
        await rt.aclose()


async def test_an_alphas_approved_update_lands_and_is_audited_as_alpha(
    rt: Runtime, admin_rest: AdminRest, real_superset_auth: dict[str, str],
) -> None:
    alpha = await _sign_in(rt, "alpha")
    alpha_id = httpx.get(f"{real_superset_auth['url']}/api/v1/me/", timeout=60, headers={
        "Authorization": f"Bearer {alpha.access_token}"}).json()["result"]["id"]
    title, new_title = unique("Owned by alpha"), unique("Renamed by alpha")
    dash = await admin_rest.create("dashboard", {"dashboard_title": title,
                                                 "owners": [await admin_rest.me(), alpha_id]})

    events = await _turn_and_approve(
        rt, alpha, f'rename it to "{new_title}"',
        {"objectType": "dashboard", "objectId": dash, "envId": "auth"}, "c-alpha")

    assert of_type(events, "tool_result") and not of_type(events, "permission_denied")
    assert (await admin_rest.get("dashboard", dash) or {})["dashboard_title"] == new_title
    admin = await _sign_in(rt, "admin")
    entries = await rt.agent.audit_entries(user_id="admin", user_jwt=admin.access_token)
    (executed,) = [e for e in entries if e["action"] == "executed"]
    assert (executed["user_id"], executed["outcome"]) == ("alpha", "succeeded")



async def test_a_hundred_turns_ask_superset_who_you_are_once(
    real_superset_instances: dict[str, dict[str, str]], tmp_path: Path,
) -> None:
    """On dev (15-minute tokens, so the cache time is what limits): sign in, then 100 turns
    within the cache time; the instance's access log counts the /me/ calls. The cache time
    is 10 minutes here (still inside the token's life): the test counts lookups, and 100
    turns took over a minute on a loaded machine."""
    dev = real_superset_instances["dev"]
    # 100 turns at once: above the default fair share of new runs (a burst of 30), which
    # this test is not about.
    settings = settings_for(dev["url"], tmp_path, runs_burst_per_user=200,
                            auth_cache_ttl_s=600)
    runtime = build_runtime(settings)
    try:
        before = requests_in(dev, "GET /api/v1/me/")
        alpha = await _sign_in(runtime, "alpha")
        started = time.monotonic()
        for i in range(100):
            live = await runtime.agent.start_turn(
                message="what can you do?", conv_id=f"hundred-{i % 5}", user_id="alpha",
                user_jwt=alpha.access_token, env_id="auth", uicontext_str=None)
            assert (await collect(live))[-1]["status"] == "completed"
        assert time.monotonic() - started < settings.auth_cache_ttl_s
        assert requests_in(dev, "GET /api/v1/me/") - before <= 1
    finally:
        await runtime.aclose()


