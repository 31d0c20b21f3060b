"""One logging configuration (issue 14, item 4): run fields on every line of a run, secrets
scrubbed (tracebacks and the access log too), JSON on request, and an internal error
logged once with its traceback under the id the person is shown."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from agent.logs import configure_logging, run_context
from agent.secrets import Scrubber
from runtime import Runtime
from storage import conversations as repo
from tests.fakes.runs import collect

TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbHBoYSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ"


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = configure_logging("INFO", "text", Scrubber(["s3cret-password"]), stream)
    yield stream
    logging.getLogger().removeHandler(handler)


def test_run_lines_carry_the_run_and_secrets_never_reach_the_log(logged: io.StringIO) -> None:
    log = logging.getLogger("agent.test")
    log.info("outside")
    with run_context(run_id="r1", conv_id="c1", user="alpha"):
        log.warning("token %s and s3cret-password", TOKEN)
        try:
            raise ValueError(f"Bearer {TOKEN}")
        except ValueError:
            log.exception("boom")
    logging.getLogger("uvicorn.access").info(
        '%s - "%s %s HTTP/1.1" %d', "127.0.0.1", "GET", f"/agent/?token={TOKEN}&x=1", 200)
    text = logged.getvalue()  # other threads of the suite may log here too: search it
    assert "agent.test [run=- conv=- user=-] outside" in text
    assert "agent.test [run=r1 conv=c1 user=alpha] token [redacted] and [redacted]" in text
    assert "Traceback" in text and "ValueError" in text
    assert TOKEN not in text and "s3cret-password" not in text
    access = next(line for line in text.splitlines() if "uvicorn.access" in line)
    assert "GET /agent/?" in access and "&x=1" in access and "eyJ" not in access


async def test_runs_in_parallel_tasks_keep_their_own_fields(logged: io.StringIO) -> None:
    log = logging.getLogger("agent.test")

    async def one(run: str) -> None:
        with run_context(run_id=run):
            await asyncio.sleep(0)
            log.info("step of %s", run)

    await asyncio.gather(one("a"), one("b"))
    for run in ("a", "b"):
        assert f"[run={run} conv=- user=-] step of {run}" in logged.getvalue()


def test_json_lines_are_one_object_each() -> None:
    stream = io.StringIO()
    handler = configure_logging("INFO", "json", Scrubber(), stream)
    try:
        with run_context(run_id="r9"):
            logging.getLogger("agent.test").info("hello %s", TOKEN)
    finally:
        logging.getLogger().removeHandler(handler)
    (line,) = [json.loads(text) for text in stream.getvalue().splitlines()
               if '"logger": "agent.test"' in text]
    assert line["message"] == "hello [redacted]" and line["run_id"] == "r9"
    assert line["level"] == "INFO" and line["conv_id"] == "-"


async def test_an_internal_error_is_logged_once_with_the_id_the_person_sees(
        runtime: Runtime, logged: io.StringIO) -> None:
    """It used to reach the person as "Internal error: KeyError" and leave no traceback."""
    identity, token = runtime.issuer.mint_demo("viewer")
    live = await runtime.agent.start_turn(message="what can you do?", conv_id="vanishing",
                                          user_id=identity.user_id, user_jwt=token,
                                          env_id=None, uicontext_str=None)
    with runtime.db.session() as session:  # the run cannot be recorded: an internal error
        session.delete(repo.get_conversation(session=session, conversation_id="vanishing"))

    events = await collect(live, timeout_s=10)

    error = events[-1]["error"]
    error_id = re.search(r"error id ([0-9a-f]{8})", error).group(1)  # type: ignore[union-attr]
    assert "Traceback" not in error and "Error:" not in error  # one safe sentence
    text = logged.getvalue()
    logged_lines = [line for line in text.splitlines() if f"internal error {error_id}" in line]
    assert len(logged_lines) == 1, text
    assert f"run={live.run_id} conv=vanishing user={identity.user_id}" in logged_lines[0]
    assert "Traceback (most recent call last)" in text.split(logged_lines[0], 1)[1]
