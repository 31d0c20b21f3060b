"""History length: a "hello" turn in conversations with 10, 1 000 and 10 000 earlier messages,
and side-question history pages at 1 000, 10 000 and 100 000 rows; each against the small
case in the same run.

One app process on SQLite. The long conversations repeat a real one-tool turn of the app
(user, tool call, tool result, answer, with its run), written through the storage layer;
the side-question rows likewise. Each round takes every size once, in rotating order: a
turn through gradio_client (the whole turn and its first update), and the newest page and a
page half-way back (`before=`) of each side history (medians of `--pages` reads). Each turn
is also made once over Gradio's queue protocol (`QueueCaller`, no goal): gradio_client's
thread polls every 50 ms, and a turn of ~0.1 s that ends just after a poll reads 50 ms
longer, so its ratio moved between 1.0x and 1.45x from run to run on one machine (three
runs of 2026-12-07); the queue protocol times the same turn without that step.

    python bench/history.py [--rounds 5] [--pages 5] [--short] [--out ...]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/history.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from gradio_client import Client

from bench.clients import QueueCaller, demo_identity, gradio_turn
from bench.common import Server, Servers, using
from bench.report import Report, arguments, rotate
from bench.seed import copy_turns, seed_side_history

TEMPLATE = "which environments are there?"
MESSAGE = "hello"
FULL = {"messages": (10, 1_000, 10_000), "side_rows": (1_000, 10_000, 100_000)}
SHORT = {"messages": (10, 100, 1_000), "side_rows": (100, 1_000, 5_000)}
SIZES = ("small", "mid", "large")


def _page_s(server: Server, parent: str, token: str, before: int | None, reads: int) -> float:
    url = f"{server.base}/api/conversations/{parent}/side-questions"
    params = {"before": before} if before else {}
    times = []
    with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {token}"}) as http:
        for _ in range(reads):
            started = time.perf_counter()
            page = http.get(url, params=params)
            times.append(time.perf_counter() - started)
            page.raise_for_status()
            assert len(page.json()["items"]) == 20, page.text[:300]
    return statistics.median(times)


def main(argv: Sequence[str] | None = None, shared: Servers | None = None) -> dict[str, Any]:
    options = arguments("history", __doc__.splitlines()[0], rounds=5, argv=argv, extra=lambda p:
                        p.add_argument("--pages", type=int, default=None,
                                       help="reads of each side page per round (5; 2 short)"))
    sizes = SHORT if options.short else FULL
    reads = options.pages or (2 if options.short else 5)
    report = Report("history", options)
    small_m, small_s = sizes["messages"][0], sizes["side_rows"][0]
    figures: dict[tuple[str, str], Any] = {}
    for size, messages, rows in zip(SIZES[1:], sizes["messages"][1:], sizes["side_rows"][1:],
                                    strict=True):
        goal = ("≤ 1.2×", 1.2) if size == "large" else ("—",)
        figures[(size, "turn_s")] = report.figure(
            f"history.turn_{size}_s", f"turn, {messages} earlier messages", "s",
            f"same turn with {small_m}", *goal)
        figures[(size, "direct_s")] = report.figure(
            f"history.turn_direct_{size}_s",
            f"turn, {messages} earlier messages, queue protocol", "s",
            f"same turn with {small_m}", "—")
        figures[(size, "first_update_s")] = report.figure(
            f"history.first_update_{size}_s", f"first update, {messages} earlier messages",
            "s", f"same turn with {small_m}", "—")
        figures[(size, "page_s")] = report.figure(
            f"history.side_page_{size}_s", f"side history page, {rows} rows", "s",
            f"same page at {small_s}", *goal)
        figures[(size, "deep_page_s")] = report.figure(
            f"history.side_deep_page_{size}_s", f"side page half-way back, {rows} rows", "s",
            f"same page at {small_s}", "—")
    with using(shared) as servers:
        (app,) = servers.ready(servers.app())
        assert app.database_url is not None
        client = Client(app.url, verbose=False)
        caller = QueueCaller(app.url, "agent_handler")
        identity = demo_identity(app.base)
        template = gradio_turn(client, TEMPLATE, identity).updates[-1][1][1][0]["conv_id"]
        convs, parents = {}, {}
        for size, messages, rows in zip(SIZES, sizes["messages"], sizes["side_rows"],
                                        strict=True):
            convs[size], report.extra[f"messages_{size}"] = copy_turns(
                app.database_url, template, identity[0], messages)
            parents[size] = seed_side_history(app.database_url, identity[0], rows)
            report.extra[f"side_rows_{size}"] = rows

        def one(size: str, rows: int) -> dict[str, float]:
            trace = gradio_turn(client, MESSAGE, identity, convs[size])
            direct = caller.call_once([MESSAGE, None, convs[size], *identity, "ss-dev", None])
            if direct.final_status() != "completed":
                raise AssertionError(f"{MESSAGE!r} did not complete: {direct.updates[-1:]}")
            return {"turn_s": trace.total_s, "direct_s": direct.total_s,
                    "first_update_s": trace.first_update_s,
                    "page_s": _page_s(app, parents[size], identity[1], None, reads),
                    "deep_page_s": _page_s(app, parents[size], identity[1], rows // 2, reads)}

        results = rotate(options.rounds, {
            size: (lambda n, size=size, rows=rows: one(size, rows))
            for size, rows in zip(SIZES, sizes["side_rows"], strict=True)})
        client.close()
    for number, small in enumerate(results["small"]):
        for (size, value), figure in figures.items():
            figure.add(small[value], results[size][number][value])
    return report.finish()


if __name__ == "__main__":
    main()
