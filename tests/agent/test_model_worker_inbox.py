"""How the model worker's reader thread hands what it read to the worker's event loop
(`agent.model_worker.Inbox`): held while litellm imports, then a whole read per callback on
the loop, never a round trip through an executor thread per message."""

from __future__ import annotations

import asyncio
import threading

from agent.model_worker import Inbox


def test_what_arrives_before_the_loop_is_held_the_config_first_then_handed_over_in_order(
        ) -> None:
    inbox = Inbox()
    inbox.put([("config", [], 0.0, {}), ("stream", 1, "a")])
    inbox.put([("stream", 2, "b")])
    assert inbox.get() == ("config", [], 0.0, {})
    calls: list[list[object]] = []

    async def attach_then_read_more() -> None:
        inbox.attach(calls.append)
        assert calls == [[("stream", 1, "a"), ("stream", 2, "b")]]  # at once, one call
        reader = threading.Thread(target=inbox.put, args=([("cancel", 1)],))
        reader.start()
        reader.join()
        while len(calls) < 2:
            await asyncio.sleep(0)

    asyncio.run(attach_then_read_more())
    assert calls[1] == [("cancel", 1)]


def test_a_whole_read_reaches_the_busy_loop_in_one_callback_on_the_loop_thread() -> None:
    """Ten calls sent at once are all started in the same turn of the loop: no loop
    iteration passes between the first and the last (the ticker counts them)."""
    inbox = Inbox()
    seen: list[tuple[object, int, int]] = []
    ticks = 0

    async def main() -> None:
        nonlocal ticks
        loop_thread = threading.get_ident()
        inbox.attach(lambda messages: seen.extend(
            (message, ticks, threading.get_ident()) for message in messages))
        batch = [("stream", n, "request") for n in range(10)]
        reader = threading.Thread(target=inbox.put, args=(batch,))
        reader.start()
        while len(seen) < 10:  # busy: other streams' words
            ticks += 1
            await asyncio.sleep(0)
        reader.join()
        assert [message for message, _, _ in seen] == batch
        assert {thread for _, _, thread in seen} == {loop_thread}

    asyncio.run(main())
    assert len({tick for _, tick, _ in seen}) == 1


def test_end_of_file_before_the_config_ends_the_worker_at_once() -> None:
    inbox = Inbox()
    threading.Thread(target=inbox.put, args=([None],)).start()
    assert inbox.get() is None
    assert inbox.get() is None  # and stays the end
