"""Summary calls of a side question: condensing older side exchanges or older main context.

At most `MAX_SUMMARY_CALLS` per request; material that would need more calls is left out
(oldest first) and said to be left out. Every call's usage lands on the request's meter,
including calls that failed (zero when the provider reported none).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent.errors import ContextOverflowError
from agent.model_gateway import ModelGateway, ModelReply, ModelRequest
from side_questions.budget import MAX_SUMMARY_CALLS, Budget
from side_questions.prompt import summary_messages

__all__ = ["RequestFactory", "Summariser", "UsageMeter"]

RequestFactory = Callable[[list[dict[str, Any]], list[dict[str, Any]], int], ModelRequest]
_OMITTED = "(Some older material was left out to stay within limits.)"


@dataclass
class UsageMeter:
    """Usage summed over every model call of one side question."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    calls: int = 0
    summary_calls: int = 0

    def add(self, reply: ModelReply | None, *, summary: bool = False) -> None:
        self.calls += 1
        self.summary_calls += int(summary)
        if reply is not None:
            self.prompt_tokens += reply.usage.prompt_tokens
            self.completion_tokens += reply.usage.completion_tokens
            self.total_tokens += reply.usage.total_tokens

    def as_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens, "calls": self.calls,
                "summary_calls": self.summary_calls}


@dataclass
class Summariser:
    gateway: ModelGateway
    make_request: RequestFactory
    usage: UsageMeter
    max_calls: int = MAX_SUMMARY_CALLS
    omitted: bool = False

    @property
    def calls(self) -> int:
        return self.usage.summary_calls

    async def summarise(self, lines: Sequence[str], *, prior: str, budget: Budget) -> str:
        """Fold `lines` into `prior`, chunk by chunk, within the remaining call allowance."""
        chunk_tokens = max(256, min(budget.input_tokens // 2, 24_000))
        chunks = _chunk(lines, chunk_tokens)
        remaining = self.max_calls - self.calls
        if len(chunks) > remaining:
            chunks = chunks[len(chunks) - max(remaining, 0):]
            self.omitted = True
        summary = prior
        cap = max(64, min(1024, budget.output_cap))
        for chunk in chunks:
            summary = await self._call(prior=summary, material=chunk, max_tokens=cap)
        if self.omitted and _OMITTED not in summary:
            summary = f"{_OMITTED}\n{summary}".strip()
        return summary

    async def _call(self, *, prior: str, material: str, max_tokens: int) -> str:
        request = self.make_request(summary_messages(prior=prior, material=material), [],
                                    max_tokens)
        reply: ModelReply | None = None
        try:
            async for item in self.gateway.stream(request):
                if isinstance(item, ModelReply):
                    reply = item
        except ContextOverflowError:
            self.usage.add(None, summary=True)
            self.omitted = True
            return prior
        except BaseException:
            self.usage.add(None, summary=True)
            raise
        self.usage.add(reply, summary=True)
        text = (reply.content if reply is not None else "").strip()
        return text[: max_tokens * 4] or prior


def _chunk(lines: Sequence[str], chunk_tokens: int) -> list[str]:
    limit = chunk_tokens * 4
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        if len(line) > limit:
            line = line[:limit - 20] + " …(truncated)"
        if current and size + len(line) + 1 > limit:
            chunks.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current:
        chunks.append("\n".join(current))
    return chunks
