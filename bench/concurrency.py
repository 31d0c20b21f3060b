"""Concurrent streams: 10, 50 and 100 runs streaming at once (offline model, 20 ms a token)
and 100 SSE followers of side questions; the p99 gap between a stream's updates beyond the
model's own delay, against bare servers streaming the same updates with the same delay.

A gap's own delay is the model's per-token delay times the chunks of answer text the later
update brought, and at least the text cadence the SPEC asks for (about 20 token events a
second) between two updates that bring text (`bench.clients.excess_gaps`), so coalescing
tokens is not counted against the app and a stall is. The "chunks only" rows owe no cadence
(the formula before 2026-12-07; no goal: half of the app's gaps score 10 ms there for the
batching alone). The "largest gap" rows show each round's worst stall, which a p99 over
thousands of gaps does not. The app runs with UI_CONCURRENCY_LIMIT at the largest stream count,
as the bare endpoint does (every stream runs at once, none queued), one demo visitor per
stream. The SSE followers are 25 per side question on 4 parents (the process runs at most 4
side questions; SSE_MAX_PER_USER is raised to 25) against a bare FastAPI SSE route replaying
the events the app sent (its most complete follower's in the first round, which runs first).
Streams are driven from one asyncio loop (`QueueCaller`). --short runs 2, 5 and 10 streams
(short answers) and 8 followers.

    python bench/concurrency.py [--rounds 3] [--token-delay-ms 20] [--short] [--out ...]
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/concurrency.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench.clients import (
    BARE_IDENTITY,
    QueueCaller,
    Trace,
    demo_identity,
    excess_gaps,
    follow_sse,
    recording,
    save_replay,
    words_in_answer,
    words_in_events,
)
from bench.common import Servers, using
from bench.report import Report, arguments, percentile, rotate

SIZES = ("small", "mid", "large")
STREAMS = {"full": (10, 50, 100), "short": (2, 5, 10)}
PARENTS = 4
FOLLOWERS = {"full": 25, "short": 2}  # per parent
# A table of dashboards gives each stream dozens of gaps (the 466-chunk capabilities answer
# made 100 streams take most of an hour on a loaded machine); --short streams one line. The
# side question is long in both: a follower connects after the submit answers, and a short
# answer can be over by then.
MESSAGES = {"full": "list the dashboards", "short": "which environments are there?"}
PARENT_MESSAGE, SIDE_QUESTION = "what can you do?", "recap what you said"
# No kept-alive connections: a pooled one the server closed meanwhile fails the next request
# (httpx.ReadError, seen after 50 minutes of 100 streams); a new connection each time.
LIMITS = httpx.Limits(max_connections=1_000, max_keepalive_connections=0)


def _chunks_and_status(values: list[Any]) -> tuple[int, Any]:
    events = values[1] or []
    return words_in_events(events), events[-1].get("status") if events else None


async def _streams(caller: QueueCaller, identities: Sequence[tuple[str, str]], message: str,
                   delay_s: float) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=None, limits=LIMITS) as http:
        started = time.perf_counter()
        traces: list[Trace] = await asyncio.gather(*(
            caller.call(http, [message, None, "", *who, "ss-dev", None], _chunks_and_status)
            for who in identities))
        wall = time.perf_counter() - started
    if any(trace.updates[-1][1][1] != "completed" for trace in traces):
        raise AssertionError("a stream did not complete")
    return {**_gap_p99s([[(t, chunks) for t, (chunks, _) in trace.updates]
                         for trace in traces], delay_s), "all_done_s": wall}


def _gap_p99s(streams: Sequence[Sequence[tuple[float, int]]], delay_s: float
              ) -> dict[str, Any]:
    """The p99 of every stream's excess gaps, owing the text cadence and (`..._chunks_only`)
    not owing it (`bench.clients.excess_gaps`)."""
    gaps = [gap for arrivals in streams for gap in excess_gaps(arrivals, delay_s)]
    raw = [gap for arrivals in streams for gap in excess_gaps(arrivals, delay_s, cadence_s=0)]
    return {"gap_p99_s": percentile(gaps, 99), "gap_p99_chunks_only_s": percentile(raw, 99),
            "gap_max_s": max(gaps, default=0.0), "gaps": len(gaps)}


async def _followers(base: str, request_ids: Sequence[str], headers: Sequence[dict[str, str]],
                     followers: int, delay_s: float) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=None, limits=LIMITS) as http:
        followed = await asyncio.gather(*(
            follow_sse(http, f"{base}/api/side-questions/{request_id}/events", header)
            for request_id, header in zip(request_ids, headers, strict=True)
            for _ in range(followers)))
    return {**_gap_p99s([[(t, words_in_answer(data)) for t, data in events]
                         for events in followed], delay_s),
            "longest": max(followed, key=len)}


async def _ask(base: str, parents: Sequence[tuple[tuple[str, str], str]], question: str
               ) -> list[str]:
    async with httpx.AsyncClient(timeout=120) as http:
        answers = await asyncio.gather(*(
            http.post(f"{base}/api/conversations/{conv}/side-questions",
                      json={"question": question, "client_request_id": uuid.uuid4().hex},
                      headers={"Authorization": f"Bearer {who[1]}"})
            for who, conv in parents))
    for answer in answers:
        if answer.status_code != 202:
            raise AssertionError(f"side submit answered {answer.status_code}: {answer.text}")
    return [answer.json()["id"] for answer in answers]


def main(argv: Sequence[str] | None = None, shared: Servers | None = None) -> dict[str, Any]:
    def extra(parser: Any) -> None:
        parser.add_argument("--token-delay-ms", type=int, default=20)

    options = arguments("concurrency", __doc__.splitlines()[0], rounds=3, argv=argv,
                        extra=extra)
    delay_s = options.token_delay_ms / 1000
    mode = "short" if options.short else "full"
    message, question = MESSAGES[mode], SIDE_QUESTION
    streams, followers = dict(zip(SIZES, STREAMS[mode], strict=True)), FOLLOWERS[mode]
    report = Report("concurrency", options)
    goal = ("≤ 1.5× (≤ 2×)", 1.5, 2.0)
    gap = {size: report.figure(f"concurrency.gap_p99_{size}_s",
                               f"{n} streams: event gap p99 beyond model", "s",
                               "bare Gradio, same updates",
                               *(goal if size != "mid" else ("—",)), resolution=0.001)
           for size, n in streams.items()}
    chunks_only = {size: report.figure(f"concurrency.gap_p99_chunks_only_{size}_s",
                                       f"{n} streams: gap p99, chunks only", "s",
                                       "bare Gradio, same updates", "—", resolution=0.001)
                   for size, n in streams.items() if size != "mid"}
    largest = {size: report.figure(f"concurrency.gap_max_{size}_s",
                                   f"{n} streams: largest gap beyond model", "s",
                                   "bare Gradio, same updates", "—", resolution=0.001)
               for size, n in streams.items() if size != "mid"}
    done = {size: report.figure(f"concurrency.all_done_{size}_s", f"{n} streams: all finished",
                                "s", "bare Gradio, same updates", "—")
            for size, n in streams.items()}
    sse = report.figure("concurrency.sse_gap_p99_s",
                        f"{PARENTS * followers} SSE followers: gap p99 beyond model", "s",
                        "bare FastAPI SSE, same events", "≤ 1.5× (≤ 2×)", 1.5, 2.0,
                        resolution=0.001)
    sse_chunks_only = report.figure("concurrency.sse_gap_p99_chunks_only_s",
                                    f"{PARENTS * followers} SSE followers: gap p99, chunks only",
                                    "s", "bare FastAPI SSE, same events", "—", resolution=0.001)
    most = max(streams.values())
    with using(shared) as servers:
        app, bare, bare_api = servers.ready(
            servers.app(OFFLINE_TOKEN_DELAY_MS=options.token_delay_ms,
                        UI_CONCURRENCY_LIMIT=most, SSE_MAX_PER_USER=followers),
            servers.bare_gradio(concurrency=most), servers.bare_api())
        assert bare.replay is not None and bare_api.replay is not None
        app_caller = QueueCaller(app.url, "agent_handler")
        bare_caller = QueueCaller(bare.url, "agent_handler")
        identities = [demo_identity(app.base) for _ in range(max(most, PARENTS + 1))]
        # The parents' turns (their snapshots), and one run alone to record.
        parents_run = asyncio.run(_parents(app_caller, identities[:PARENTS], PARENT_MESSAGE))
        solo = app_caller.call_once([message, None, "", *identities[-1], "ss-dev", None])
        save_replay(bare.replay, {message: recording([v for _, v in solo.updates], delay_s)})
        report.extra["updates_per_stream"] = len(solo.updates)
        for size, n in streams.items():
            results = rotate(options.rounds, {
                "app": lambda r, n=n: asyncio.run(_streams(
                    app_caller, identities[:n], message, delay_s)),
                "bare": lambda r, n=n: asyncio.run(_streams(
                    bare_caller, [BARE_IDENTITY] * n, message, delay_s))})
            for ours, base in zip(results["app"], results["bare"], strict=True):
                gap[size].add(base["gap_p99_s"], ours["gap_p99_s"])
                if size in chunks_only:
                    chunks_only[size].add(base["gap_p99_chunks_only_s"],
                                          ours["gap_p99_chunks_only_s"])
                    largest[size].add(base["gap_max_s"], ours["gap_max_s"])
                done[size].add(base["all_done_s"], ours["all_done_s"])

        def app_followers(number: int) -> dict[str, Any]:
            ids = asyncio.run(_ask(app.base, parents_run, question))
            result = asyncio.run(_followers(app.base, ids, [
                {"Authorization": f"Bearer {who[1]}"} for who, _ in parents_run],
                followers, delay_s))
            if number == 0:  # the first round runs the app first: the bare replays this
                events = [data for _, data in result["longest"]]
                save_replay(bare_api.replay, recording(events, delay_s, words=words_in_answer))
                report.extra["sse_events_recorded"] = len(events)
            return result

        results = rotate(options.rounds, {
            "app": app_followers,
            "bare": lambda r: asyncio.run(_followers(
                bare_api.base, ["replay"] * PARENTS, [{}] * PARENTS, followers, delay_s))})
        for ours, base in zip(results["app"], results["bare"], strict=True):
            sse.add(base["gap_p99_s"], ours["gap_p99_s"])
            sse_chunks_only.add(base["gap_p99_chunks_only_s"], ours["gap_p99_chunks_only_s"])
    report.extra.update(token_delay_ms=options.token_delay_ms, message=message,
                        side_question=question, streams=streams,
                        sse_followers=PARENTS * followers)
    return report.finish()


async def _parents(caller: QueueCaller, identities: Sequence[tuple[str, str]], message: str
                   ) -> list[tuple[tuple[str, str], str]]:
    """One conversation per visitor with a finished turn (a snapshot to ask about)."""
    async with httpx.AsyncClient(timeout=None, limits=LIMITS) as http:
        traces = await asyncio.gather(*(caller.call(http, [message, None, "", *who, "ss-dev",
                                                           None]) for who in identities))
    return [(who, trace.updates[-1][1][1][0]["conv_id"])
            for who, trace in zip(identities, traces, strict=True)]


if __name__ == "__main__":
    main()
