"""Callbacks of the side-question panel: ask (streaming), `/btw` from the main input, show,
Stop and Clear. Each parses its inputs, calls SideHandlers / the service, and renders.

The streams only follow a request the service runs; a closed panel, a refresh or a dropped
stream ends the following, never the model request. Reopening shows it again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import gradio as gr

from web.errors import gradio_error
from web.side_handlers import SideHandlers
from web.side_render import NO_CONVERSATION, merge_item, parse_btw, render_side
from web.text_policy import DEFAULT_POLICY, TextPolicy

__all__ = ["SidePanelHandlers"]

Chat = list[dict[str, Any]]


class SidePanelHandlers:
    def __init__(self, api: SideHandlers, policy: TextPolicy = DEFAULT_POLICY) -> None:
        self.api = api
        self.policy = policy

    async def _items(self, conv_id: Any, user_id: Any, user_jwt: Any) -> list[dict[str, Any]]:
        page = await self.api.history(conv_id, user_id, user_jwt, None)
        return list(page["items"])

    async def _follow(self, items: list[dict[str, Any]], request_id: str,
                      conv_id: str, user_id: Any, user_jwt: Any) -> AsyncIterator[Chat]:
        """Chat renders as the request's cumulative state changes, until it ends."""
        async for update in self.api.side.follow(request_id):
            if update.kind == "cleared" or update.request is None:
                yield render_side(await self._items(conv_id, user_id, user_jwt), self.policy)
                return
            items = merge_item(items, update.request.model_dump())
            yield render_side(items, self.policy)

    async def _ask(self, conv_id: Any, user_id: Any, user_jwt: Any,
                   question: str) -> AsyncIterator[Chat]:
        if not isinstance(conv_id, str) or not conv_id.strip():
            raise gradio_error(NO_CONVERSATION)
        try:
            items = await self._items(conv_id, user_id, user_jwt)
        except gr.Error:  # the page's new conversation is stored with its first agent turn
            raise gradio_error(NO_CONVERSATION) from None
        created = await self.api.submit(conv_id, user_id, user_jwt, question, None)
        items = merge_item(items, created)
        yield render_side(items, self.policy)
        async for chat in self._follow(items, created["id"], conv_id.strip(), user_id,
                                       user_jwt):
            yield chat

    async def ask(self, conv_id: Any, user_id: Any, user_jwt: Any,
                  question: Any) -> AsyncIterator[tuple[Any, Any]]:
        """The panel's Ask: clears the box, streams the answer into the side chat."""
        text = question.strip() if isinstance(question, str) else ""
        if not text:
            yield gr.skip(), gr.skip()
            return
        async for chat in self._ask(conv_id, user_id, user_jwt, text):
            yield chat, ""

    def open_for_btw(self, message: Any) -> Any:
        """`/btw` opens the panel in its own quick event. Not from the streaming `from_main`:
        while a main run streams, the page can merge a stream's first update (open) with its
        next (skip) and the panel then stayed closed."""
        return gr.Accordion(open=True) if parse_btw(message)[0] else gr.skip()

    async def from_main(self, message: Any, conv_id: Any, user_id: Any,
                        user_jwt: Any) -> AsyncIterator[tuple[Any, Any]]:
        """`/btw <question>` typed in the main input goes to the panel (`open_for_btw` opens
        it); `/btw` alone just clears the box. Anything else is left to the agent."""
        is_btw, question = parse_btw(message)
        if not is_btw:
            yield gr.skip(), gr.skip()
            return
        if not question:
            yield "", gr.skip()
            return
        async for chat in self._ask(conv_id, user_id, user_jwt, question):
            yield "", chat

    async def show(self, conv_id: Any, user_id: Any, user_jwt: Any) -> AsyncIterator[Chat]:
        """The conversation's side history; a running request is followed to its end."""
        if not isinstance(conv_id, str) or not conv_id.strip():
            yield []
            return
        try:
            page = await self.api.history(conv_id, user_id, user_jwt, None)
        except gr.Error:  # e.g. a brand-new conversation id not stored yet
            yield []
            return
        items = list(page["items"])
        yield render_side(items, self.policy)
        running = page.get("running")
        if running:
            async for chat in self._follow(items, running["id"], conv_id.strip(), user_id,
                                           user_jwt):
                yield chat

    async def stop(self, conv_id: Any, user_id: Any, user_jwt: Any) -> Chat:
        """Stop the conversation's running side question (only that one)."""
        page = await self.api.history(conv_id, user_id, user_jwt, None)
        running = page.get("running")
        if running:
            await self.api.cancel(conv_id, user_id, user_jwt, running["id"])
            page = await self.api.history(conv_id, user_id, user_jwt, None)
        return render_side(list(page["items"]), self.policy)

    async def clear(self, conv_id: Any, user_id: Any, user_jwt: Any) -> Chat:
        """Cancel and delete the side history (the agent's snapshot stays)."""
        page = await self.api.clear(conv_id, user_id, user_jwt)
        return render_side(list(page["items"]), self.policy)
