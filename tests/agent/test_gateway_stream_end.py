"""A model call's reply is handed on as soon as it is complete (finished, its usage known),
not after litellm's own end-of-stream work (issue 16, not timed): rebuilding the whole
response from its chunks, pricing it, running the success callbacks and closing the stream
took 35-80 ms per call here (offline provider) and ~28 ms (an OpenAI-compatible server), on
the path from a call's last word to the next step of every run. Where a litellm callback
reads that work it still runs, after the reply, and its usage is the reply's; where nothing
reads it (the app registers no callback) the stream is only closed, never rebuilt."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent.model_gateway import LiteLLMGateway, ModelReply, ModelRequest, TextDelta
from agent.settings import OFFLINE_MODEL
from tests.agent.offline_support import after_call, context, messages_for, tools_for
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.waits import EVENT_WAIT_S


def _answer_request() -> ModelRequest:
    """A text answer (the offline model's table of dashboards), word by word."""
    rows = [{"id": number, "dashboard_title": f"Sales board {number}", "published": True}
            for number in range(12)]
    messages = after_call(messages_for("list the dashboards", context()),
                          [("list_dashboards", {}, {"count": len(rows), "result": rows})])
    return ModelRequest(model=OFFLINE_MODEL, messages=messages, tools=tools_for("editor"))


class _Closes:
    """Counts litellm's closes of its stream wrapper (`aclose`, litellm's own, wrapped
    here to see when it runs, not replaced)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper

        self.event = asyncio.Event()
        close = CustomStreamWrapper.aclose

        async def seen(wrapper: Any) -> None:
            self.event.set()
            await close(wrapper)

        monkeypatch.setattr(CustomStreamWrapper, "aclose", seen)


@pytest.fixture
def rebuilt(litellm_loaded: None, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How often litellm rebuilt a finished stream (`litellm.stream_chunk_builder`, which
    litellm looks up on its module at each stream's end; wrapped here, not replaced)."""
    import litellm

    rebuild, count = litellm.stream_chunk_builder, [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return rebuild(*args, **kwargs)

    monkeypatch.setattr(litellm, "stream_chunk_builder", counted)
    return count


@pytest.fixture
def ended(rebuilt: list[int]) -> Any:
    """A litellm success callback (litellm's public callback API), removed afterwards from
    every list litellm copied it to: it runs in litellm's end-of-stream work, with the
    usage litellm computed."""
    import litellm
    from litellm.integrations.custom_logger import CustomLogger

    class Ended(CustomLogger):
        def __init__(self) -> None:
            super().__init__()
            self.usage: list[Any] = []
            self.event = asyncio.Event()

        @property
        def rebuilt(self) -> int:
            return rebuilt[0]

        async def async_log_success_event(self, kwargs: Any, response_obj: Any,
                                          start_time: Any, end_time: Any) -> None:
            self.usage.append(response_obj.usage)
            self.event.set()

    logger = Ended()
    litellm.callbacks.append(logger)
    yield logger
    litellm.logging_callback_manager.remove_callback_from_all_lists(logger)


async def test_the_reply_comes_before_litellms_end_of_stream_work_which_still_runs(
        ended: Any) -> None:
    gateway = LiteLLMGateway(offline_token_delay_s=0.0005)  # word by word, as with a delay
    deltas, reply = 0, None
    async for item in gateway.stream(_answer_request()):
        if isinstance(item, TextDelta):
            deltas += 1
        else:
            reply = item
            assert ended.rebuilt == 0, "the reply waited for litellm's rebuild of the stream"
    assert isinstance(reply, ModelReply) and deltas > 50 and reply.content
    await asyncio.wait_for(ended.event.wait(), EVENT_WAIT_S)  # still done, afterwards
    assert ended.rebuilt >= 1
    litellms = ended.usage[0]
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens,
            reply.usage.total_tokens) == (litellms.prompt_tokens, litellms.completion_tokens,
                                          litellms.total_tokens)
    assert reply.usage.total_tokens > 0


async def test_with_no_litellm_callback_the_stream_is_closed_and_never_rebuilt(
        rebuilt: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing reads litellm's rebuild, pricing or success handlers when no callback is
    registered, and the rebuild held up every other stream on the model worker's loop:
    the finished stream is closed instead (its provider stream released), not rebuilt."""
    import litellm

    assert not litellm.logging_callback_manager.get_all_callbacks()  # as the app runs
    closes = _Closes(monkeypatch)
    gateway = LiteLLMGateway(offline_token_delay_s=0.0005)
    replies = [item async for item in gateway.stream(_answer_request())
               if isinstance(item, ModelReply)]
    await asyncio.wait_for(closes.event.wait(), EVENT_WAIT_S)
    assert rebuilt[0] == 0, "litellm rebuilt a stream nothing reads"
    assert len(replies) == 1 and replies[0].content and replies[0].usage.total_tokens > 0


async def test_from_an_openai_compatible_server_the_reply_comes_before_the_stream_closes(
        server: ScriptedOpenAIServer, ended: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Such a server sends its usage after the finish chunk, so litellm hands it over only
    after its rebuild; the reply still does not wait for the rest (success callbacks, the
    close), which runs afterwards."""
    closes = _Closes(monkeypatch)
    server.reply_text("Dashboards are collections of charts.", deltas=7,
                      usage={"prompt_tokens": 31, "completion_tokens": 8, "total_tokens": 39})
    request = ModelRequest(model="openai/scripted", api_base=server.base_url,
                           api_key="sk-stream-end-0123456789", timeout_s=30,
                           messages=[{"role": "user", "content": "hi"}])
    reply = None
    async for item in LiteLLMGateway().stream(request):
        if isinstance(item, ModelReply):
            reply = item
            assert not closes.event.is_set(), "the reply waited for litellm to close the stream"
            assert not ended.event.is_set(), "the reply waited for litellm's success callbacks"
    await asyncio.wait_for(closes.event.wait(), EVENT_WAIT_S)  # still closed, afterwards
    await asyncio.wait_for(ended.event.wait(), EVENT_WAIT_S)  # and the callback ran
    assert reply is not None and reply.content == "Dashboards are collections of charts."
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens,
            reply.usage.total_tokens) == (31, 8, 39)
