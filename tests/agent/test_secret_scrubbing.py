"""Secrets that a Superset (or a proxy) echoes in its errors never travel on (SPEC §10).

A loopback Superset quotes the login body (the service password) and the request headers
(the service token) in its error messages; a scripted model calls tools on both of its
environments, then answers, and a side question reads the snapshot. The sentinel password
and token appear nowhere: not in events, the database (rows on both backends, the SQLite
files byte for byte), snapshots, logs, or the bodies sent to the model.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from agent.secrets import REDACTED, Scrubber, scrub_patterns
from agent.settings import EnvironmentConfig, Settings
from runtime import Runtime, build_runtime
from tests.fakes.echo_superset import EchoSuperset
from tests.fakes.openai_server import ScriptedCall, ScriptedOpenAIServer
from tests.fakes.runs import SENTINEL_KEY, all_rows, collect, of_type, scripted_settings

PASSWORD = "pw-echoed-sentinel-5be1d0"
TOKEN = "tok-echoed-sentinel-0c4a9e77f1d2"


@pytest.fixture
def echo() -> Iterator[EchoSuperset]:
    with EchoSuperset(token=TOKEN, password=PASSWORD) as server:
        yield server


@pytest.fixture
def rt(settings: Settings, server: ScriptedOpenAIServer, echo: EchoSuperset
       ) -> Iterator[Runtime]:
    envs = [EnvironmentConfig(name=name, base_url=echo.env_url(name), tier="dev",
                              username="svc", password=PASSWORD)
            for name in ("echo-login", "echo-read")]
    runtime = build_runtime(scripted_settings(settings, server.base_url).model_copy(
        update={"superset_environments": envs, "auth_mode": "demo"}))
    yield runtime
    runtime.close()


def _leaks(text: str) -> list[str]:
    return [secret for secret in (PASSWORD, TOKEN, SENTINEL_KEY) if secret in text]


async def test_echoed_credentials_reach_no_event_store_snapshot_log_or_model(
    rt: Runtime, server: ScriptedOpenAIServer, settings: Settings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    server.reply_tool_calls(
        ScriptedCall("list_dashboards", json.dumps({"env_id": "echo-login"})),
        ScriptedCall("list_dashboards", json.dumps({"env_id": "echo-read"})))
    server.reply_text("Both environments failed.")
    server.reply_text("They failed with proxy errors.")  # the side question's answer
    identity, token = rt.issuer.mint_demo("admin")

    live = await rt.agent.start_turn(message="list the dashboards everywhere",
                                     conv_id="echoed", user_id=identity.user_id,
                                     user_jwt=token, env_id="echo-read", uicontext_str=None)
    events = await collect(live)
    side = rt.side_questions
    asked = await side.submit(parent_id="echoed", question="why did they fail?")
    async for _ in side.follow(asked.request.id):
        pass

    errors = of_type(events, "tool_error")
    assert len(errors) == 2 and all(REDACTED in e["error"] for e in errors), errors
    assert "Login backend error" in errors[0]["error"]  # the message itself survives
    assert _leaks(json.dumps(events)) == []
    assert _leaks(repr(all_rows(rt.db))) == []  # messages, snapshots, side answers, audit
    assert _leaks(json.dumps([r.body for r in server.requests])) == []  # prompts
    assert _leaks(caplog.text) == []
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite":
        files = Path(str(url.database)).parent.glob(Path(str(url.database)).name + "*")
        stored = b"".join(path.read_bytes() for path in files)  # the database, WAL, SHM
        assert all(secret.encode() not in stored for secret in (PASSWORD, TOKEN))


@pytest.mark.parametrize(("text", "kept"), [
    ('{"username": "svc", "password": "hunter22x", "provider": "db"}', '"username": "svc"'),
    ("Authorization: Bearer abcdefgh12345678", "Authorization:"),
    ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl here", "here"),
    ("postgresql://svc:hunter22x@db:5432/x", "postgresql://svc:"),
    ("api_key=hunter22x&next=1", "next=1"),
    ("{'password': 'hunter22x'}", "{'password': '"),
])
def test_shapes_of_credentials_are_removed(text: str, kept: str) -> None:
    scrubbed = scrub_patterns(text)
    assert "hunter22x" not in scrubbed and "abcdefgh12345678" not in scrubbed
    assert "c2lnbmF0dXJl" not in scrubbed and REDACTED in scrubbed and kept in scrubbed


@pytest.mark.parametrize("text", ["The CSRF token is missing.", "Token has expired",
                                  "Changing this dataset is forbidden",
                                  "Signature verification failed"])
def test_ordinary_messages_stay_as_they_are(text: str) -> None:
    assert Scrubber(["abc"]).scrub(text) == text  # too short to be a secret, too


def test_configured_secrets_come_from_settings_and_the_environment(
    settings: Settings, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-sentinel-9911")
    configured = settings.model_copy(update={
        "agent_api_key": "sk-configured-7788",
        "superset_environments": [EnvironmentConfig(name="p", base_url="http://x",
                                                    username="u", password="svc-pass-3344")]})
    scrubber = Scrubber.from_settings(configured)
    text = "sk-ant-sentinel-9911 sk-configured-7788 svc-pass-3344 " + settings.jwt_secret()

    assert scrubber.scrub(text) == " ".join([REDACTED] * 4)
    assert scrubber.scrub("the caller-token-5566 leaked", extra=["caller-token-5566"]) == (
        f"the {REDACTED} leaked")
