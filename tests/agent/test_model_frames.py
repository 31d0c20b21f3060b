"""The model worker's wire protocol (`agent/model_worker.py`) and how the server's end hands
answers to the calls waiting for them (`agent/model_process.py`): frames read in batches,
delivered to each event loop once per batch. The far end here is a plain socket this test
writes frames to, as the worker process would."""

from __future__ import annotations

import asyncio
import pickle
import socket
import threading
from collections.abc import Iterator

import pytest

from agent.model_process import ModelWorker
from agent.model_worker import FrameReader, send_frame


def _frame(*messages: object) -> bytes:
    """The frames' bytes, as one `send_frame` call writes them."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        send_frame(ours, threading.Lock(), *messages)
        ours.shutdown(socket.SHUT_WR)
        return b"".join(iter(lambda: theirs.recv(1 << 16), b""))


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        yield ours, theirs


def test_frames_written_together_are_read_together_in_order(pair) -> None:
    writer, reading = pair
    messages = [(1, "delta", "Hello"), (2, "delta", "there"), (1, "reply", {"n": 3})]
    writer.sendall(b"".join(_frame(message) for message in messages))
    assert FrameReader(reading).frames() == messages


def test_a_frame_cut_across_reads_comes_whole_once_its_last_byte_is_in(pair) -> None:
    writer, reading = pair
    first, second = (7, "delta", "x" * 1000), (8, "window", 4096)
    writer.sendall(_frame(first) + _frame(second))
    reader = FrameReader(reading, chunk_bytes=3)  # headers and bodies cut in every way
    assert reader.frames() == [first]  # as soon as it is whole, not when the read ends
    assert reader.frames() == [second]


def test_end_of_file_even_mid_frame_ends_the_reader(pair) -> None:
    writer, reading = pair
    writer.sendall(_frame((1, "delta", "whole")) + _frame((1, "delta", "cut"))[:-2])
    writer.shutdown(socket.SHUT_WR)
    reader = FrameReader(reading)
    assert reader.frames() == [(1, "delta", "whole")]
    assert reader.frames() is None


def test_a_frame_is_a_length_and_a_pickle() -> None:
    data = _frame(("stream", 3, "request"))
    assert int.from_bytes(data[:4], "big") == len(data) - 4
    assert pickle.loads(data[4:]) == ("stream", 3, "request")


async def test_answers_read_together_wake_their_event_loop_once(pair, monkeypatch) -> None:
    """Three calls' answers in one read: one hand-off to the loop, every answer to its own
    call, in order. One hand-off per answer (the old reader) wakes the loop once per token
    of every stream, each wake-up waiting its turn for the GIL."""
    far_end, ours = pair
    loop = asyncio.get_running_loop()
    handoffs = 0
    original = loop.call_soon_threadsafe

    def counted(*args: object, **kwargs: object) -> asyncio.Handle:
        nonlocal handoffs
        handoffs += 1
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(loop, "call_soon_threadsafe", counted)
    worker = ModelWorker(connected=ours)
    try:
        calls = [worker.open() for _ in range(3)]
        answers = [(request_id, "delta", f"word {n}") for n, (request_id, _) in
                   enumerate(calls) for _ in range(2)]
        far_end.sendall(b"".join(_frame(answer) for answer in answers))
        for request_id, queue in calls:
            got = [await asyncio.wait_for(queue.get(), 10) for _ in range(2)]
            assert got == [answer[1:] for answer in answers if answer[0] == request_id]
        assert handoffs == 1
    finally:
        worker.close()


def test_messages_sent_in_one_call_arrive_in_one_read(pair) -> None:
    """The worker sends a stream's last words with its reply in one write, so the server
    reads them together and a side answer's followers get the words with its end
    (side_questions.views.LiveRequest); before, they went in two writes."""
    writer, reading = pair
    words, reply = (7, "delta", "the last words"), (7, "reply", {"usage": 12})
    send_frame(writer, threading.Lock(), words, reply)
    assert FrameReader(reading).frames() == [words, reply]
    assert _frame(words, reply) == _frame(words) + _frame(reply)  # as sent one by one
