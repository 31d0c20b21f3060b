"""Recovery: a process killed mid-answer leaves an `interrupted` request with its partial
answer once its heartbeat is stale, and nothing is replayed to the model. A restart right
after the kill does not end it at once (it could be another live replica's), the sweeper
does within a bounded wait."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from storage import side_repository as repo
from tests.side_questions.conftest import API_KEY, MODEL, seed_parent, side_settings
from tests.waits import EVENT_WAIT_S

ROOT = Path(__file__).resolve().parents[2]


def _answer(db, request_id: str) -> str:  # type: ignore[no-untyped-def]
    with db.session() as session:
        row = repo.get_request(session=session, request_id=request_id)
        return row.answer if row is not None else ""


async def test_sigkill_mid_answer_then_restart(side_factory, db, server,  # type: ignore[no-untyped-def]
                                              database_url) -> None:
    seed_parent(db, side_settings(database_url, server))
    held = server.reply_text("half of the answer, and the rest", deltas=2, hold_after=2)
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/side_questions/kill_child.py"), database_url,
         server.base_url, API_KEY, MODEL],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
        text=True)
    try:
        request_id = child.stdout.readline().strip()
        assert request_id, "the child did not submit"
        assert held.reached.wait(EVENT_WAIT_S)
        deadline = time.monotonic() + 30
        while not _answer(db, request_id) and time.monotonic() < deadline:
            time.sleep(0.05)  # the partial answer reaches the database within ~250 ms
        assert _answer(db, request_id) == "half of the answ"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        held.release.set()
    seen = len(server.requests)
    assert side_factory().recover() == 0  # default 20 s: the row beat seconds ago
    service = side_factory(side_stale_after_s=2.0)
    service.start()
    deadline = time.monotonic() + 30  # stale after 2 s, swept every 1 s
    while (await service.get(request_id)).status == "running":
        assert time.monotonic() < deadline, "the dead owner's request was never interrupted"
        await asyncio.sleep(0.1)
    state = await service.get(request_id)
    assert state.status == "interrupted" and state.answer == "half of the answ"
    assert "restarted" in (state.error or "")
    assert len(server.requests) == seen  # nothing replayed
    page = await service.history(parent_id="conv-1")
    assert page.running is None and page.items[0].id == request_id
