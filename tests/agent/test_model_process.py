"""The model worker process (`agent/model_process.py`, `agent/model_worker.py`): what happens
around a call when the process dies, when a reader stops early, and when the server goes.
The calls' own contract (text, tool calls, usage, provider errors) is tested for both
gateways in test_gateway_openai.py."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agent.errors import ModelError
from agent.model_gateway import ModelReply, ModelRequest, TextDelta
from agent.model_process import WORKER_GONE, ModelWorker, ProcessGateway
from agent.settings import OFFLINE_MODEL
from tests.agent.offline_support import context, messages_for, tools_for
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.waits import EVENT_WAIT_S, PROCESS_START_S

ROOT = Path(__file__).resolve().parents[2]


def _request() -> ModelRequest:
    messages = messages_for('rename it to "Revenue 2026"', context("dashboard", 3, role="editor"))
    return ModelRequest(model=OFFLINE_MODEL, messages=messages,
                        tools=tools_for("editor", "dashboard"))


def _gone(pid: int) -> bool:
    """The process has exited (a zombie of this test's own child counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def _wait_gone(pid: int, timeout_s: float = EVENT_WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not _gone(pid):
        assert time.monotonic() < deadline, f"process {pid} still running"
        time.sleep(0.05)  # polling for another process's exit: there is no event to await


@pytest.fixture
def slow_gateway() -> ProcessGateway:
    """Word by word, 0.2 s a word: a call is surely in flight after its first delta."""
    gateway = ProcessGateway(offline_token_delay_s=0.2, worker=ModelWorker())
    yield gateway
    gateway.close()


async def test_a_killed_worker_fails_the_call_in_flight_and_the_next_call_starts_anew(
    slow_gateway: ProcessGateway,
) -> None:
    first = slow_gateway.worker().process
    stream = slow_gateway.stream(_request())
    assert isinstance(await anext(stream), TextDelta)
    os.kill(first.pid, signal.SIGKILL)

    with pytest.raises(ModelError, match=WORKER_GONE):
        async for _ in stream:
            pass

    replies = [item async for item in slow_gateway.stream(_request())
               if isinstance(item, ModelReply)]
    assert len(replies) == 1 and replies[0].tool_calls[0].name == "update_dashboard"
    assert slow_gateway.worker().process.pid != first.pid


async def test_a_reader_that_stops_early_cancels_the_call_in_the_worker(
    server: ScriptedOpenAIServer,
) -> None:
    """A Stop (or a run's time limit) ends the provider's stream too, as in-process."""
    gateway = ProcessGateway(worker=ModelWorker())
    try:
        reply = server.reply_text("one two three four five six", deltas=6, hold_after=2)
        stream = gateway.stream(ModelRequest(model="openai/scripted", api_base=server.base_url,
                                             api_key="sk-test", timeout_s=60,
                                             messages=[{"role": "user", "content": "hi"}]))
        assert isinstance(await anext(stream), TextDelta)
        assert await reply.until_reached()
        await stream.aclose()
        assert gateway.worker()._waiting == {}  # nobody waits for its answers any more

        deadline = time.monotonic() + EVENT_WAIT_S
        while server.disconnects < 1:  # the worker closed its connection to the provider
            assert time.monotonic() < deadline, "the provider's stream was never closed"
            await asyncio.sleep(0.05)
    finally:
        gateway.close()


def test_closing_the_gateway_ends_the_worker() -> None:
    gateway = ProcessGateway(worker=ModelWorker())
    pid = gateway.worker().process.pid
    gateway.close()
    _wait_gone(pid)
    with pytest.raises(ModelError, match="shutting down"):
        gateway.worker()


def test_the_worker_ends_when_the_server_process_is_killed() -> None:
    """kill -9 of the server leaves no orphan: the worker reads end of file and exits."""
    server = subprocess.Popen(
        [sys.executable, "-c", "from agent.model_process import ModelWorker\n"
         "import sys, time\nw = ModelWorker()\nprint(w.process.pid, flush=True)\n"
         "time.sleep(600)"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        worker_pid = int(server.stdout.readline())
        server.kill()
        server.wait(timeout=PROCESS_START_S)
        _wait_gone(worker_pid)
    finally:
        server.kill()


def _thread_nice_values(pid: int) -> list[int]:
    """The nice value of each thread of `pid` (field 19 of /proc/PID/task/TID/stat)."""
    values = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            values.append(int((task / "stat").read_text().rsplit(")", 1)[1].split()[16]))
        except (FileNotFoundError, ProcessLookupError):
            continue  # that thread ended meanwhile
    return values


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux's /proc")
async def test_no_thread_of_the_worker_runs_below_normal_priority_while_it_imports() -> None:
    """The worker's litellm import once ran at nice 19, to yield the CPU to the server's
    start-up; beside two busy processes it then got almost none, and the first answer
    waited 306 s after the page's 200 (1.2 s at normal priority). Every thread's priority
    is sampled from the worker's start until its first answer, which comes only after the
    import (seconds of CPU, so a niced import thread is seen)."""
    normal = os.getpriority(os.PRIO_PROCESS, 0)  # the worker inherits this process's
    seen: set[int] = set()
    answered = threading.Event()
    gateway = ProcessGateway(worker=ModelWorker())
    pid = gateway.worker().process.pid

    def sample() -> None:
        while not answered.is_set():
            seen.update(_thread_nice_values(pid))
            answered.wait(0.01)  # another process's state: there is no event to await

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        items = [item async for item in gateway.stream(_request())]
    finally:
        answered.set()
        sampler.join()
        gateway.close()
    assert isinstance(items[-1], ModelReply)
    assert seen == {normal}, f"worker threads ran at nice {sorted(seen - {normal})}"


async def test_the_worker_explains_a_refusal_from_the_servers_tool_facts_without_the_tools(
) -> None:
    """The offline model's facts about tools it was not offered (risk, page, role) come
    from the server with the worker's settings: the worker never imports the tools, nor
    storage and SQLAlchemy behind them (28 MB and ~0.4 s of CPU on the first answer's
    path). SQLAlchemy's compiled extensions show in the memory map of a process that
    imported it."""
    gateway = ProcessGateway(worker=ModelWorker())
    try:
        request = ModelRequest(
            model=OFFLINE_MODEL, tools=tools_for("viewer", "dashboard"),
            messages=messages_for("delete this dashboard", context("dashboard", 3)))
        replies = [item async for item in gateway.stream(request)
                   if isinstance(item, ModelReply)]
        assert "Your role (viewer) does not allow me to delete dashboards" in replies[0].content
        maps = Path(f"/proc/{gateway.worker().process.pid}/maps").read_text()
        assert "/sqlalchemy/" not in maps
        assert "/sqlalchemy/" in Path("/proc/self/maps").read_text()  # the check can see it
    finally:
        gateway.close()
