"""Helpers for side-question surface tests: a real main turn, parents that share its
snapshot, seeded history rows, and a small server-sent-events reader over httpx."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from agent.offline.provider import OFFLINE_PROVIDER, OfflineLLM
from agent.snapshots import make_snapshot
from side_questions.snapshot_store import SnapshotStore
from storage import conversations as conv_repo
from storage import side_repository as side_repo
from tests.fakes.gradio_api import api_client
from tests.waits import EVENT_WAIT_S
from tests.web.conftest import LiveServer

MAIN_QUESTION = "what can you do?"
LONG_SIDE = "recap what you said"  # the offline model repeats the long main answer
SHORT_SIDE = "which tools did you use?"  # a one-line answer


def run_main_turn(server: LiveServer, conv_id: str, user_id: str, token: str) -> None:
    """One real agent turn through the Gradio API, so the parent has a snapshot.

    The turn runs at full speed whatever the module's per-token delay (which is there for
    the side answers): at 60 ms a word, the few hundred words of MAIN_QUESTION's answer
    took 25-28 s of each such module's set-up in CI. The words are the same either way.
    The server's gateway is loaded first (the warm-up thread may not have yet): loading
    registers the offline model whose pace is set here."""
    server.runtime.gateway.load()
    model = offline_model()
    assert model is not None, "loading the gateway registers the offline model"
    paced, model.token_delay_s = model.token_delay_s, 0.0
    client = api_client(server.agent_url)
    try:
        client.predict(MAIN_QUESTION, None, conv_id, user_id, token, "ss-dev", None,
                       api_name="/agent_handler")
    finally:
        client.close()
        model.token_delay_s = paced
    _wait_run_end_snapshot(server, conv_id)


def _wait_run_end_snapshot(server: LiveServer, conv_id: str) -> None:
    """Until the run's last snapshot is stored: snapshots are saved by a throttled writer
    (a quarter second apart), so right after a quick turn the stored one can still be the
    one before the tool call, and `clone_parent` copies what is stored."""
    deadline = time.monotonic() + EVENT_WAIT_S
    while True:
        with server.runtime.db.session() as session:
            row = side_repo.get_session(session=session, parent_id=conv_id)
            if row is not None and (row.snapshot or {}).get("boundary") == "run_end":
                return
        assert time.monotonic() < deadline, "the main turn's last snapshot was never stored"
        time.sleep(0.05)  # a background writer's commit: there is no event to await here


def clone_parent(server: LiveServer, source: str, owner: str, *, model: str | None = None,
                 snapshot: bool = True) -> str:
    """A new conversation of `owner` whose snapshot copies `source`'s (or none)."""
    runtime = server.runtime
    conv_id = "p-" + uuid.uuid4().hex[:12]
    with runtime.db.session() as session:
        conv_repo.create_conversation(session=session, owner_id=owner, conversation_id=conv_id)
    if snapshot:
        stored = SnapshotStore(runtime.db).load(source)
        assert stored is not None, "the main turn left no snapshot"
        SnapshotStore(runtime.db).save(make_snapshot(
            conversation_id=conv_id, run_id=stored.run_id, version=stored.version,
            boundary="run_end", system_prompt=stored.system_prompt, messages=stored.messages,
            tools=stored.tools, params=stored.params, model=model or stored.model,
            api_base=runtime.settings.agent_api_base, run_started_at=1.0))
    return conv_id


def seed_history(server: LiveServer, conv_id: str, count: int) -> None:
    """`count` completed side questions straight through the repository (fast paging tests)."""
    with server.runtime.db.session() as session:
        generation = side_repo.get_session(session=session, parent_id=conv_id).generation
        for number in range(1, count + 1):
            row = side_repo.create_request(
                session=session, parent_id=conv_id, generation=generation,
                client_request_id=f"seed-{number}", question=f"seeded question {number}",
                model="offline", snapshot_run_id=None, snapshot_version=None, snapshot_at=None)
            assert row is not None
            side_repo.update_request(session=session, request_id=row.id, generation=generation,
                                     status="completed", answer=f"answer {number}", sequence=2)


@dataclass
class SSEEvent:
    event: str
    id: int
    data: dict[str, Any]


def sse_events(response: httpx.Response) -> Iterator[SSEEvent]:
    """Parse a text/event-stream response into events (comments and pings skipped)."""
    fields: dict[str, str] = {}
    data: list[str] = []
    for line in response.iter_lines():
        if not line:
            if data:
                yield SSEEvent(fields.get("event", "message"), int(fields.get("id", "0")),
                               json.loads("\n".join(data)))
            fields, data = {}, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        else:
            fields[name] = value


def auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def ask_main(page, text: str, tries: int = 5) -> None:  # type: ignore[no-untyped-def]
    """Type and press Enter until the page takes it (it clears the box): a press in the
    moment the previous run's follow-up steps are still settling can be ignored."""
    box = page.locator("#agent-input textarea")
    box.fill(text)
    for _ in range(tries):
        box.press("Enter")
        try:
            page.wait_for_function(
                "() => document.querySelector('#agent-input textarea').value === ''",
                timeout=5_000)
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"the page never took {text!r}")


def ask_side(page, text: str, tries: int = 4) -> None:  # type: ignore[no-untyped-def]
    """Ask in the side panel until the page takes it (its Ask clears the box), as `ask_main`
    does for the main input. Ask sends what the box holds when it is clicked, and an empty
    box is skipped without a word: right after the panel opens, a fill could be made before
    the box had settled, the click then asked nothing and the answer never came (seen once
    in CI: the model never got the side question)."""
    box = page.locator("#side-input textarea")
    box.wait_for(timeout=60_000)
    for _ in range(tries):
        if box.input_value() != text:
            box.fill(text)
        page.locator("#side-ask").click()
        try:
            page.wait_for_function(
                "() => document.querySelector('#side-input textarea').value === ''",
                timeout=15_000)  # long: a click taken late must not be asked twice
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"the side panel never took {text!r}")


def offline_model() -> OfflineLLM | None:
    """The offline model the live server's litellm calls (one per process: a live server
    runs in the test's own), whose per-token delay is read at every token; None when no
    server has registered it yet."""
    import litellm

    return next((entry["custom_handler"] for entry in litellm.custom_provider_map
                 if entry["provider"] == OFFLINE_PROVIDER), None)


def set_token_delay(seconds: float) -> None:
    """Pace the live server's offline model from its next token on: a long delay holds an
    answer mid-stream, so a test can act on it (Stop, reload) before it ends however
    loaded the machine is."""
    model = offline_model()
    assert model is not None, "no live server's offline model is registered"
    model.token_delay_s = seconds
