"""Memory: the resident set of `python app.py` after 0, 250, 500 and 1 000 conversations,
against a bare Gradio app (replaying the same updates) driven the same way.

Each conversation is what a new visitor does: a new Gradio session (gradio_client's
`reset_session`, as a new browser tab), a new demo identity for the app, and one one-tool
turn in a new conversation. Both servers run side by side and take the conversations in
alternating chunks of 25, so load from elsewhere hits both alike. "0" is measured after one
warm-up conversation each (the first turn imports litellm; that is start-up, not growth).
Growth is RSS at a checkpoint minus RSS at 0. `--rounds` repeats it all with new processes
(under `all.py --short` the processes are shared with the other scripts: one round).

    python bench/memory.py [--rounds 1] [--short] [--out bench/results/memory.json]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/memory.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gradio_client import Client

from bench.clients import BARE_IDENTITY, demo_identity, gradio_turn, recording, save_replay
from bench.common import Server, Servers, using
from bench.report import Report, arguments

MESSAGE = "which environments are there?"
CHECKPOINTS = {"full": (250, 500, 1_000), "short": (5, 10, 20)}
SIZES = ("quarter", "half", "all")
CHUNK = 25


def _conversations(server: Server, client: Client, count: int, bare: bool) -> None:
    for _ in range(count):
        client.reset_session()
        gradio_turn(client, MESSAGE, BARE_IDENTITY if bare else demo_identity(server.base))


def trajectory(servers: Servers, checkpoints: Sequence[int]) -> dict[str, list[float]]:
    """RSS (MB) of each server at 0 and at every checkpoint."""
    app, bare = servers.ready(servers.app(), servers.bare_gradio())
    assert bare.replay is not None
    clients = {"app": Client(app.url, verbose=False), "bare": Client(bare.url, verbose=False)}
    named = {"app": app, "bare": bare}
    warm_up = gradio_turn(clients["app"], MESSAGE, demo_identity(app.base))
    save_replay(bare.replay, {MESSAGE: recording([v for _, v in warm_up.updates], 0.0)})
    gradio_turn(clients["bare"], MESSAGE, BARE_IDENTITY)
    rss = {name: [server.rss_mb()] for name, server in named.items()}
    done, turn = 0, 0
    for checkpoint in checkpoints:
        while done < checkpoint:
            chunk = min(CHUNK, checkpoint - done)
            for name in ["app", "bare"] if turn % 2 == 0 else ["bare", "app"]:
                _conversations(named[name], clients[name], chunk, name == "bare")
            done, turn = done + chunk, turn + 1
        for name, server in named.items():
            rss[name].append(server.rss_mb())
    for client in clients.values():
        client.close()
    return rss


def main(argv: Sequence[str] | None = None, shared: Servers | None = None) -> dict[str, Any]:
    options = arguments("memory", __doc__.splitlines()[0], rounds=1, argv=argv)
    checkpoints = CHECKPOINTS["short" if options.short else "full"]
    report = Report("memory", options)
    figures = [report.figure(
        f"memory.rss_growth_{size}_mb", f"RSS growth after {count} conversations", "MB",
        "bare Gradio, same driver",
        *(("≤ 1.5× (≤ 100 MB)", 1.5) if size == "all" else ("—",)),
        floor_value=100.0 if size == "all" else None, resolution=1.0)
        for size, count in zip(SIZES, checkpoints, strict=True)]
    report.extra["rss_mb"] = []
    for _ in range(1 if shared else options.rounds):
        with using(shared) as servers:
            rss = trajectory(servers, checkpoints)
        report.extra["rss_mb"].append({"checkpoints": [0, *checkpoints], **rss})
        for index, figure in enumerate(figures, 1):
            figure.add(rss["bare"][index] - rss["bare"][0], rss["app"][index] - rss["app"][0])
    last = figures[-1]
    report.extra["per_conversation_kb"] = {
        "app": 1024 * last.ours[-1] / checkpoints[-1],
        "bare": 1024 * last.baseline[-1] / checkpoints[-1]}
    return report.finish()


if __name__ == "__main__":
    main()
