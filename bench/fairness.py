"""Fair-share benchmark: another person's one-tool run and side question while one user
floods the app with 40 slow runs and 10 slow side questions, against the same run unloaded.

Alternates unloaded and loaded rounds in one run (machine noise hits both alike), prints
the table of `bench.report` (loaded against unloaded; target: at most 2) and how the flood
was answered (runs admitted at once, refusals). Writes bench/results/fairness.json.

    python bench/fairness.py [--rounds 3] [--token-delay-ms 10] [--out ...]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.settings import Settings, apply_offline_defaults  # noqa: E402

apply_offline_defaults()

from gradio_client import Client  # noqa: E402

from bench.report import Report, arguments  # noqa: E402
from tests.web.conftest import LiveServer, start_server  # noqa: E402
from tests.web.side_support import LONG_SIDE, auth, clone_parent, run_main_turn  # noqa: E402

FLOOD = "what can you do?"
QUESTION = "which environments are there?"


def _other_person(server: LiveServer, client: Client, user: tuple[str, str]) -> tuple[float, int]:
    """Seconds for one one-tool run, and the status of one side question."""
    started = time.perf_counter()
    _, events = client.predict(QUESTION, None, "", *user, "ss-dev", api_name="/agent_handler")
    seconds = time.perf_counter() - started
    assert events[-1]["status"] == "completed", events[-1]
    side = httpx.post(f"{server.url}/api/conversations/bench-other/side-questions",
                      json={"question": "which tools did you use?"}, headers=auth(user[1]),
                      timeout=60)
    return seconds, side.status_code


def _flood(server: LiveServer, client: Client, user: tuple[str, str]) -> tuple[list, list]:
    jobs = [client.submit(FLOOD, None, "", *user, "ss-dev", api_name="/agent_handler")
            for _ in range(40)]
    sides = [httpx.post(f"{server.url}/api/conversations/"
                        f"{clone_parent(server, 'bench-flood', user[0])}/side-questions",
                        json={"question": LONG_SIDE}, headers=auth(user[1]), timeout=60)
             for _ in range(10)]
    agent = server.runtime.agent
    deadline = time.perf_counter() + 30
    while time.perf_counter() < deadline and sum(
            1 for live in list(agent._live.values())
            if live.owner_id == user[0] and not live.finished.is_set()) < 2:
        time.sleep(0.02)
    return jobs, sides


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    options = arguments("fairness", __doc__.splitlines()[0], rounds=3, argv=argv,
                        extra=lambda p: p.add_argument("--token-delay-ms", type=int,
                                                       default=10))
    report = Report("fairness", options)
    figure = report.figure("fairness.loaded_run_s", "one-tool run during the flood", "s",
                           "the same run, nobody else", "≤ 2×", 2.0)
    tmp = Path(tempfile.mkdtemp(prefix="bench-fairness-"))
    server = start_server(Settings(database_url=f"sqlite:///{tmp}/app.db", data_dir=tmp / "data",
                                   auth_jwt_secret="bench-" + "b" * 40,
                                   offline_token_delay_ms=options.token_delay_ms))
    flood_stats: list[dict[str, int]] = []
    try:
        flooder, other = server.token("editor"), server.token("viewer")
        run_main_turn(server, "bench-flood", *flooder)
        run_main_turn(server, "bench-other", *other)
        client = Client(server.agent_url, verbose=False)
        for _ in range(options.rounds):
            unloaded, status = _other_person(server, client, other)
            assert status in (202, 409), status  # 409: the previous one still runs
            jobs, sides = _flood(server, client, flooder)
            loaded, status = _other_person(server, client, other)
            figure.add(unloaded, loaded)
            refused = 0
            for job in jobs:
                try:
                    job.result(timeout=300)
                except Exception:  # a refusal: over the flooder's share
                    refused += 1
            flood_stats.append({"side_status_other": status, "runs_refused": refused,
                                "side_accepted": sum(s.status_code == 202 for s in sides),
                                "side_refused": sum(s.status_code == 429 for s in sides)})
        client.close()
    finally:
        server.stop()
    for number, stats in enumerate(flood_stats, 1):
        print(f"round {number}: {json.dumps(stats)}")
    report.extra["flood"] = flood_stats
    return report.finish()


if __name__ == "__main__":
    main()
