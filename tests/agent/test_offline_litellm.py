"""The offline model through litellm itself: registered by the gateway, streamed like a provider.

litellm takes seconds to import, so these few tests cover a streamed tool call with its
preamble text, and a streamed answer written from the tool result.
"""

from __future__ import annotations

import json

from agent.model_gateway import LiteLLMGateway, ModelReply, ModelRequest, TextDelta
from agent.settings import OFFLINE_MODEL
from tests.agent.offline_support import after_call, context, messages_for, tools_for


async def _stream(gateway: LiteLLMGateway, request: ModelRequest
                  ) -> tuple[list[str], ModelReply]:
    deltas, reply = [], None
    async for item in gateway.stream(request):
        if isinstance(item, TextDelta):
            deltas.append(item.text)
        else:
            reply = item
    assert reply is not None
    return deltas, reply


async def test_tool_calls_and_answers_stream_through_litellm() -> None:
    gateway = LiteLLMGateway()
    tools = tools_for("editor", "dashboard")
    messages = messages_for('rename it to "Revenue 2026"', context("dashboard", 3, role="editor"))

    deltas, reply = await _stream(gateway, ModelRequest(model=OFFLINE_MODEL, messages=messages,
                                                        tools=tools))
    # In pieces of about 200 characters (no per-token delay set): few chunks, whole words.
    assert 1 <= len(deltas) <= len(reply.content) // 150 + 1
    assert all(delta.endswith((" ", "\n")) for delta in deltas[:-1])
    assert "".join(deltas) == reply.content
    assert "approve" in reply.content
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("update_dashboard", {"dashboard_id": 3, "title": "Revenue 2026"})]
    assert reply.finish_reason == "tool_calls" and reply.usage.total_tokens > 0

    answered = after_call(messages, [("update_dashboard", json.loads(
        reply.tool_calls[0].raw_arguments), {"env": "ss-dev", "updated": 3,
                                             "changed": ["dashboard_title"]})])
    deltas, reply = await _stream(gateway, ModelRequest(model=OFFLINE_MODEL, messages=answered,
                                                        tools=tools))
    assert reply.tool_calls == []
    assert "".join(deltas) == reply.content
    assert reply.content.startswith("Done: dashboard #3 in ss-dev updated")


async def test_a_token_delay_streams_word_by_word() -> None:
    """Demos and the concurrency benchmark set a per-token delay: one chunk per word."""
    gateway = LiteLLMGateway(offline_token_delay_s=0.001)
    messages = messages_for('rename it to "Revenue 2026"', context("dashboard", 3, role="editor"))
    deltas, reply = await _stream(gateway, ModelRequest(model=OFFLINE_MODEL, messages=messages,
                                                        tools=tools_for("editor", "dashboard")))
    assert len(deltas) == len(reply.content.split()) > 5
    assert "".join(deltas) == reply.content
