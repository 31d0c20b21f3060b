"""Agent-context snapshots the loop publishes for side questions (SPEC §9).

The loop knows nothing of side questions: it calls a `SnapshotListener` it was given with a
deep-copied, credential-free `ContextSnapshot` at each request start, each complete reply
and at run end. Only whole replies are ever included, and tool calls stay paired.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agent.history import paired_only

__all__ = [
    "ContextSnapshot",
    "SnapshotListener",
    "make_snapshot",
    "model_identity_digest",
]

Boundary = Literal["request_start", "reply", "run_end"]


def model_identity_digest(model: str, api_base: str | None) -> str:
    """A non-sensitive fingerprint of the model configuration (never includes a key)."""
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    raw = json.dumps({"model": model, "provider": provider, "api_base": api_base or ""},
                     sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class ContextSnapshot:
    conversation_id: str
    run_id: str
    version: int
    boundary: Boundary
    system_prompt: str
    messages: list[dict[str, Any]]  # without the system prompt; paired; no half replies
    tools: list[dict[str, Any]]
    params: dict[str, Any]
    model: str
    model_digest: str
    created_at: float = field(default_factory=time.time)
    # Orders snapshots across runs of one conversation: (run_started_at, run_id, version).
    run_started_at: float = 0.0


class SnapshotListener(Protocol):
    def __call__(self, snapshot: ContextSnapshot) -> None:
        """Must return quickly and never raise into the loop; it only queues the snapshot."""
        ...


def make_snapshot(
    *, conversation_id: str, run_id: str, version: int, boundary: Boundary,
    system_prompt: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
    params: dict[str, Any], model: str, api_base: str | None, run_started_at: float = 0.0,
) -> ContextSnapshot:
    return ContextSnapshot(
        conversation_id=conversation_id, run_id=run_id, version=version, boundary=boundary,
        system_prompt=system_prompt,
        messages=paired_only(copy.deepcopy([m for m in messages if m.get("role") != "system"])),
        tools=copy.deepcopy(tools), params=copy.deepcopy(params), model=model,
        model_digest=model_identity_digest(model, api_base), run_started_at=run_started_at,
    )
