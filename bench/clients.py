"""How the benchmarks drive a server: demo identities, timed turns through gradio_client,
many concurrent streams over Gradio's queue protocol, SSE followers, and recordings of what
the app sent so a bare baseline can send the same.

Times are taken where a program calling the app would see them. gradio_client hands
updates to its caller from a thread that polls every 50 ms, so gradio_client figures carry
up to 50 ms of that on both sides; concurrent streams use `QueueCaller` instead (one asyncio
loop, no polling), because a hundred gradio_client jobs are a hundred polling threads in
the driver competing with the servers for this machine's two cores.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from gradio_client import Client

__all__ = ["BARE_IDENTITY", "CADENCE_S", "QueueCaller", "Trace", "demo_identity", "excess_gaps",
           "follow_sse", "gradio_turn", "recording", "save_replay", "words_in_answer",
           "words_in_events"]

# How the offline model splits its answer into streamed chunks (agent/offline/provider.py,
# not imported: that would import litellm into the driver); each chunk waits the delay.
_WORD = re.compile(r"\S+\s*|\s+")
BARE_IDENTITY = ("bench", "")  # the bare baselines check no identity
# The app's text cadence (agent/coalesce.py INTERVAL_S; the bench imports nothing of the app
# it measures, so a test checks the two agree).
CADENCE_S = 0.05


def demo_identity(base: str, role: str = "editor") -> tuple[str, str]:
    """A new demo visitor: (user_id, user_jwt)."""
    response = httpx.post(f"{base}/api/demo/token", json={"user": role}, timeout=60)
    response.raise_for_status()
    body = response.json()
    return body["user_id"], body["user_jwt"]


def words_in_events(events: Sequence[dict[str, Any]]) -> int:
    """Chunks of streamed answer text in a run's events (what the model's delay paid for)."""
    return len(_WORD.findall("".join(e.get("text", "") for e in events
                                     if e.get("type") == "token")))


def words_in_answer(data: dict[str, Any]) -> int:
    """The same for a side question's cumulative request object."""
    return len(_WORD.findall(data.get("answer") or ""))


@dataclass
class Trace:
    """One streamed call: each update with the seconds since the call was made."""

    updates: list[tuple[float, Any]]
    total_s: float

    @property
    def first_update_s(self) -> float:
        return self.updates[0][0]

    def first_token_s(self) -> float:
        """Seconds until the first update whose events hold a token event."""
        for seconds, (_, events) in self.updates:
            if any(event.get("type") == "token" for event in events or []):
                return seconds
        raise AssertionError("the run streamed no token event")

    def final_status(self) -> str | None:
        """The status of the run's last event (`done`'s: completed, failed, cancelled)."""
        events = self.updates[-1][1][1] if self.updates else []
        return events[-1].get("status") if events else None


def gradio_turn(client: Client, message: str, identity: tuple[str, str],
                conv_id: str = "") -> Trace:
    """One `/agent_handler` call through gradio_client, timed from submit to the end."""
    started = time.perf_counter()
    job = client.submit(message, None, conv_id, *identity, "ss-dev",
                        api_name="/agent_handler")
    updates = [(time.perf_counter() - started, value) for value in job]
    trace = Trace(updates, time.perf_counter() - started)
    if trace.final_status() != "completed":
        raise AssertionError(f"{message!r} did not complete: {updates[-1:]}")
    return trace


def recording(updates: Sequence[Any], token_delay_s: float,
              words: Callable[[Any], int] | None = None) -> list[dict[str, Any]]:
    """A replay of recorded updates for a bare baseline: each waits the model's own delay
    for the chunks it adds (`words(update)` counts them so far; 0 without a delay)."""
    count = words or (lambda update: words_in_events(update[1]))
    replay, before = [], 0
    for update in updates:
        now = count(update)
        replay.append({"wait_s": max(0, now - before) * token_delay_s,
                       **({"chat": update[0], "events": update[1]}
                          if isinstance(update, (list, tuple)) else {"data": update})})
        before = now
    return replay


def save_replay(path: Path, replay: Any) -> Path:
    """Write a replay; recordings per message join those already there (a shared server)."""
    if isinstance(replay, dict) and path.exists():
        replay = {**json.loads(path.read_text()), **replay}
    path.write_text(json.dumps(replay))
    return path


