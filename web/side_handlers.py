"""Gradio callbacks of side questions (SPEC §2 and §9): submit, history, cancel, clear.

Each authenticates `(user_id, user_jwt)` like the agent endpoint, checks that the caller owns
the conversation (a foreign or unknown one is the same "not found"), calls one
SideQuestionService method and returns the JSON object of the HTTP contract.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent.admission import CONV_ID
from agent.errors import AgentError, ConversationAccessError, InputError
from agent.identity import Identity
from runtime import Runtime
from side_questions.errors import NO_SUCH_REQUEST, NotFound, SideQuestionError
from side_questions.service import SideQuestionService
from storage.retry import DatabaseUnavailable
from web.errors import to_gradio
from web.side_render import drop_nul

__all__ = ["SideHandlers"]


class SideHandlers:
    """Callbacks bound to one runtime (no module-level state)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    @property
    def side(self) -> SideQuestionService:
        return self.runtime.side_questions

    async def _owned(self, conv_id: Any, user_id: Any, user_jwt: Any) -> str:
        """The conversation id once the caller is known to own it (database off the loop)."""
        return (await self._owner(conv_id, user_id, user_jwt))[1]

    async def _caller(self, conv_id: Any, user_id: Any, user_jwt: Any
                      ) -> tuple[Identity, str]:
        """Who calls, and the well-formed conversation id (ownership not checked yet)."""
        identity = await self.runtime.agent.authenticate(_text(user_id), _text(user_jwt))
        conv = _text(conv_id).strip()
        if not CONV_ID.match(conv):  # malformed ids look like unknown ones
            raise ConversationAccessError()
        return identity, conv

    async def _owner(self, conv_id: Any, user_id: Any, user_jwt: Any) -> tuple[Identity, str]:
        identity, conv = await self._caller(conv_id, user_id, user_jwt)
        await asyncio.to_thread(self.runtime.agent.check_owner, identity, conv)
        return identity, conv

    async def submit(self, conv_id: Any, user_id: Any, user_jwt: Any, question: Any,
                     client_request_id: Any) -> dict[str, Any]:
        """Ask a side question; the request object (the same one again for a repeated
        client_request_id with the same question)."""
        try:
            identity, conv = await self._caller(conv_id, user_id, user_jwt)
            if isinstance(question, str):
                question = drop_nul(question)
            # The ownership check is part of the submission's one transaction.
            result = await self.side.submit(parent_id=conv, question=question,
                                            client_request_id=_text(client_request_id) or None,
                                            owner_id=identity.user_id, verify_owner=True)
        except (AgentError, SideQuestionError, DatabaseUnavailable) as exc:
            raise to_gradio(exc) from None
        return result.request.model_dump()

    async def history(self, conv_id: Any, user_id: Any, user_jwt: Any,
                      before: Any) -> dict[str, Any]:
        """A page of side history: `{items, running, snapshot, next_cursor}`."""
        try:
            conv = await self._owned(conv_id, user_id, user_jwt)
            page = await self.side.history(parent_id=conv, before=_cursor(before))
        except (AgentError, SideQuestionError, DatabaseUnavailable) as exc:
            raise to_gradio(exc) from None
        return page.as_dict()

    async def cancel(self, conv_id: Any, user_id: Any, user_jwt: Any,
                     request_id: Any) -> dict[str, Any]:
        """Stop one side question of this conversation; its (terminal) request object."""
        try:
            conv = await self._owned(conv_id, user_id, user_jwt)
            request = _text(request_id).strip()
            if not request or await self.side.parent_of(request) != conv:
                raise NotFound(NO_SUCH_REQUEST)
            state = await self.side.cancel(request)
        except (AgentError, SideQuestionError, DatabaseUnavailable) as exc:
            raise to_gradio(exc) from None
        return state.model_dump()

    async def clear(self, conv_id: Any, user_id: Any, user_jwt: Any) -> dict[str, Any]:
        """Cancel the running side question and delete the side history; the (empty) page."""
        try:
            conv = await self._owned(conv_id, user_id, user_jwt)
            await self.side.clear(conv)
            page = await self.side.history(parent_id=conv)
        except (AgentError, SideQuestionError, DatabaseUnavailable) as exc:
            raise to_gradio(exc) from None
        return page.as_dict()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _cursor(before: Any) -> int | None:
    """`before` from a Number or Textbox: empty, None or 0 is the first page."""
    if before is None or before == "":
        return None
    try:
        number = int(float(before))
        exact = number == float(before)
    except (TypeError, ValueError, OverflowError):
        exact, number = False, -1
    if not exact or not 0 <= number < 2**31:
        raise InputError("before must be a next_cursor value (a whole number, 0 or more).")
    return number or None
