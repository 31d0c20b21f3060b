"""Turns typed while a conversation's run is live: they wait here, in order, and the agent
service starts the next one when that run ends (issue 11: a message is never dropped).

Kept in process memory, beside the live run they wait for, because a queued turn holds
the sender's token for passthrough environments, and tokens are never stored. A crash
loses the queue with the run (which the next start records as interrupted); the page
shows each queued turn as "queued" until it starts, and Stop hands the texts back to the
input box, so a person never loses what they typed.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from agent.errors import AgentError, InputError
from agent.identity import Identity
from agent.logs import internal_error_message
from storage.retry import DatabaseUnavailable

__all__ = ["MAX_QUEUED_TURNS", "QueueFull", "QueuedTurn", "TurnQueue"]

_log = logging.getLogger(__name__)

MAX_QUEUED_TURNS = 5  # per conversation: enough for "and also…", small enough to stay readable


class QueueFull(InputError):
    def __init__(self) -> None:
        super().__init__(f"{MAX_QUEUED_TURNS} messages are already waiting for this run; "
                         "wait for one to start or press Stop.")


@dataclass(frozen=True)
class QueuedTurn:
    """One message waiting for the conversation's live run to end."""

    identity: Identity
    text: str
    env_id: str | None
    uicontext: Any
    user_jwt: str | None = field(repr=False)  # memory only, like the live run's credential
    turn_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    queued_at: float = field(default_factory=time.time)


class TurnQueue:
    """Per-conversation FIFO of waiting turns, bounded by `MAX_QUEUED_TURNS`."""

    def __init__(self, limit: int = MAX_QUEUED_TURNS) -> None:
        self.limit = limit
        self._turns: dict[str, deque[QueuedTurn]] = {}
        self._refused: dict[str, list[tuple[QueuedTurn, str]]] = {}

    def add(self, conversation_id: str, turn: QueuedTurn) -> int:
        """Queue `turn`; its 1-based position. `QueueFull` changes nothing."""
        waiting = self._turns.setdefault(conversation_id, deque())
        if len(waiting) >= self.limit:
            raise QueueFull()
        waiting.append(turn)
        return len(waiting)

    def pop(self, conversation_id: str) -> QueuedTurn | None:
        waiting = self._turns.get(conversation_id)
        turn = waiting.popleft() if waiting else None
        if waiting is not None and not waiting:
            del self._turns[conversation_id]
        return turn

    def waiting(self, conversation_id: str) -> list[QueuedTurn]:
        return list(self._turns.get(conversation_id, ()))

    def drain(self, conversation_id: str) -> list[QueuedTurn]:
        """Take every waiting turn out (Stop, shutdown), oldest first."""
        return list(self._turns.pop(conversation_id, ()))

    def refused(self, conversation_id: str, turn: QueuedTurn, exc: BaseException) -> None:
        """Keep a turn that could not start, with the sentence that says why, until a reader
        of the conversation takes it (`take_refused`)."""
        reason = (str(exc) if isinstance(exc, AgentError | DatabaseUnavailable)
                  else internal_error_message(exc, _log, "starting a queued turn"))
        kept = self._refused.setdefault(conversation_id, [])
        kept.append((turn, reason))
        del kept[:-self.limit]

    def has_refused(self, conversation_id: str) -> bool:
        return bool(self._refused.get(conversation_id))

    def take_refused(self, conversation_id: str) -> list[tuple[QueuedTurn, str]]:
        return self._refused.pop(conversation_id, [])
