"""`TokenCoalescer` with a fake clock: nothing lost, at most one emission per interval."""

from __future__ import annotations

from agent.coalesce import TokenCoalescer


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_deltas_within_the_interval_are_buffered_then_emitted_together() -> None:
    clock = FakeClock()
    coalescer = TokenCoalescer(interval_s=0.05, clock=clock)

    assert coalescer.add("Hel") is None
    clock.now += 0.02
    assert coalescer.add("lo") is None
    clock.now += 0.04
    assert coalescer.add(" wor") == "Hello wor"
    assert coalescer.add("ld") is None
    assert coalescer.flush() == "ld"
    assert coalescer.flush() is None


def test_a_fast_stream_emits_about_twenty_a_second_and_loses_nothing() -> None:
    clock = FakeClock()
    coalescer = TokenCoalescer(clock=clock)
    emitted: list[str] = []
    deltas = [f"t{i} " for i in range(2000)]  # 2000 deltas over 2 s

    for delta in deltas:
        clock.now += 0.001
        text = coalescer.add(delta)
        if text:
            emitted.append(text)
    rest = coalescer.flush()
    if rest:
        emitted.append(rest)

    assert "".join(emitted) == "".join(deltas)
    assert 30 <= len(emitted) <= 2 * 20 + 1


def test_slow_deltas_pass_straight_through() -> None:
    clock = FakeClock()
    coalescer = TokenCoalescer(interval_s=0.05, clock=clock)

    out = []
    for word in ("a", "b", "c"):
        clock.now += 0.5
        out.append(coalescer.add(word))

    assert out == ["a", "b", "c"]
    assert coalescer.flush() is None


def test_empty_flush_is_none() -> None:
    assert TokenCoalescer().flush() is None
