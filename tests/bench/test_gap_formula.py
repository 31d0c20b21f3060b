"""The concurrency benchmark's gap formula: what a stream's update is owed by the model's
own delay and the SPEC's text cadence, and what is left over as a stall."""

from __future__ import annotations

import pytest

from agent.coalesce import INTERVAL_S
from bench.clients import CADENCE_S, excess_gaps

DELAY_S = 0.02  # the offline model's delay per chunk in the benchmark


def test_the_bench_owes_the_cadence_the_app_sends_text_at() -> None:
    """The bench imports nothing of the app it measures, so its copy is checked here."""
    assert CADENCE_S == INTERVAL_S


def _batched(chunks_per_batch: list[int], stall_before: int | None = None,
             stall_s: float = 0.0) -> list[tuple[float, int]]:
    """Updates one cadence apart, each bringing its batch's chunks; optionally one late."""
    arrivals, seconds, chunks = [], 0.0, 0
    for index, batch in enumerate(chunks_per_batch):
        seconds += CADENCE_S if index else 0.0
        seconds += stall_s if index == stall_before else 0.0
        chunks += batch
        arrivals.append((seconds, chunks))
    return arrivals


def test_text_batched_at_the_cadence_is_no_stall() -> None:
    """20 ms chunks sent every 50 ms come two or three at a time; neither is a stall. The
    formula before owed two chunks 40 ms and scored every such batch 10 ms."""
    stream = _batched([1, 2, 3, 2, 3, 2])
    assert max(excess_gaps(stream, DELAY_S)) == pytest.approx(0.0)
    before = excess_gaps(stream, DELAY_S, cadence_s=0)
    assert [round(gap, 3) for gap in before] == [0.01, 0.0, 0.01, 0.0, 0.01]


def test_a_stall_between_batches_still_counts() -> None:
    stream = _batched([1, 2, 3, 2, 3], stall_before=3, stall_s=0.03)
    gaps = excess_gaps(stream, DELAY_S)
    assert gaps[2] == pytest.approx(0.03)
    assert [gap for index, gap in enumerate(gaps) if index != 2] == pytest.approx([0.0] * 3)


def test_many_chunks_are_owed_their_own_delay_not_the_cadence() -> None:
    """A batch held longer than the cadence is owed its chunks' delay, beyond which it is
    late: five chunks (100 ms) arriving 130 ms after the batch before."""
    assert excess_gaps([(0.0, 1), (0.13, 6)], DELAY_S) == [pytest.approx(0.03)]


def test_words_after_an_update_without_text_are_owed_only_their_delay() -> None:
    """After a tool's event the first words are due at once (the batcher's interval runs
    from its last text), so a word 50 ms later has waited 30 ms beyond its 20."""
    stream = [(0.0, 3), (0.05, 3), (0.10, 4)]  # text, a tool's event, one word
    assert excess_gaps(stream, DELAY_S) == [pytest.approx(0.05), pytest.approx(0.03)]


def test_an_update_without_text_is_owed_nothing() -> None:
    """The end, after the last words: all of its wait is excess, as before."""
    stream = [(0.0, 2), (0.05, 4), (0.062, 4)]
    assert excess_gaps(stream, DELAY_S)[-1] == pytest.approx(0.012)
    assert excess_gaps(stream, DELAY_S, cadence_s=0)[-1] == pytest.approx(0.012)


def test_the_first_update_counts_as_text_when_it_brings_some() -> None:
    """A stream whose first update already holds words: the second batch, one cadence later
    with two chunks, is no stall."""
    assert excess_gaps([(0.0, 1), (0.05, 3)], DELAY_S) == [0.0]
    assert excess_gaps([(0.0, 0), (0.05, 2)], DELAY_S) == [pytest.approx(0.01)]
