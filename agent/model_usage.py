"""What a model call used and cost, read off litellm's stream without litellm's own
end-of-stream rebuild (`agent/model_gateway.py` says why that rebuild is skipped)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent.events import Usage

__all__ = ["estimated_usage", "price", "provider_usage"]


def provider_usage(response: Any) -> Usage | None:
    """The usage the provider reported in its stream, once litellm has read it (None
    before, or when it reported none): litellm keeps every chunk it read in `chunks`,
    the provider's usage chunk included, and holds that usage back until its own
    end-of-stream work is done. Read as litellm's `calculate_total_usage` reads it: the
    latest prompt and completion counts of the chunks that carry usage."""
    prompt = completion = None
    for chunk in getattr(response, "chunks", None) or ():
        reported = getattr(chunk, "usage", None)
        if reported is None:
            continue
        prompt = getattr(reported, "prompt_tokens", None) or prompt
        completion = getattr(reported, "completion_tokens", None) or completion
    if not prompt and not completion:
        return None
    return Usage(prompt_tokens=prompt or 0, completion_tokens=completion or 0,
                 total_tokens=(prompt or 0) + (completion or 0))


def estimated_usage(messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                    content: str, tool_calls: Sequence[Any]) -> Usage:
    """Usage for a provider that reported none in its stream: the budget's estimate (about
    four characters a token), as litellm's own counter would have guessed, so such a call
    is never recorded as free and tokenless."""
    from agent.budget import estimate_messages, estimate_text, estimate_tools

    prompt = estimate_messages(messages) + estimate_tools(tools or [])
    completion = estimate_text(content) + (estimate_text(json.dumps(
        [[call.name, call.arguments] for call in tool_calls], default=str)) if tool_calls else 0)
    return Usage(prompt_tokens=prompt, completion_tokens=completion,
                 total_tokens=prompt + completion)


def price(litellm: Any, model: str, usage: Usage) -> float | None:
    """What litellm's price table says the call cost (a lookup, not a rebuild of the
    stream); None for models it does not price (the offline model, local servers)."""
    if model.startswith("offline-agent/") or not usage.total_tokens:
        return None
    try:
        prompt, completion = litellm.cost_per_token(
            model=model, prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens)
    except Exception:  # unknown model: litellm raises; no price is not an error
        return None
    return float(prompt + completion)
