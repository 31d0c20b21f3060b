"""The sign-in strip's callbacks without a browser: what a reloaded tab, a renewal timer and
a refused send get back, against the demo Superset served over HTTP (and then stopped)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest

from agent.settings import EnvironmentConfig, Settings
from runtime import Runtime, build_runtime
from tests.fakes.superset_server import ServedSuperset
from web.signin import (
    RETRY_RENEWAL_S,
    SIGN_IN_FIRST,
    SIGN_IN_PROMPT,
    SIGNED_OUT,
    UNREACHABLE,
    SignInHandlers,
)

# SessionView.outputs(): user_id, user_jwt, refresh, expires_in, form, session, label, message
USER, TOKEN, REFRESH, EXPIRES, FORM, SESSION, LABEL, MESSAGE = range(8)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedSuperset]:
    with ServedSuperset(tmp_path / "ss.db") as server:
        yield server


@pytest.fixture
def rt(settings: Settings, served: ServedSuperset) -> Iterator[Runtime]:
    env = EnvironmentConfig(name="ss-dev", base_url=served.env_url("ss-dev"), tier="dev")
    runtime = build_runtime(settings.model_copy(update={"superset_environments": [env]}))
    yield runtime
    runtime.close()


@pytest.fixture
def handlers(rt: Runtime) -> SignInHandlers:
    return SignInHandlers(rt)


async def signed_in(rt: Runtime, username: str = "alpha") -> dict[str, str]:
    assert rt.signin is not None
    signed = await rt.signin.sign_in(username=username, password=username, client="t")
    return {"user_id": signed.identity.user_id, "user_jwt": signed.access_token,
            "refresh_token": signed.refresh_token or ""}


def expired_token(served: ServedSuperset) -> str:
    now = int(time.time())
    return jwt.encode({"type": "access", "sub": "2", "env": "ss-dev", "iat": now - 999,
                       "nbf": now - 999, "exp": now - 60},
                      served.demo.store.get_meta("jwt_secret"), algorithm="HS256")


async def test_a_tab_without_a_session_gets_the_form(handlers: SignInHandlers) -> None:
    for stored in ("", None, "not json", json.dumps(["x"]), json.dumps({"user_jwt": 5})):
        view = await handlers.restore(stored)
        assert not view.signed_in and view.message == SIGN_IN_PROMPT


async def test_a_saved_session_is_verified_again(handlers: SignInHandlers, rt: Runtime
                                                 ) -> None:
    saved = await signed_in(rt)
    view = await handlers.restore(json.dumps(saved))

    assert (view.user_id, view.user_jwt) == ("alpha", saved["user_jwt"])
    assert 800 < view.expires_in <= 900 and "(editor)" in view.label
    forged = await handlers.restore(json.dumps({**saved, "user_jwt": "x.y.z"}))
    assert not forged.signed_in and "does not accept this token" in forged.message


async def test_an_expired_token_is_renewed_with_the_refresh_token(
    handlers: SignInHandlers, rt: Runtime, served: ServedSuperset,
) -> None:
    saved = await signed_in(rt)
    view = await handlers.restore(json.dumps({**saved, "user_jwt": expired_token(served)}))
    assert view.user_id == "alpha" and view.user_jwt not in ("", saved["user_jwt"])

    gone = await handlers.restore(json.dumps({"user_jwt": expired_token(served)}))
    assert not gone.signed_in and gone.message == SIGNED_OUT


async def test_an_unreachable_superset_keeps_the_session_and_retries(
    handlers: SignInHandlers, rt: Runtime, served: ServedSuperset,
) -> None:
    saved = await signed_in(rt)
    rt.identities.forget(saved["user_jwt"])  # type: ignore[attr-defined]
    served.stop()

    view = await handlers.restore(json.dumps(saved))
    assert (view.user_jwt, view.label, view.expires_in) == (saved["user_jwt"], UNREACHABLE,
                                                           RETRY_RENEWAL_S)
    renewed = await handlers.renew(saved["refresh_token"], "alpha")
    assert renewed[EXPIRES] == RETRY_RENEWAL_S
    assert all(value == {"__type__": "update"} for i, value in enumerate(renewed)
               if i != EXPIRES)  # nothing else changes, the page asks again soon


async def test_a_refused_renewal_signs_out_and_never_switches_people(
    handlers: SignInHandlers, rt: Runtime,
) -> None:
    refused = await handlers.renew("garbage", "alpha")
    assert (refused[TOKEN], refused[FORM]["visible"]) == ("", True)
    assert refused[MESSAGE].startswith("You were signed out")

    gamma = await signed_in(rt, "gamma")
    switched = await handlers.renew(gamma["refresh_token"], "alpha")
    assert switched[TOKEN] == "" and switched[SESSION]["visible"] is False

    alpha = await signed_in(rt)
    renewed = await handlers.renew(alpha["refresh_token"], "alpha")
    assert renewed[USER] == "alpha" and renewed[TOKEN] not in ("", alpha["user_jwt"])
    assert renewed[REFRESH] == alpha["refresh_token"] and renewed[SESSION]["visible"]


async def test_a_refused_send_shows_the_form_with_the_right_words(
    handlers: SignInHandlers, rt: Runtime, served: ServedSuperset,
) -> None:
    first = await handlers.check("", "")
    assert first[FORM]["visible"] and first[MESSAGE].startswith(SIGN_IN_FIRST.split(";")[0])
    lapsed = await handlers.check("alpha", expired_token(served))
    assert lapsed[MESSAGE].startswith("You were signed out")
    fine = await handlers.check("alpha", (await signed_in(rt))["user_jwt"])
    assert all(value == {"__type__": "update"} for value in fine)


async def test_a_wrong_password_is_said_above_the_form(handlers: SignInHandlers) -> None:
    outputs = await handlers.sign_in("alpha", "nope", None)
    assert outputs[TOKEN] == "" and outputs[FORM]["visible"]
    assert outputs[MESSAGE] == "⚠️ Wrong username or password\\."
