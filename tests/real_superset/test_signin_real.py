"""Sign-in against real Apache Superset 6.1 (SPEC §8, §10; issue 9's acceptance).

The app's only environment is a real instance with 60-second access tokens and its own
token signing key, configured `auth_mode: passthrough`, so every Superset call carries the
signed-in person's token and Superset's own permissions apply. Seeded users (created by
scripts/real_superset.py): admin (Admin), alpha (Alpha), gamma (Gamma), custom (only the
custom role "Reporting") and sentinel (Alpha, with a distinctive password for leak scans).
Requests are counted in the instance's gunicorn access log, at the Superset side. The
asynchronous passthrough and cache tests are in test_passthrough_real.py.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError
from sqlmodel import col, select

from storage.models import Conversation
from tests.fakes.gradio_api import api_client
from tests.fakes.runs import all_rows, of_type
from tests.real_superset.signin_support import expected_tools, requests_in, settings_for
from tests.real_superset.tools_support import unique
from tests.web.conftest import LiveServer, start_server
from tests.web.signin_support import ANSWERED, open_page, sign_in, stored_session

pytestmark = pytest.mark.real_superset

SENTINEL_USER, SENTINEL_PASSWORD = "sentinel", "pw-Sentinel-3f9a61c7e2"
ROLES = {"admin": "admin", "alpha": "editor", "gamma": "viewer"}


@pytest.fixture(scope="module")
def app(real_superset_auth: dict[str, str], tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("signin-app")
    server = start_server(settings_for(real_superset_auth["url"], tmp))
    server.tmp = tmp  # type: ignore[attr-defined]
    yield server
    server.stop()


@pytest.fixture(scope="module")
def client(app: LiveServer) -> Iterator[Client]:
    client = api_client(app.agent_url, download_files=False)
    yield client
    client.close()


def login(app: LiveServer, username: str, password: str | None = None) -> httpx.Response:
    return httpx.post(f"{app.url}/api/login", timeout=60, json={
        "username": username, "password": username if password is None else password})


# roles, refusals, foreign tokens ---------------------------------------------------------


def test_superset_roles_decide_the_tools_and_a_custom_role_is_refused(
    app: LiveServer, client: Client, early_session: tuple[Any, str] | None,
) -> None:
    del early_session  # started now; checked by the module's last test
    registry = app.runtime.registry
    for username, role in ROLES.items():
        body = login(app, username).json()
        assert body["user_id"] == username and body["roles"] == [role]
        assert body["expires_at"] - time.time() <= 61  # the instance's 60 s tokens
        _, events = client.predict("what can you do?", None, "", username, body["user_jwt"],
                                   "auth", api_name="/agent_handler")
        assert set(events[0]["tools"]) == expected_tools(registry, role)
    refused = login(app, "custom")
    assert refused.status_code == 403
    assert "no role this app accepts" in refused.json()["detail"]


def test_a_wrong_password_is_401_and_writes_nothing(app: LiveServer) -> None:
    before = all_rows(app.runtime.db)
    answer = login(app, "alpha", "not-the-password")
    assert answer.status_code == 401
    assert answer.json() == {"detail": "Wrong username or password."}
    after = all_rows(app.runtime.db)
    # The side-question replica heartbeat ticks on its own; nothing else may change.
    assert {t for t in after if after[t] != before.get(t)} <= {"login_failures",
                                                               "side_question_sessions"}


def test_a_token_from_another_superset_is_refused(
    app: LiveServer, client: Client, real_superset: dict[str, str],
) -> None:
    foreign = httpx.post(f"{real_superset['dev']}/api/v1/security/login", timeout=60, json={
        "username": "alpha", "password": "alpha", "provider": "db"}).json()["access_token"]
    me = httpx.get(f"{app.url}/api/me", headers={"Authorization": f"Bearer {foreign}"},
                   timeout=60)
    assert me.status_code == 401 and foreign not in me.text
    with pytest.raises(AppError) as caught:
        client.predict("hi", None, "", "alpha", foreign, "auth", api_name="/agent_handler")
    assert caught.value.title == "401 unauthorized"


# the page in Chromium ---------------------------------------------------------------------


def newest_conversation(app: LiveServer, owner: str) -> str:
    with app.runtime.db.session() as session:
        return session.exec(select(Conversation.id).where(Conversation.owner_id == owner)
                            .order_by(col(Conversation.created_at).desc())).first()


def _stored_token(page) -> str:  # type: ignore[no-untyped-def]
    return stored_session(page).get("user_jwt", "")


@pytest.mark.browser
def test_each_role_signs_in_through_the_page(browser, app: LiveServer) -> None:  # type: ignore[no-untyped-def]
    registry = app.runtime.registry
    for username, role in ROLES.items():
        page = open_page(browser, app.agent_url, ready="#signin-username input")
        sign_in(page, username)
        page.locator("#session-label").get_by_text(f"({role})").wait_for(timeout=60_000)
        page.locator("#agent-input textarea").fill("what can you do?")
        page.locator("#send-btn").click()
        page.wait_for_function(ANSWERED, timeout=90_000)
        live = app.runtime.agent.live_run(newest_conversation(app, username))
        assert live is not None
        assert set(live.events[0]["tools"]) == expected_tools(registry, role)
        page.close()
    page = open_page(browser, app.agent_url, ready="#signin-username input")
    sign_in(page, "custom")
    page.locator("#signin-form").get_by_text("no role this app accepts").wait_for(
        timeout=60_000)
    assert not page.locator("#session-row").is_visible()
    page.close()


# secrets -----------------------------------------------------------------------------------


class SyncAdmin:
    """A plain admin REST session (login + CSRF) for the synchronous browser tests."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=60,
                                 headers={"Accept": "application/json"})
        tokens = self.http.post("/api/v1/security/login", json={
            "username": "admin", "password": "admin", "provider": "db"}).json()
        self.http.headers["Authorization"] = f"Bearer {tokens['access_token']}"
        self.http.headers["X-CSRFToken"] = self.http.get(
            "/api/v1/security/csrf_token/").json()["result"]
        self.made: list[int] = []

    def dashboard(self, title: str, owners: list[int]) -> int:
        response = self.http.post("/api/v1/dashboard/", json={"dashboard_title": title,
                                                               "owners": owners})
        assert response.status_code == 201, response.text
        self.made.append(response.json()["id"])
        return self.made[-1]

    def user_id(self, token: str | None) -> int:
        """The Superset user id of a token's holder (None: the admin's own)."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return int(self.http.get("/api/v1/me/", headers=headers).json()["result"]["id"])

    def close(self) -> None:
        for pk in self.made:
            self.http.delete(f"/api/v1/dashboard/{pk}")
        self.http.close()


def wait_for(check: Any, what: str, timeout_s: float = 30.0) -> None:
    """Poll a condition (a state, not a time) until it holds or the deadline passes."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.browser