def excess_gaps(arrivals: Sequence[tuple[float, int]], token_delay_s: float,
                cadence_s: float = CADENCE_S) -> list[float]:
    """Gaps between consecutive updates of one stream beyond what the model's own delay
    allows: `(seconds, chunks so far)` per update in, seconds out.

    An update is owed its chunks' delay; one that brings text right after another that did
    is owed at least `cadence_s`: the SPEC sends at most about 20 token events a second, so
    flowing text comes in batches one interval apart, whose last chunk can be younger than
    the interval. Owing only the chunks' delay counted that batching against the app: at
    20 ms a chunk, every 50 ms batch of two (about half of all gaps, measured) scored 10 ms
    however idle the server was, and the p99 could not fall below it. `cadence_s=0` is that
    formula, still reported beside. After an update without text (a tool's event) the first
    words are due at once, and an update without text (the end) is owed nothing."""
    gaps, before = [], 0  # `before`: the chunks so far ahead of the earlier update
    for (t0, w0), (t1, w1) in itertools.pairwise(arrivals):
        owed = max(0, w1 - w0) * token_delay_s
        if w1 > w0 > before:  # text after text: the cadence applies
            owed = max(owed, cadence_s)
        gaps.append(max(0.0, (t1 - t0) - owed))
        before = w0
    return gaps


class QueueCaller:
    """Calls one streaming Gradio endpoint over the queue protocol gradio_client speaks
    (POST queue/join, then the session's SSE stream at queue/data, diffs applied), from
    asyncio, one session per call, as separate browsers would."""

    def __init__(self, page_url: str, api_name: str) -> None:
        config = httpx.get(page_url.rstrip("/") + "/config", timeout=60).json()
        self.api = page_url.rstrip("/") + config.get("api_prefix", "/gradio_api")
        self.fn_index = next(dep["id"] for dep in config["dependencies"]
                             if dep.get("api_name") == api_name)

    async def call(self, http: httpx.AsyncClient, data: list[Any],
                   view: Callable[[list[Any]], Any] = copy.deepcopy) -> Trace:
        """`view(values)` is what the trace keeps of each update (a copy by default; the
        values are patched in place, which keeps a hundred streams cheap for the driver)."""
        session = uuid.uuid4().hex
        started = time.perf_counter()
        joined = await http.post(f"{self.api}/queue/join", json={
            "data": data, "fn_index": self.fn_index, "session_hash": session,
            "event_data": None, "trigger_id": None})
        joined.raise_for_status()
        event_id = joined.json()["event_id"]
        updates: list[tuple[float, Any]] = []
        values: list[Any] | None = None
        async with http.stream("GET", f"{self.api}/queue/data",
                               params={"session_hash": session}) as response:
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("event_id") != event_id:
                    continue
                output = (message.get("output") or {}).get("data")
                if message["msg"] == "process_generating" and output is not None:
                    if values is None:
                        values = list(output)
                    else:
                        for index, diff in enumerate(output):
                            values[index] = _patch(values[index], diff)
                    updates.append((time.perf_counter() - started, view(values)))
                elif message["msg"] == "process_completed":
                    if not message.get("success", True):
                        raise AssertionError(f"the call failed: {message.get('output')}")
                    break
        return Trace(updates, time.perf_counter() - started)

    def call_once(self, data: list[Any]) -> Trace:
        """One call from synchronous code (its own loop and connection, as a new caller)."""
        async def once() -> Trace:
            async with httpx.AsyncClient(timeout=None) as http:
                return await self.call(http, data)

        return asyncio.run(once())


def _patch(value: Any, diff: list[list[Any]]) -> Any:
    """Gradio's output diff applied in place (gradio_client's `apply_diff` deep-copies the
    value first, for every update of every stream)."""
    for action, path, new in diff:
        if not path:
            value = new if action == "replace" else value + new
            continue
        target = value
        for key in path[:-1]:
            target = target[key]
        last = path[-1]
        if action == "replace":
            target[last] = new
        elif action == "append":
            target[last] += new
        elif action == "add":
            if isinstance(target, list):
                target.insert(int(last), new)
            else:
                target[last] = new
        elif action == "delete":
            del target[int(last) if isinstance(target, list) else last]
        else:
            raise ValueError(f"unknown diff action {action!r}")
    return value


async def follow_sse(http: httpx.AsyncClient, url: str, headers: dict[str, str]
                     ) -> list[tuple[float, dict[str, Any]]]:
    """Every `data` of a server-sent event stream with the seconds since the request."""
    started = time.perf_counter()
    events: list[tuple[float, dict[str, Any]]] = []
    async with http.stream("GET", url, headers=headers) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                events.append((time.perf_counter() - started, json.loads(line[5:].strip())))
    return events
