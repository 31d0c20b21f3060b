"""litellm `CustomLLM` for the offline model, under its own provider name `offline-agent`.

It streams the brain's answer and then the brain's tool calls, exactly as a real provider
would: word by word when a per-token delay is set (demos and concurrency tests), else in
pieces of about `PIECE_CHARS` characters. litellm's per-chunk work (a chunk object, its
checks, the end-of-stream rebuild from every chunk) was most of a turn's model-call cost
at one chunk per word, and with no delay the words all arrive in the same coalescing
window anyway (agent/coalesce.py), so a reader sees the same events.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

from litellm import CustomLLM
from litellm.types.utils import GenericStreamingChunk

from agent.offline.brain import Decision, decide

__all__ = ["OFFLINE_PROVIDER", "OfflineLLM"]

OFFLINE_PROVIDER = "offline-agent"
PIECE_CHARS = 200  # text per chunk when no per-token delay is set
_WORD = re.compile(r"\S+\s*|\s+")


def _estimate_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content") or "")) // 4 + 4 for m in messages)


def _pieces(text: str, size: int) -> list[str]:
    """`text` split after whole words: each word alone (`size` 0), or runs of words of about
    `size` characters."""
    words = _WORD.findall(text)
    if size <= 0:
        return words
    pieces: list[str] = []
    current = ""
    for word in words:
        current += word
        if len(current) >= size:
            pieces.append(current)
            current = ""
    return [*pieces, current] if current else pieces


def _chunks(decision: Decision, prompt_tokens: int, piece_chars: int = 0
            ) -> list[GenericStreamingChunk]:
    chunks: list[GenericStreamingChunk] = []
    for piece in _pieces(decision.text, piece_chars):
        chunks.append({"text": piece, "tool_use": None, "is_finished": False,
                       "finish_reason": "", "usage": None, "index": 0})
    for index, (name, arguments) in enumerate(decision.tool_calls):
        chunks.append({
            "text": "", "is_finished": False, "finish_reason": "", "usage": None, "index": 0,
            "tool_use": {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                         "function": {"name": name, "arguments": arguments}, "index": index},
        })
    completion_tokens = max(1, len(decision.text) // 4)
    chunks.append({
        "text": "", "tool_use": None, "is_finished": True,
        "finish_reason": "tool_calls" if decision.tool_calls else "stop", "index": 0,
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    })
    return chunks


class OfflineLLM(CustomLLM):
    """Deterministic stand-in for a real model; chooses only among the tools it is offered."""

    def __init__(self, *, token_delay_s: float = 0.0) -> None:
        super().__init__()
        self.token_delay_s = token_delay_s
        self.piece_chars = 0 if token_delay_s else PIECE_CHARS

    def _decide(self, messages: list[dict[str, Any]], optional_params: dict) -> Decision:
        return decide(messages, optional_params.get("tools") or [])

    def streaming(self, model: str, messages: list, *args: Any, **kwargs: Any
                  ) -> Iterator[GenericStreamingChunk]:
        decision = self._decide(messages, kwargs.get("optional_params") or {})
        for chunk in _chunks(decision, _estimate_tokens(messages), self.piece_chars):
            if self.token_delay_s and chunk["text"]:
                time.sleep(self.token_delay_s)
            yield chunk

    async def astreaming(self, model: str, messages: list, *args: Any, **kwargs: Any
                         ) -> AsyncIterator[GenericStreamingChunk]:
        decision = self._decide(messages, kwargs.get("optional_params") or {})
        for chunk in _chunks(decision, _estimate_tokens(messages), self.piece_chars):
            if chunk["text"]:
                await asyncio.sleep(self.token_delay_s)  # also yields control per token
            yield chunk

    def completion(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the offline model only streams; call with stream=True")

    async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the offline model only streams; call with stream=True")
