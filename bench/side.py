"""Side questions: submit (POST → 202) p50/p99 and the time to the first SSE event, against
a bare FastAPI endpoint doing one INSERT, on SQLite and on PostgreSQL.

Per backend the app and the bare API run side by side on their own database (PostgreSQL:
private schemas in database `test`, dropped afterwards). The app's parent conversation
gets its snapshot from one real turn. Each round asks `--asks` questions one after another
on each server: POST (timed), then its event stream (first event timed), read to the end,
so the next submit never meets a running one.

    python bench/side.py [--rounds 4] [--asks 50] [--short] [--out bench/results/side.json]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/side.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench.clients import QueueCaller, demo_identity, follow_sse
from bench.common import Server, Servers, using
from bench.report import Report, arguments, percentile, rotate
from bench.seed import postgres_problem, postgres_schemas

QUESTION = "which tools did you use?"  # a one-line answer from the offline model
MAIN_QUESTION = "what can you do?"
TERMINAL = {"completed", "failed", "cancelled", "interrupted"}


def parent_with_snapshot(app: Server) -> tuple[tuple[str, str], str]:
    """A demo visitor and a conversation of theirs that has had one real turn."""
    identity = demo_identity(app.base)
    trace = QueueCaller(app.url, "agent_handler").call_once(
        [MAIN_QUESTION, None, "", *identity, "ss-dev", None])
    return identity, trace.updates[-1][1][1][0]["conv_id"]


async def _asks(base: str, conv_id: str, headers: dict[str, str], count: int,
                ends: bool) -> dict[str, Any]:
    submits: list[float] = []
    firsts: list[float] = []
    async with httpx.AsyncClient(timeout=120) as http:
        for _ in range(count):
            started = time.perf_counter()
            answer = await http.post(f"{base}/api/conversations/{conv_id}/side-questions",
                                     json={"question": QUESTION,
                                           "client_request_id": uuid.uuid4().hex},
                                     headers=headers)
            submits.append(time.perf_counter() - started)
            if answer.status_code != 202:
                raise AssertionError(f"submit answered {answer.status_code}: {answer.text}")
            events = await follow_sse(http, f"{base}/api/side-questions/"
                                      f"{answer.json()['id']}/events", headers)
            firsts.append(events[0][0])
            if ends and events[-1][1].get("status") not in TERMINAL:
                raise AssertionError(f"the side question did not end: {events[-1]}")
    return {"p50": percentile(submits, 50), "p99": percentile(submits, 99),
            "first_event": statistics.median(firsts), "submits": submits}


def measure_backend(report: Report, backend: str, app: Server, bare: Server, rounds: int,
                    asks: int) -> None:
    goal = ("≤ 1.5× (≤ 2×)", 1.5, 2.0)
    p50 = report.figure(f"side.{backend}.submit_p50_s", f"side submit p50, {backend}", "s",
                        "bare FastAPI + one insert", "—")
    p99 = report.figure(f"side.{backend}.submit_p99_s", f"side submit p99, {backend}", "s",
                        "bare FastAPI + one insert", *goal)
    first = report.figure(f"side.{backend}.first_event_s", f"side first SSE event, {backend}",
                          "s", "bare FastAPI + one select", "—")
    identity, conv_id = parent_with_snapshot(app)
    headers = {"Authorization": f"Bearer {identity[1]}"}
    results = rotate(rounds, {
        "app": lambda n: asyncio.run(_asks(app.base, conv_id, headers, asks, True)),
        "bare": lambda n: asyncio.run(_asks(bare.base, "bench-parent", {}, asks, False))})
    for ours, base in zip(results["app"], results["bare"], strict=True):
        p50.add(base["p50"], ours["p50"])
        p99.add(base["p99"], ours["p99"])
        first.add(base["first_event"], ours["first_event"])
    report.extra[f"{backend}_pooled_submit_p99_s"] = {
        name: percentile([s for one in values for s in one["submits"]], 99)
        for name, values in (("bare", results["bare"]), ("app", results["app"]))}


def main(argv: Sequence[str] | None = None, shared: Servers | None = None) -> dict[str, Any]:
    options = arguments("side", __doc__.splitlines()[0], rounds=4, argv=argv, extra=lambda p:
                        p.add_argument("--asks", type=int, default=None,
                                       help="questions per round and server (50; 5 in --short)"))
    asks = options.asks or (5 if options.short else 50)
    report = Report("side", options)
    report.extra["asks_per_round"] = asks
    problem = postgres_problem()
    with using(shared) as servers:
        on_sqlite = servers.app(), servers.bare_api()
        with postgres_schemas(0 if problem else 2) as schemas:
            on_postgres = [servers.app(database_url=schemas[0]),
                           servers.bare_api(database_url=schemas[1])] if schemas else []
            servers.ready(*on_sqlite, *on_postgres)
            measure_backend(report, "sqlite", *on_sqlite, options.rounds, asks)
            if on_postgres:
                measure_backend(report, "postgresql", *on_postgres, options.rounds, asks)
            for server in on_postgres:  # before their schemas are dropped
                servers.stop(server)
    if problem:
        print(f"PostgreSQL skipped: {problem}")
        report.extra["postgresql_skipped"] = problem
    return report.finish()


if __name__ == "__main__":
    main()
