"""Fair-share benchmark: another person's one-tool run and side question while one user
floods the app with 40 slow runs and 10 slow side questions, against the same run unloaded.

Alternates unloaded and loaded rounds in one run (machine noise hits both alike), prints
medians and the ratio loaded/unloaded (target: at most 2), and how the flood was answered
(runs admitted at once, refusals). Writes bench/results/fairness.json.

    python bench/fairness.py [--rounds 3] [--token-delay-ms 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.settings import Settings, apply_offline_defaults  # noqa: E402

apply_offline_defaults()

from gradio_client import Client  # noqa: E402

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--token-delay-ms", type=int, default=10)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-fairness-"))
    server = start_server(Settings(database_url=f"sqlite:///{tmp}/app.db", data_dir=tmp / "data",
                                   auth_jwt_secret="bench-" + "b" * 40,
                                   offline_token_delay_ms=args.token_delay_ms))
    results: dict[str, list[float]] = {"unloaded_s": [], "loaded_s": []}
    flood_stats: list[dict[str, int]] = []
    try:
        flooder, other = server.token("editor"), server.token("viewer")
        run_main_turn(server, "bench-flood", *flooder)
        run_main_turn(server, "bench-other", *other)
        client = Client(server.agent_url, verbose=False)
        for _ in range(args.rounds):
            seconds, status = _other_person(server, client, other)
            results["unloaded_s"].append(seconds)
            assert status in (202, 409), status  # 409: the previous one still runs
            jobs, sides = _flood(server, client, flooder)
            seconds, status = _other_person(server, client, other)
            results["loaded_s"].append(seconds)
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
    unloaded, loaded = (statistics.median(results[k]) for k in ("unloaded_s", "loaded_s"))
    ratio = loaded / unloaded if unloaded else float("inf")
    print(f"{'case':<34}{'median s':>10}")
    print(f"{'one-tool run, nobody else':<34}{unloaded:>10.2f}")
    print(f"{'one-tool run, during the flood':<34}{loaded:>10.2f}")
    print(f"{'ratio (target <= 2)':<34}{ratio:>10.2f}")
    for number, stats in enumerate(flood_stats, 1):
        print(f"round {number}: {json.dumps(stats)}")
    out = ROOT / "bench" / "results" / "fairness.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rounds": results, "median_unloaded_s": unloaded,
                               "median_loaded_s": loaded, "ratio": ratio,
                               "flood": flood_stats}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