def test_a_sentinel_password_and_its_tokens_appear_nowhere(  # type: ignore[no-untyped-def]
    browser, app: LiveServer, real_superset_auth: dict[str, str],
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []  # every answer, event and error a caller got back
    seen.append(login(app, "alpha", SENTINEL_PASSWORD).text)  # as a wrong password too
    signed = login(app, SENTINEL_USER, SENTINEL_PASSWORD).json()
    token, refresh = signed["user_jwt"], signed["refresh_token"]
    renewed = httpx.post(f"{app.url}/api/refresh", json={"refresh_token": refresh},
                         timeout=60).json()["user_jwt"]
    seen.append(httpx.get(f"{app.url}/api/me", timeout=60,
                          headers={"Authorization": f"Bearer {token}"}).text)
    admin = SyncAdmin(real_superset_auth["url"])
    client = api_client(app.agent_url, download_files=False)
    conv = f"sentinel-{uuid.uuid4().hex[:8]}"
    try:
        dash = admin.dashboard(unique("Sentinel's"), [admin.user_id(None),
                                                     admin.user_id(token)])
        context = json.dumps({"objectType": "dashboard", "objectId": dash, "envId": "auth"})
        _, events = client.predict(f'rename it to "{unique("Renamed")}"', None, conv,
                                   SENTINEL_USER, token, "auth", context,
                                   api_name="/agent_handler")
        card = of_type(events, "confirm_required")[0]
        _, resumed = client.predict(conv, SENTINEL_USER, renewed, card["confirmation_id"],
                                    "approve", api_name="/confirm_tool")
        assert of_type(resumed, "tool_result"), resumed
        side = client.predict(conv, SENTINEL_USER, token, "what did you just do?", "s1",
                              api_name="/side_question_submit")
        with pytest.raises(AppError) as refused:  # an error message that could echo
            client.predict("hi", None, conv, "alpha", token, "auth", api_name="/agent_handler")
        seen += [json.dumps(events), json.dumps(resumed), json.dumps(side), str(refused.value)]
    finally:
        client.close()
        admin.close()
    # and the page's own sign-in
    page = open_page(browser, app.agent_url, ready="#signin-username input")
    sign_in(page, SENTINEL_USER, SENTINEL_PASSWORD)
    page.locator("#session-label").get_by_text("Signed in as").wait_for(timeout=60_000)
    page_token = _stored_token(page)
    seen.append(page.content())
    page.close()
    wait_for(lambda: all_rows(app.runtime.db)["side_question_sessions"], "the snapshot")
    wait_for(lambda: all(r.status != "running" for r in side_requests(app, conv)),
             "the side answer")

    stored = b"".join(path.read_bytes() for path in Path(app.tmp).rglob("*")  # type: ignore[attr-defined]
                      if path.is_file())
    logs = caplog.text + "".join(capfd.readouterr())
    for secret in (SENTINEL_PASSWORD, token, refresh, renewed, page_token):
        assert secret.encode() not in stored, "a secret reached the database or data files"
        assert secret not in logs, "a secret reached the logs"
        assert not [text for text in seen if secret in text], "an answer echoed a secret"


def side_requests(app: LiveServer, conv: str) -> list[Any]:
    from storage.side_models import SideQuestionRequest

    with app.runtime.db.session() as session:
        return list(session.exec(select(SideQuestionRequest).where(
            SideQuestionRequest.parent_id == conv)))


@pytest.fixture(scope="module")
def early_session(request: pytest.FixtureRequest, app: LiveServer
                  ) -> Iterator[tuple[Any, str] | None]:
    """A page signed in as alpha as the module starts (the first test asks for it), so that
    the 60 s its first token lives overlap the other tests: (page, that first token), or
    None without Chromium (then only the browser tests skip)."""
    try:
        browser = request.getfixturevalue("browser")
    except pytest.skip.Exception:
        yield None
        return
    page = open_page(browser, app.agent_url, ready="#signin-username input")
    sign_in(page, "alpha")
    page.locator("#session-label").get_by_text("Signed in as").wait_for(timeout=60_000)
    yield page, _stored_token(page)
    page.close()


@pytest.mark.browser
def test_a_session_longer_than_the_token_lifetime_needs_no_new_sign_in(
    early_session: tuple[Any, str] | None, real_superset_auth: dict[str, str],
) -> None:
    """Last in the module: the page signed in when the module started."""
    if early_session is None:
        pytest.skip("Chromium is not installed")
    page, first = early_session
    expires = jwt.decode(first, options={"verify_signature": False})["exp"]

    page.wait_for_function(f"() => Date.now() / 1000 > {expires} + 2", timeout=120_000)
    dead = httpx.get(f"{real_superset_auth['url']}/api/v1/me/", timeout=60,
                     headers={"Authorization": f"Bearer {first}", "Accept": "application/json"})
    assert dead.status_code == 401  # Superset itself no longer takes the first token

    page.locator("#agent-input textarea").fill("list the dashboards")
    page.locator("#send-btn").click()
    page.wait_for_function(
        "() => document.querySelector('#agent-chat').innerText.includes('Sales Overview')",
        timeout=90_000)
    assert page.locator("#session-row").is_visible()
    assert _stored_token(page) != first
    assert requests_in(real_superset_auth, "POST /api/v1/security/refresh") > 0
