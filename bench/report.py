"""Rounds, statistics, the table and the JSON every benchmark script shares.

A figure holds one value per round for the baseline and for the app. Rounds alternate the
order in which the variants run (A B, B A, ...), so a burst of load from elsewhere on this
shared 2-core machine hits both alike; the ratio is computed per round and reported as the
median with its range, beside the medians and ranges of the values themselves.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bench.common import ROOT

__all__ = ["RESULTS", "Figure", "Report", "arguments", "driver_collector_paused", "format_rows",
           "machine_load", "percentile", "rotate", "spread"]

T = TypeVar("T")
RESULTS = ROOT / "bench" / "results"


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linear between the nearest ranks."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def spread(values: Sequence[float]) -> dict[str, Any]:
    """Median and range of a figure's per-round values."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "samples": [round(v, 6) for v in values]}


def rotate(rounds: int, variants: dict[str, Callable[[int], T]]) -> dict[str, list[T]]:
    """Run every variant once per round, starting each round one variant later (A B, B A
    for two), so neither always runs first on a warm or a cold machine; each with the
    driver's garbage collector paused (`driver_collector_paused`)."""
    names = list(variants)
    results: dict[str, list[T]] = {name: [] for name in names}
    for number in range(rounds):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            with driver_collector_paused():
                results[name].append(variants[name](number))
    return results


@contextlib.contextmanager
def driver_collector_paused() -> Iterator[None]:
    """No garbage collection in this (the driver's) process while a round is measured, and
    the round's cyclic garbage collected right after it, outside the measurement (as
    `timeit` pauses the collector).

    The driver holds gradio_client, httpx and every round's results so far; a full pass of
    its collector took 53-64 ms, and while it ran none of the driver's clients read
    anything: with 100 SSE followers in one driver, every follower saw the same 60 ms gap,
    which alone set the p99 of whichever server was measured at that moment (traced
    2026-12-07 with gc callbacks in the driver and the servers: three of six rounds' p99
    were the driver's collections, none the servers'). Refcounting still frees what a
    round drops. With the collector off nothing is promoted, so everything the round made
    is still in the youngest generation, and collecting that one alone frees the round's
    cycles without walking the rest of the process (a full pass per round cost ~1.5 s in a
    test process that has imported the whole app)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.collect(0)
        if was_enabled:
            gc.enable()


@dataclass
class Figure:
    """One row of the table: a baseline value and the app's value per round."""

    key: str
    label: str
    unit: str  # "s", "ms" or "MB"
    baseline_label: str
    goal: str  # as the issue states it, e.g. "≤ 1.2× (≤ 1.5×)"
    goal_ratio: float | None = None  # None: no goal, the figure informs
    floor_ratio: float | None = None  # the floor, where it names one
    floor_value: float | None = None  # or a floor on the app's own value (e.g. ≤ 100 MB)
    # Ratios of quantities that can approach zero (an event gap beyond the model's delay)
    # divide by at least this, in the figure's unit: the measuring resolution.
    resolution: float = 0.0
    baseline: list[float] = field(default_factory=list)
    ours: list[float] = field(default_factory=list)

    def add(self, baseline: float, ours: float) -> None:
        self.baseline.append(baseline)
        self.ours.append(ours)

    def ratios(self) -> list[float]:
        return [ours / max(base, self.resolution) if max(base, self.resolution) > 0
                else math.inf for base, ours in zip(self.baseline, self.ours, strict=True)]

    def summary(self) -> dict[str, Any]:
        ratio = spread(self.ratios())
        verdict = None
        if self.goal_ratio is not None:
            ours = statistics.median(self.ours)
            verdict = "ok" if ratio["median"] <= self.goal_ratio else (
                "floor" if (self.floor_ratio and ratio["median"] <= self.floor_ratio)
                or (self.floor_value is not None and ours <= self.floor_value) else "OVER")
        return {"label": self.label, "unit": self.unit, "baseline_label": self.baseline_label,
                "baseline": spread(self.baseline), "ours": spread(self.ours), "ratio": ratio,
                "goal": self.goal, "goal_ratio": self.goal_ratio,
                "floor_ratio": self.floor_ratio, "floor_value": self.floor_value,
                "verdict": verdict}


def _cell(part: dict[str, Any], digits: int) -> str:
    return f"{part['median']:.{digits}f} ({part['min']:.{digits}f}–{part['max']:.{digits}f})"


def format_rows(figures: dict[str, dict[str, Any]]) -> list[str]:
    """The table: figure, baseline, ours, ratio, goal; medians with (min–max) over rounds."""
    lines = [f"{'figure':<46} {'baseline':<24} {'ours':<24} {'ratio':<20} goal"]
    for summary in figures.values():
        digits = 1 if summary["unit"] == "MB" else 3
        verdict = f"  {summary['verdict']}" if summary["verdict"] else ""
        lines.append(f"{summary['label'] + ' (' + summary['unit'] + ')':<46} "
                     f"{_cell(summary['baseline'], digits):<24} "
                     f"{_cell(summary['ours'], digits):<24} "
                     f"{_cell(summary['ratio'], 2):<20} {summary['goal']}{verdict}")
    return lines


def machine_load() -> dict[str, Any]:
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return {"uptime": uptime, "loadavg": os.getloadavg(), "cpus": os.cpu_count(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def _commit() -> str:
    found = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                           text=True)
    return found.stdout.strip() or "unknown"


@dataclass
class Report:
    """What one script measured: its figures, the machine's load around the run, extras."""

    name: str
    options: argparse.Namespace
    figures: list[Figure] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    load_before: dict[str, Any] = field(default_factory=machine_load)

    def figure(self, *args: Any, **kwargs: Any) -> Figure:
        made = Figure(*args, **kwargs)
        self.figures.append(made)
        return made

    def finish(self) -> dict[str, Any]:
        """Print the table, write the JSON to --out; returns what was written."""
        figures = {figure.key: figure.summary() for figure in self.figures if figure.ours}
        result = {"name": self.name, "commit": _commit(), "short": self.options.short,
                  "rounds": self.options.rounds, "figures": figures, "extra": self.extra,
                  "load_before": self.load_before, "load_after": machine_load()}
        print("\n".join(format_rows(figures)))
        print(f"load: before {result['load_before']['uptime']}\n"
              f"      after  {result['load_after']['uptime']}")
        out = Path(self.options.out or RESULTS / f"{self.name}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1, default=str))
        print(f"wrote {out}")
        return result


def arguments(name: str, doc: str, *, rounds: int, short_rounds: int = 1,
              argv: Sequence[str] | None = None,
              extra: Callable[[argparse.ArgumentParser], None] | None = None
              ) -> argparse.Namespace:
    """--rounds, --short (a quick version for CI: small counts, `short_rounds` rounds) and
    --out (default bench/results/<name>.json), plus the script's own options."""
    parser = argparse.ArgumentParser(prog=f"bench/{name}.py", description=doc)
    parser.add_argument("--rounds", type=int, default=None,
                        help=f"alternating rounds (default {rounds}; {short_rounds} in --short)")
    parser.add_argument("--short", action="store_true",
                        help="small counts and few rounds: a quick check that it all runs")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"where the JSON goes (default bench/results/{name}.json)")
    if extra is not None:
        extra(parser)
    options = parser.parse_args(argv)
    if options.rounds is None:
        options.rounds = short_rounds if options.short else rounds
    return options
