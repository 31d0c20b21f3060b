"""Side-question routes outside demo mode: a token is required (no demo viewer), and the
token's subject decides ownership; against a real app server on SQLite and PostgreSQL,
signed in through the bundled demo Superset (AUTH_MODE=superset)."""

from __future__ import annotations

import httpx

from storage import conversations as conv_repo
from tests.web.conftest import LiveServer
from tests.web.side_support import auth

SERVER_SETTINGS = {"auth_mode": "superset"}


def test_token_required_and_subject_is_the_user(live_server: LiveServer) -> None:
    runtime = live_server.runtime
    assert not runtime.settings.is_demo
    with runtime.db.session() as session:
        conv_repo.create_conversation(session=session, owner_id="alpha",
                                      conversation_id="alpha-conv")
    alpha = live_server.login("alpha")["user_jwt"]
    admin = live_server.login("admin")["user_jwt"]
    url = f"{live_server.url}/api/conversations/alpha-conv/side-questions"
    missing = httpx.get(url, timeout=30)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert httpx.get(url, headers=auth(alpha), timeout=30).status_code == 200
    assert httpx.get(url, headers=auth(admin), timeout=30).status_code == 404
    assert httpx.post(f"{live_server.url}/api/demo/token", json={"user": "viewer"},
                      timeout=30).status_code == 404
