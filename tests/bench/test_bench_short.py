"""The benchmark suite (bench/, issue 16) runs from a checkout in its short mode and reports
every figure with numbers. Values are not checked: they are for people, measured on a shared
machine; this only proves that each script runs end to end and writes what it promises."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import postgres_problem

ROOT = Path(__file__).resolve().parent.parent.parent
SIZES = ("mid", "large")
FIGURES = {
    "startup": ["startup.http_200_s", "startup.first_turn_s", "startup.first_turn_after_200_s",
                "startup.peak_rss_mb"],
    "turn": [f"turn.{kind}_{what}" for kind in ("one_tool", "no_tool")
             for what in ("s", "direct_s", "first_token_s")],
    "side": [f"side.{backend}.{what}" for backend in ("sqlite", "postgresql")
             for what in ("submit_p50_s", "submit_p99_s", "first_event_s")],
    "history": [f"history.{what}_{size}_s" for size in SIZES
                for what in ("turn", "turn_direct", "first_update", "side_page",
                                 "side_deep_page")],
    "concurrency": [f"concurrency.{what}_{size}_s" for size in ("small", "mid", "large")
                    for what in ("gap_p99", "all_done")]
    + [f"concurrency.{what}_{size}_s" for size in ("small", "large")
       for what in ("gap_p99_chunks_only", "gap_max")]
    + ["concurrency.sse_gap_p99_s", "concurrency.sse_gap_p99_chunks_only_s"],
    "memory": [f"memory.rss_growth_{size}_mb" for size in ("quarter", "half", "all")],
}


def _numbers(summary: dict) -> list[float]:
    return [summary[part][stat] for part in ("baseline", "ours", "ratio")
            for stat in ("median", "min", "max")]


@pytest.mark.bench
def test_the_short_suite_reports_every_figure_with_numbers(tmp_path: Path) -> None:
    postgres = postgres_problem() is None or os.environ.get("CI", "").lower() == "true"
    finished = subprocess.run([sys.executable, "bench/all.py", "--short", "--out-dir",
                               str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                              timeout=1800)
    assert finished.returncode == 0, finished.stdout[-4000:] + finished.stderr[-4000:]
    combined = json.loads((tmp_path / "all.json").read_text())
    for script, keys in FIGURES.items():
        written = json.loads((tmp_path / f"{script}.json").read_text())
        expected = [key for key in keys if postgres or ".postgresql." not in key]
        assert sorted(written["figures"]) == sorted(expected), script
        for key in expected:
            numbers = _numbers(combined["figures"][key])
            assert all(isinstance(n, (int, float)) and math.isfinite(n) for n in numbers), (
                key, combined["figures"][key])
        assert written["load_before"]["uptime"] and written["load_after"]["uptime"]
    assert "figure" in finished.stdout and "ratio" in finished.stdout  # the printed table
