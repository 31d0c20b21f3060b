"""Turns: a one-tool and a no-tool turn through gradio_client against a bare Gradio endpoint
that yields the same updates with the same payloads (recorded from the app in this run).

Both servers run side by side for the whole run; each round makes `--turns` turns of each
kind on each (a new conversation every turn, a new demo visitor every round) and keeps the
medians: the whole turn through gradio_client (what an API caller waits), and the same turn
over Gradio's queue protocol without gradio_client's 50 ms polling (`QueueCaller`), with the
time until the first update holding a token event.

    python bench/turn.py [--rounds 6] [--turns 5] [--short] [--out bench/results/turn.json]
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/turn.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gradio_client import Client

from bench.clients import (
    BARE_IDENTITY,
    QueueCaller,
    demo_identity,
    gradio_turn,
    recording,
    save_replay,
)
from bench.common import Server, Servers, using
from bench.report import Report, arguments, rotate

ONE_TOOL = "which environments are there?"  # list_environments, then the answer
NO_TOOL = "hello"
KINDS = {"one_tool": ONE_TOOL, "no_tool": NO_TOOL}


def _turns(server: Server, client: Client, caller: QueueCaller,
           identity: tuple[str, str] | None, count: int) -> dict[str, dict[str, float]]:
    """Medians over `count` turns of each kind and client: total and first-token seconds."""
    who = identity or demo_identity(server.base)
    measured: dict[str, dict[str, float]] = {}
    for kind, message in KINDS.items():
        traces = [gradio_turn(client, message, who) for _ in range(count)]
        direct = [caller.call_once([message, None, "", *who, "ss-dev", None])
                  for _ in range(count)]
        measured[kind] = {"total_s": statistics.median(t.total_s for t in traces),
                          "direct_s": statistics.median(t.total_s for t in direct),
                          "first_token_s": statistics.median(t.first_token_s()
                                                             for t in direct)}
    return measured


def main(argv: Sequence[str] | None = None, shared: Servers | None = None) -> dict[str, Any]:
    options = arguments("turn", __doc__.splitlines()[0], rounds=6, argv=argv, extra=lambda p:
                        p.add_argument("--turns", type=int, default=None,
                                       help="turns of each kind per round (5; 2 in --short)"))
    turns = options.turns or (2 if options.short else 5)
    report = Report("turn", options)
    figures = {
        (kind, value): report.figure(
            f"turn.{kind}_{key}", f"{kind.replace('_', '-')} turn{label}", "s",
            "bare Gradio endpoint", *(("≤ 1.2× (≤ 1.5×)", 1.2, 1.5)
                                      if (kind, value) == ("one_tool", "total_s") else ("—",)))
        for value, key, label in (("total_s", "s", ", gradio_client"),
                                  ("direct_s", "direct_s", ", queue protocol"),
                                  ("first_token_s", "first_token_s", ": first token event"))
        for kind in KINDS}
    with using(shared) as servers:
        app, bare = servers.ready(servers.app(), servers.bare_gradio())
        app_client = Client(app.url, verbose=False)
        bare_client = Client(bare.url, verbose=False)
        identity = demo_identity(app.base)
        assert bare.replay is not None
        save_replay(bare.replay, {message: recording(
            [value for _, value in gradio_turn(app_client, message, identity).updates], 0.0)
            for message in KINDS.values()})
        app_caller = QueueCaller(app.url, "agent_handler")
        bare_caller = QueueCaller(bare.url, "agent_handler")
        rounds = rotate(options.rounds, {
            "app": lambda n: _turns(app, app_client, app_caller, None, turns),
            "bare": lambda n: _turns(bare, bare_client, bare_caller, BARE_IDENTITY, turns)})
        app_client.close()
        bare_client.close()
    for ours, base in zip(rounds["app"], rounds["bare"], strict=True):
        for (kind, value), figure in figures.items():
            figure.add(base[kind][value], ours[kind][value])
    report.extra["turns_per_round"] = turns
    return report.finish()


if __name__ == "__main__":
    main()
