"""Text coalesced where it is made: `TextBatcher` (agent/coalesce.py) on a real event loop,
and the model worker process sending through it (agent/model_worker.py), against the
scripted OpenAI-compatible server over HTTP. Waits are for events, with generous limits;
the only timed bounds are counts derived from the time the stream actually took."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from agent.coalesce import INTERVAL_S, TextBatcher, TokenCoalescer
from agent.model_gateway import ModelReply, ModelRequest, TextDelta
from agent.model_process import ModelWorker, ProcessGateway
from tests.fakes.openai_server import ScriptedCall, ScriptedOpenAIServer
from tests.waits import EVENT_WAIT_S


class _Sent:
    """What a batcher sent, with an event to wait for the next send."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.changed = asyncio.Event()

    def __call__(self, text: str) -> None:
        self.texts.append(text)
        self.changed.set()

    async def until(self, count: int) -> None:
        while len(self.texts) < count:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), EVENT_WAIT_S)


async def test_the_first_words_go_at_once_and_held_words_go_without_another_delta() -> None:
    sent = _Sent()
    batcher = TextBatcher(sent, interval_s=0.05)

    batcher.add("Hello")
    assert sent.texts == ["Hello"]  # at once, no timer
    batcher.add(" wor")
    batcher.add("ld")
    assert sent.texts == ["Hello"]  # within the interval: held
    await sent.until(2)  # nothing else arrives: the timer sends them
    assert sent.texts == ["Hello", " world"]
    batcher.close()


async def test_flush_sends_what_is_held_now_and_close_drops_it() -> None:
    sent = _Sent()
    batcher = TextBatcher(sent, interval_s=60)
    batcher.add("a")
    batcher.add("b")
    batcher.flush()
    assert sent.texts == ["a", "b"]
    batcher.add("c")
    batcher.close()  # the stream was cancelled: nobody reads
    batcher.flush()
    assert sent.texts == ["a", "b"]


async def test_take_hands_over_what_is_held_and_sends_nothing() -> None:
    """The worker takes a stream's last words to send them with its reply, in one write."""
    sent = _Sent()
    batcher = TextBatcher(sent, interval_s=60)
    batcher.add("first")
    batcher.add(" and")
    batcher.add(" last")
    assert batcher.take() == " and last" and batcher.take() == ""
    batcher.add(" more")  # within the interval still: held, and no timer left behind
    batcher.close()
    assert sent.texts == ["first"]


async def test_a_fast_stream_is_sent_about_twenty_times_a_second_and_loses_nothing() -> None:
    sent = _Sent()
    batcher = TextBatcher(sent)
    words = [f"w{n} " for n in range(300)]
    started = time.monotonic()
    for word in words:
        batcher.add(word)
        await asyncio.sleep(0.001)
    batcher.flush()
    elapsed = time.monotonic() - started
    assert "".join(sent.texts) == "".join(words)
    assert len(sent.texts) <= elapsed / INTERVAL_S + 2


def test_the_loop_passes_a_coalescing_gateways_text_straight_on() -> None:
    class Coalescing:
        coalesces_text = True

    passing, pulling = TokenCoalescer.for_gateway(Coalescing()), TokenCoalescer.for_gateway(
        object())
    assert [passing.add(word) for word in ("a", "b", "c")] == ["a", "b", "c"]
    assert pulling.interval_s == INTERVAL_S


# the worker process ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gateway() -> Iterator[ProcessGateway]:
    process_gateway = ProcessGateway(worker=ModelWorker())
    yield process_gateway
    process_gateway.close()


def _request(server: ScriptedOpenAIServer) -> ModelRequest:
    return ModelRequest(model="openai/scripted", api_base=server.base_url, api_key="sk-test",
                        messages=[{"role": "user", "content": "hi"}], timeout_s=30)


async def test_the_worker_sends_a_fast_stream_coalesced(
        gateway: ProcessGateway, server: ScriptedOpenAIServer) -> None:
    """200 words, ~2 ms apart: about one delta per 50 ms, not one per word (one frame and
    one wake-up of the server's event loop each)."""
    text = " ".join(f"word{n}" for n in range(200))
    server.reply_text(text, deltas=200, delay_s=0.002)
    started = time.monotonic()
    deltas = [item.text async for item in gateway.stream(_request(server))
              if isinstance(item, TextDelta)]
    elapsed = time.monotonic() - started
    assert "".join(deltas) == text
    assert len(deltas) <= elapsed / INTERVAL_S + 2
    assert len(deltas) < 100


async def test_words_before_a_pause_reach_the_server_during_the_pause(
        gateway: ProcessGateway, server: ScriptedOpenAIServer) -> None:
    """The model writes a sentence, then streams a tool call's arguments (held here until
    the test releases it): the whole sentence arrives while the model is still busy."""
    sentence = "I will rename the dashboard now."
    reply = server.reply_tool_calls(ScriptedCall("rename", '{"name": "x"}'), text=sentence,
                                    text_deltas=8, hold_after=9)  # role chunk + 8 words
    received: list[str] = []
    whole = asyncio.Event()

    async def read() -> ModelReply | None:
        async for item in gateway.stream(_request(server)):
            if isinstance(item, TextDelta):
                received.append(item.text)
                if "".join(received) == sentence:
                    whole.set()
            else:
                return item
        return None

    reading = asyncio.create_task(read())
    try:
        assert await reply.until_reached()
        await asyncio.wait_for(whole.wait(), EVENT_WAIT_S)  # still held: no reply yet
        assert not reading.done()
    finally:
        reply.release.set()
    final = await asyncio.wait_for(reading, EVENT_WAIT_S)
    assert final is not None and [call.name for call in final.tool_calls] == ["rename"]
