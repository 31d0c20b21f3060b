"""Start-up: `python app.py` against a bare Gradio app with an endpoint of the same shape.

Each round starts each server as a new process on a fresh database and measures, from the
process start: HTTP 200 of the page, the first completed turn through gradio_client (the
first visitor's answer: "which environments are there?", one tool), and the peak resident
memory after that turn. The bare app replays the updates the app sent for the same message.

    python bench/startup.py [--rounds 5] [--short] [--out bench/results/startup.json]
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/startup.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gradio_client import Client

from bench.clients import BARE_IDENTITY, demo_identity, gradio_turn, recording, save_replay
from bench.common import Server, Servers, start_app, start_bare_gradio
from bench.report import Report, arguments, rotate

MESSAGE = "which environments are there?"


def first_turn(server: Server, identity: tuple[str, str] | None) -> dict[str, Any]:
    """Wait for 200, then one turn as soon as it answers; times from the process start."""
    try:
        server.wait_ready()
        client = Client(server.url, verbose=False)
        trace = gradio_turn(client, MESSAGE, identity or demo_identity(server.base))
        answered_s = time.perf_counter() - server.spawned_at
        client.close()
        return {"ready_s": server.ready_s, "first_turn_s": answered_s,
                "after_ready_s": answered_s - (server.ready_s or 0),
                "peak_rss_mb": server.peak_rss_mb(), "trace": trace}
    finally:
        server.stop()
        server.log.unlink(missing_ok=True)


def main(argv: Sequence[str] | None = None, shared: Servers | None = None) -> dict[str, Any]:
    """`shared` is not used: every round starts new processes, which is what it measures."""
    options = arguments("startup", __doc__.splitlines()[0], rounds=5, argv=argv)
    report = Report("startup", options)
    ready = report.figure("startup.http_200_s", "HTTP 200 after start", "s", "bare gr.Blocks",
                          "≤ 1.1× (≤ 1.3×)", 1.1, 1.3)
    first = report.figure("startup.first_turn_s", "first completed turn after start", "s",
                          "bare Gradio app", "≤ 1.5× (≤ 2×)", 1.5, 2.0)
    after = report.figure("startup.first_turn_after_200_s", "first turn after HTTP 200", "s",
                          "bare Gradio app", "—")
    peak = report.figure("startup.peak_rss_mb", "peak RSS after the first turn", "MB",
                         "bare Gradio", "≤ 2×", 2.0)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        replay = Path(tmp) / "replay.json"

        def app(number: int) -> dict[str, Any]:
            measured = first_turn(start_app(f"sqlite:///{tmp}/app-{number}.db",
                                            Path(tmp) / f"data-{number}"), None)
            if not replay.exists():  # the bare app's first call reads it
                save_replay(replay, {MESSAGE: recording(
                    [value for _, value in measured["trace"].updates], 0.0)})
            return measured

        def bare(number: int) -> dict[str, Any]:
            return first_turn(start_bare_gradio(replay), BARE_IDENTITY)

        if not options.short:  # warm the disk cache for both, and record
            rotate(1, {"app": lambda n: app(-1), "bare": bare})
        rounds = rotate(options.rounds, {"app": app, "bare": bare})
    for ours, base in zip(rounds["app"], rounds["bare"], strict=True):
        ready.add(base["ready_s"], ours["ready_s"])
        first.add(base["first_turn_s"], ours["first_turn_s"])
        after.add(base["after_ready_s"], ours["after_ready_s"])
        peak.add(base["peak_rss_mb"], ours["peak_rss_mb"])
    return report.finish()


if __name__ == "__main__":
    main()
