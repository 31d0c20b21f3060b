"""`LiteLLMGateway` against the scripted OpenAI-compatible server: streaming, tool-call
fragments, usage, and translation of provider errors (with the API key scrubbed); each test
runs in this process and through the worker process `python app.py` uses
(`ProcessGateway`), which must keep the same contract."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agent.errors import ContextOverflowError, ModelError
from agent.model_gateway import LiteLLMGateway, ModelReply, ModelRequest, TextDelta
from agent.model_process import ModelWorker, ProcessGateway
from tests.fakes.openai_server import ScriptedCall, ScriptedOpenAIServer
from tests.fakes.runs import SENTINEL_KEY

TOOLS = [{"type": "function", "function": {
    "name": "get_dashboard", "description": "Read one dashboard.",
    "parameters": {"type": "object", "properties": {"dashboard_id": {"type": "integer"}},
                   "required": ["dashboard_id"]}}}]


@pytest.fixture(scope="module", params=["in_process", "worker_process"])
def gateway(request: pytest.FixtureRequest) -> Iterator[LiteLLMGateway | ProcessGateway]:
    if request.param == "in_process":
        yield LiteLLMGateway()
        return
    process_gateway = ProcessGateway(worker=ModelWorker())
    yield process_gateway
    process_gateway.close()


def _request(server: ScriptedOpenAIServer, **overrides: Any) -> ModelRequest:
    fields: dict[str, Any] = {
        "model": "openai/scripted", "api_base": server.base_url, "api_key": SENTINEL_KEY,
        "messages": [{"role": "system", "content": "be brief"},
                     {"role": "user", "content": "hi"}],
        "tools": TOOLS, "max_tokens": 256, "timeout_s": 30,
    }
    return ModelRequest(**{**fields, **overrides})


async def _stream(gateway: LiteLLMGateway, request: ModelRequest
                  ) -> tuple[list[str], ModelReply]:
    deltas: list[str] = []
    replies: list[ModelReply] = []
    async for item in gateway.stream(request):
        if isinstance(item, TextDelta):
            assert not replies, "text after the final reply"
            deltas.append(item.text)
        else:
            replies.append(item)
    assert len(replies) == 1, "exactly one ModelReply, last"
    return deltas, replies[0]


async def test_text_streams_in_deltas_with_usage(
    gateway: LiteLLMGateway, server: ScriptedOpenAIServer
) -> None:
    server.reply_text("Dashboards are collections of charts.", deltas=7,
                      usage={"prompt_tokens": 31, "completion_tokens": 8, "total_tokens": 39})

    deltas, reply = await _stream(gateway, _request(server))

    # The worker process coalesces deltas that come together (test_model_text_batching.py).
    assert len(deltas) == 7 if isinstance(gateway, LiteLLMGateway) else 1 <= len(deltas) <= 7
    assert "".join(deltas) == reply.content == "Dashboards are collections of charts."
    assert reply.tool_calls == []
    assert reply.finish_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens,
            reply.usage.total_tokens) == (31, 8, 39)


async def test_a_provider_that_reports_no_usage_gets_an_estimate_not_zero(
    gateway: LiteLLMGateway, server: ScriptedOpenAIServer
) -> None:
    """litellm's own token counter is off (agent/model_gateway.py), so a stream without a
    usage chunk would otherwise be recorded as a free, zero-token call."""
    text = "Dashboards are collections of charts. " * 10
    server.reply_text(text, deltas=5, send_usage=False)

    _, reply = await _stream(gateway, _request(server))

    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens >= len(text) // 8
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    server.reply_tool_calls(ScriptedCall("get_dashboard", '{"dashboard_id": 42}'),
                            send_usage=False)
    _, called = await _stream(gateway, _request(server))
    assert called.tool_calls and called.usage.completion_tokens > 0


async def test_request_carries_messages_tools_key_and_stream_options(
    gateway: LiteLLMGateway, server: ScriptedOpenAIServer
) -> None:
    server.reply_text("ok")

    await _stream(gateway, _request(server))

    [recorded] = server.requests
    assert recorded.path == "/v1/chat/completions"
    assert recorded.headers["authorization"] == f"Bearer {SENTINEL_KEY}"
    body = recorded.body
    assert body["model"] == "scripted"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "system", "content": "be brief"},
                                {"role": "user", "content": "hi"}]
    assert recorded.tool_names == ["get_dashboard"]
    assert body["max_tokens"] == 256


async def test_tool_calls_streamed_in_fragments_are_reassembled(
    gateway: LiteLLMGateway, server: ScriptedOpenAIServer
) -> None:
    first = ScriptedCall("get_dashboard", '{"dashboard_id": 42}', fragments=6)
    second = ScriptedCall("get_dashboard", '{"dashboard_id": 7, "env_id": "prod"}', fragments=9)
    server.reply_tool_calls(first, second, text="Reading both.")

    deltas, reply = await _stream(gateway, _request(server))

    assert "".join(deltas) == "Reading both."
    assert reply.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        (first.id, "get_dashboard", {"dashboard_id": 42}),
        (second.id, "get_dashboard", {"dashboard_id": 7, "env_id": "prod"}),
    ]
    assert all(c.parse_error is None for c in reply.tool_calls)
    part = reply.tool_calls[0].as_message_part()
    assert part == {"id": first.id, "type": "function",
                    "function": {"name": "get_dashboard", "arguments": '{"dashboard_id": 42}'}}


async def test_malformed_tool_arguments_are_reported_not_raised(
    gateway: LiteLLMGateway, server: ScriptedOpenAIServer
) -> None:
    server.reply_tool_calls(ScriptedCall("get_dashboard", '{"dashboard_id": 4'),
                            ScriptedCall("get_dashboard", "[1, 2]"))

    _, reply = await _stream(gateway, _request(server))

    broken, listed = reply.tool_calls
    assert broken.arguments == {} and "not valid JSON" in (broken.parse_error or "")
    assert listed.arguments == {} and listed.parse_error == "arguments must be an object"


async def test_tool_calls_without_ids_get_distinct_ids(
    gateway: LiteLLMGateway, server: ScriptedOpenAIServer
) -> None:
    """Ids pair calls with results across a whole conversation, so a fallback id must not
    repeat from one reply to the next (it used to be `call_<index>`)."""
    for _ in range(2):
        server.reply_tool_calls(ScriptedCall("get_dashboard", "{}", id=None),
                                ScriptedCall("get_dashboard", "{}", id=None))

    ids = []
    for _ in range(2):
        _, reply = await _stream(gateway, _request(server))
        ids += [call.id for call in reply.tool_calls]

    assert all(ids)
    assert len(set(ids)) == 4


async def test_server_error_becomes_model_error_without_the_key(
    gateway: LiteLLMGateway, server: ScriptedOpenAIServer
) -> None:
    for _ in range(3):  # the OpenAI client retries a 500 (twice) before giving up
        server.reply_error(500)

    with pytest.raises(ModelError) as caught:
        await _stream(gateway, _request(server))

    assert not isinstance(caught.value, ContextOverflowError)
    assert caught.value.status_code == 500
    assert "InternalServerError" in str(caught.value)
    assert SENTINEL_KEY not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


async def test_rate_limit_becomes_model_error_429(
    gateway: LiteLLMGateway, server: ScriptedOpenAIServer
) -> None:
    for _ in range(3):
        server.reply_error(429)

    with pytest.raises(ModelError) as caught:
        await _stream(gateway, _request(server))

    assert caught.value.status_code == 429
    assert "RateLimitError" in str(caught.value)


async def test_context_length_exceeded_becomes_context_overflow_error(
    gateway: LiteLLMGateway, server: ScriptedOpenAIServer
) -> None:
    server.reply_context_overflow()

    with pytest.raises(ContextOverflowError) as caught:
        await _stream(gateway, _request(server))

    assert isinstance(caught.value, ModelError)
    assert caught.value.status_code == 400
    assert "maximum context length" in str(caught.value)
    assert len(server.requests) == 1


async def test_an_error_body_that_echoes_the_key_is_scrubbed(
    gateway: LiteLLMGateway, server: ScriptedOpenAIServer
) -> None:
    server.reply_error(401, {"error": {"message": f"Incorrect API key provided: {SENTINEL_KEY}",
                                       "type": "invalid_request_error",
                                       "code": "invalid_api_key"}})

    with pytest.raises(ModelError) as caught:
        await _stream(gateway, _request(server))

    assert caught.value.status_code == 401
    assert SENTINEL_KEY not in str(caught.value)
    assert "[redacted]" in str(caught.value)


async def test_stream_cut_midway_is_a_model_error(
    gateway: LiteLLMGateway, server: ScriptedOpenAIServer
) -> None:
    server.reply_text("one two three four five six", deltas=6, cut_after=4)

    with pytest.raises(ModelError):
        await _stream(gateway, _request(server))


async def test_unreachable_server_is_a_model_error(gateway: LiteLLMGateway) -> None:
    with ScriptedOpenAIServer() as stopped:
        base_url = stopped.base_url
    request = ModelRequest(model="openai/scripted", api_base=base_url, api_key=SENTINEL_KEY,
                           messages=[{"role": "user", "content": "hi"}], timeout_s=10)

    with pytest.raises(ModelError) as caught:
        await _stream(gateway, request)

    assert SENTINEL_KEY not in str(caught.value)


# the fake itself -----------------------------------------------------------------------------


def test_the_fake_says_when_no_reply_is_queued(server: ScriptedOpenAIServer) -> None:
    response = httpx.post(f"{server.base_url}/chat/completions",
                          json={"model": "scripted", "messages": []}, timeout=10)

    assert response.status_code == 500
    assert "no reply queued" in response.json()["error"]["message"]
    assert len(server.requests) == 1


def test_the_fake_answers_without_streaming_too(server: ScriptedOpenAIServer) -> None:
    server.reply_tool_calls(ScriptedCall("get_dashboard", '{"dashboard_id": 1}', id="call_x"),
                            text="One moment.")
    response = httpx.post(f"{server.base_url}/chat/completions",
                          json={"model": "scripted", "messages": [], "stream": False},
                          timeout=10)

    message = response.json()["choices"][0]["message"]
    assert message["content"] == "One moment."
    assert message["tool_calls"][0]["id"] == "call_x"
    assert response.json()["choices"][0]["finish_reason"] == "tool_calls"
