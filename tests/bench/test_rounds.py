"""How the benchmarks run their rounds: alternating order, and the driver's own garbage
collector kept out of every measured round."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable

from bench.report import driver_collector_paused, rotate


def test_rounds_alternate_which_variant_runs_first() -> None:
    order: list[str] = []
    rotate(3, {"app": lambda n: order.append(f"app{n}"),
               "bare": lambda n: order.append(f"bare{n}")})
    assert order == ["app0", "bare0", "bare1", "app1", "app2", "bare2"]


class _Node:
    """A cycle the collector alone can free (refcounting cannot)."""

    def __init__(self) -> None:
        self.me = self


def test_no_collection_in_the_driver_while_a_round_is_measured() -> None:
    """A full pass of the driver's collector stalled every client it drives at once (60 ms
    across 100 SSE followers) and was counted against whichever server ran that round."""
    seen: list[tuple[str, bool]] = []
    passes: list[int] = []
    left: list[weakref.ref[_Node]] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    def variant(name: str) -> Callable[[int], None]:
        def run(number: int) -> None:
            seen.append((name, gc.isenabled()))
            gc.callbacks.append(count)
            try:
                for _ in range(50_000):  # far beyond the youngest generation's threshold
                    left.append(weakref.ref(_Node()))
            finally:
                gc.callbacks.remove(count)
        return run

    assert gc.isenabled()
    rotate(2, {"app": variant("app"), "bare": variant("bare")})
    assert seen and all(not enabled for _, enabled in seen)
    assert passes == []
    assert gc.isenabled()  # as it was, after the rounds


def test_a_rounds_cycles_are_collected_when_it_ends() -> None:
    """Not left for whenever the collector next runs: with it off before the round too,
    nothing else would free them."""
    gc.disable()
    try:
        with driver_collector_paused():
            left = [weakref.ref(_Node()) for _ in range(1_000)]
            assert all(ref() is not None for ref in left)
        assert not gc.isenabled()  # as it was
        assert all(ref() is None for ref in left)
    finally:
        gc.enable()
