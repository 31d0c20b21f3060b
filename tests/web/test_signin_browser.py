"""Sign-in in the real page (Playwright on Debian's Chromium), outside demo mode.

The app signs people in with AUTH_MODE=superset against the bundled demo Superset; the
renewal tests use one served over HTTP with 6-second access tokens, so a session outlives
several tokens while the test waits for page states (a changed token, an expired one),
never for fixed times.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest

from agent.settings import EnvironmentConfig, Settings
from tests.fakes.superset_server import ServedSuperset
from tests.web.conftest import LiveServer, sqlite_server, start_server
from tests.web.signin_support import ANSWERED, OnlyThisClick, open_page, sign_in, stored_session
from web.signin_ui import persist_js

pytestmark = pytest.mark.browser



@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """SQLite only: what the page does does not depend on the database, and the API tests
    (tests/web/test_signin_api.py) run the same sign-in on both backends."""
    yield from sqlite_server(tmp_path_factory, auth_mode="superset")
STORED = "() => sessionStorage.getItem('superset-agent-auth')"  # JS expression


def _send(page, text: str) -> None:  # type: ignore[no-untyped-def]
    page.locator("#agent-input textarea").fill(text)
    page.locator("#send-btn").click()


def test_sign_in_journey(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    page = open_page(browser, live_server.agent_url)
    form = page.locator("#signin-form")
    form.get_by_text("Sign in with your Superset account").wait_for(timeout=30_000)
    assert not page.locator("#user-select").is_visible()  # no demo users here

    _send(page, "what can you do?")  # before signing in: refused, and the text stays
    form.get_by_text("Please sign in").wait_for(timeout=30_000)
    assert page.locator("#agent-input textarea").input_value() == "what can you do?"

    sign_in(page, "alpha", "wrong-password")
    page.get_by_text("Wrong username or password.").first.wait_for(timeout=30_000)
    assert not page.locator("#session-row").is_visible()

    sign_in(page, "alpha")
    label = page.locator("#session-label")
    label.get_by_text("Signed in as").wait_for(timeout=30_000)
    assert "alpha" in label.inner_text() and "(editor)" in label.inner_text()
    form.wait_for(state="hidden", timeout=30_000)
    stored = stored_session(page)
    assert stored["user_id"] == "alpha" and stored["user_jwt"] and stored["refresh_token"]
    assert page.evaluate("() => JSON.stringify(localStorage)").find(stored["user_jwt"]) < 0

    page.locator("#send-btn").click()  # the kept text goes now
    page.wait_for_function(ANSWERED, timeout=60_000)

    page.reload()  # the tab keeps the session and the conversation
    label.get_by_text("Signed in as").wait_for(timeout=30_000)
    page.wait_for_function(ANSWERED, timeout=60_000)

    with OnlyThisClick(page, "sign-out-btn"):  # what the sign-out's own update shows
        page.locator("#sign-out-btn").click()
        form.get_by_text("You are signed out").wait_for(timeout=30_000)
        assert "explicit approval" not in page.locator("#agent-chat").inner_text()
    page.wait_for_function(STORED + " === null", timeout=30_000)
    page.close()


def test_a_host_hands_a_token_over_without_a_form(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    token = live_server.login("gamma")["user_jwt"]
    queried = open_page(browser, f"{live_server.agent_url}?token={token}")  # never read from there
    queried.locator("#signin-form").get_by_text("Sign in with").wait_for(timeout=30_000)
    assert not queried.locator("#session-row").is_visible() and not stored_session(queried)
    queried.close()
    page = open_page(browser, f"{live_server.agent_url}#token={token}")
    page.locator("#session-label").get_by_text("Signed in as").wait_for(timeout=30_000)
    assert "(viewer)" in page.locator("#session-label").inner_text()
    assert token not in page.url  # read once, removed from the address bar
    assert stored_session(page)["user_jwt"] == token

    page.locator("#sign-out-btn").click()
    page.locator("#signin-form").wait_for(state="visible", timeout=30_000)
    admin = live_server.login("admin")["user_jwt"]
    page.evaluate("(t) => window.postMessage({type: 'superset-agent:token', token: t}, '*')",
                  admin)
    page.locator("#session-label").get_by_text("(admin)").wait_for(timeout=30_000)
    page.close()


@pytest.fixture(scope="module")
def short_tokens(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedSuperset]:
    with ServedSuperset(tmp_path_factory.mktemp("short") / "ss.db", access_ttl_s=6) as served:
        yield served


@pytest.fixture(scope="module")
def short_server(short_tokens: ServedSuperset, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[LiveServer]:
    tmp: Path = tmp_path_factory.mktemp("app")
    env = EnvironmentConfig(name="ss-dev", base_url=short_tokens.env_url("ss-dev"),
                            tier="dev", auth_mode="passthrough")
    server = start_server(Settings(database_url=f"sqlite:///{tmp}/app.db",
                                   data_dir=tmp / "data", superset_environments=[env],
                                   auth_jwt_secret="short-tokens-" + "z" * 32))
    yield server
    server.stop()


def test_a_session_outlives_its_access_tokens(browser, short_server: LiveServer,  # type: ignore[no-untyped-def]
                                              short_tokens: ServedSuperset) -> None:
    page = open_page(browser, short_server.agent_url)
    sign_in(page, "alpha")
    page.locator("#session-label").get_by_text("Signed in as").wait_for(timeout=30_000)
    first = stored_session(page)["user_jwt"]
    expires = jwt.decode(first, options={"verify_signature": False})["exp"]
    refreshes = short_tokens.count("/api/v1/security/refresh", "POST")

    # the page renews before expiry, then the first token's life ends (server's clock)
    page.wait_for_function(
        f"() => !(sessionStorage.getItem('superset-agent-auth') || '')"
        f".includes({json.dumps(first)})", timeout=30_000)
    page.wait_for_function(f"() => Date.now() / 1000 > {expires} + 1", timeout=30_000)
    me = httpx.get(short_tokens.env_url("ss-dev") + "/api/v1/me/", timeout=10,
                   headers={"Authorization": f"Bearer {first}"})
    assert me.status_code == 401  # the first token is dead at Superset

    _send(page, "list the dashboards")  # a passthrough read with the current token
    page.wait_for_function(
        "() => document.querySelector('#agent-chat').innerText.includes('Sales')",
        timeout=60_000)
    assert page.locator("#session-row").is_visible()
    assert short_tokens.count("/api/v1/security/refresh", "POST") > refreshes
    page.close()


def test_a_renewal_refused_signs_out_clearly_and_keeps_the_text(  # type: ignore[no-untyped-def]
    browser, short_server: LiveServer, short_tokens: ServedSuperset,
) -> None:
    page = open_page(browser, short_server.agent_url)
    sign_in(page, "gamma")
    page.locator("#session-label").get_by_text("Signed in as").wait_for(timeout=30_000)
    page.locator("#agent-input textarea").fill("half-typed question")
    short_tokens.demo.set_faults("ss-dev", {"status": 401, "count": 1000, "methods": ["POST"]})
    try:
        page.locator("#signin-form").get_by_text("You were signed out").wait_for(
            timeout=30_000)
    finally:
        short_tokens.demo.set_faults("ss-dev", None)
    assert page.locator("#agent-input textarea").input_value() == "half-typed question"
    assert not page.get_by_text("Traceback").count()
    sign_in(page, "gamma")
    page.locator("#session-label").get_by_text("Signed in as").wait_for(timeout=30_000)
    assert page.locator("#agent-input textarea").input_value() == "half-typed question"
    page.close()


def test_the_form_never_takes_the_focus_from_a_field_being_typed_in(  # type: ignore[no-untyped-def]
        browser, live_server: LiveServer) -> None:
    """A signed-out state focuses the username field, unless the person is already typing
    elsewhere (under load the page finished loading mid-typing and the keystrokes went into
    the username)."""
    page = open_page(browser, live_server.agent_url)
    page.locator("#signin-form").get_by_text("Sign in with").wait_for(timeout=30_000)
    signed_out = f"() => ({persist_js()})('', '', '', 0)"
    focused = "() => document.activeElement.closest('#agent-input, #signin-username')?.id"
    page.wait_for_selector("#agent-input textarea:not([disabled])", timeout=60_000)
    page.locator("#agent-input textarea").focus()
    assert page.evaluate(focused) == "agent-input"  # a disabled field takes no focus
    page.evaluate(signed_out)
    assert page.evaluate(focused) == "agent-input"
    page.locator("#agent-input textarea").blur()
    page.evaluate(signed_out)
    assert page.evaluate(focused) == "signin-username"
    page.close()
