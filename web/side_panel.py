"""Callbacks of the side-question panel: ask (streaming), `/btw` from the main input, show,
Stop and Clear. Each parses its inputs, calls SideHandlers / the service, and renders.

The streams only follow a request the service runs; a closed panel, a refresh or a dropped
stream ends the following, never the model request. Reopening shows it again.

Which conversation a tab shows is kept per Gradio session (web/session_views.py, set by
every handler that switches it): a stream still following another conversation's request
stops at its next update. Streams never set it themselves: one that starts late would
claim the tab for the conversation it was asked about before the switch.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import gradio as gr

from web.errors import gradio_error
from web.session_views import SessionViews
from web.side_handlers import SideHandlers
from web.side_render import NO_CONVERSATION, merge_item, parse_btw, render_side
from web.text_policy import DEFAULT_POLICY, TextPolicy

__all__ = ["SidePanelHandlers"]

Chat = list[dict[str, Any]]


class SidePanelHandlers:
    def __init__(self, api: SideHandlers, policy: TextPolicy = DEFAULT_POLICY,
                 views: SessionViews | None = None) -> None:
        self.api = api
        self.policy = policy
        self.views = views or SessionViews()  # the page's: which conversation a tab shows

    async def _items(self, conv_id: Any, user_id: Any, user_jwt: Any) -> list[dict[str, Any]]:
        page = await self.api.history(conv_id, user_id, user_jwt, None)
        return list(page["items"])

    async def _follow(self, items: list[dict[str, Any]], request_id: str, conv_id: str,
                      user_id: Any, user_jwt: Any, request: gr.Request | None
                      ) -> AsyncIterator[Chat | None]:
        """Chat renders as the request's cumulative state changes, until it ends or the
        tab's panel shows another conversation. Then it yields None once: the caller's
        last update must change nothing (Gradio applies a stream's last value again when
        it ends, which put the old answer back over the new conversation's panel)."""
        async for update in self.api.side.follow(request_id):
            if not self.views.still_showing(request, conv_id):
                yield None
                return
            if update.kind == "cleared" or update.request is None:
                yield render_side(await self._items(conv_id, user_id, user_jwt), self.policy)
                return
            items = merge_item(items, update.request.model_dump())
            yield render_side(items, self.policy)

    async def _ask(self, conv_id: Any, user_id: Any, user_jwt: Any, question: str,
                   request: gr.Request | None) -> AsyncIterator[Chat | None]:
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
                                       user_jwt, request):
            yield chat

    async def ask(self, conv_id: Any, user_id: Any, user_jwt: Any, question: Any,
                  request: gr.Request = None) -> AsyncIterator[tuple[Any, Any]]:  # type: ignore[assignment]
        """The panel's Ask: clears the box, streams the answer into the side chat."""
        text = question.strip() if isinstance(question, str) else ""
        if not text:
            yield gr.skip(), gr.skip()
            return
        async for chat in self._ask(conv_id, user_id, user_jwt, text, request):
            yield (gr.skip(), gr.skip()) if chat is None else (chat, "")

    def open_for_btw(self, message: Any) -> Any:
        """`/btw` opens the panel in its own quick event. Not from the streaming `from_main`:
        while a main run streams, the page can merge a stream's first update (open) with its
        next (skip) and the panel then stayed closed."""
        return gr.Accordion(open=True) if parse_btw(message)[0] else gr.skip()

    async def from_main(self, message: Any, conv_id: Any, user_id: Any, user_jwt: Any,
                        request: gr.Request = None  # type: ignore[assignment]
                        ) -> AsyncIterator[tuple[Any, Any]]:
        """`/btw <question>` typed in the main input goes to the panel (`open_for_btw` opens
        it); `/btw` alone just clears the box. Anything else is left to the agent."""
        is_btw, question = parse_btw(message)
        if not is_btw:
            yield gr.skip(), gr.skip()
            return
        if not question:
            yield "", gr.skip()
            return
        async for chat in self._ask(conv_id, user_id, user_jwt, question, request):
            yield (gr.skip(), gr.skip()) if chat is None else ("", chat)

    async def show(self, conv_id: Any, user_id: Any, user_jwt: Any,
                   request: gr.Request = None  # type: ignore[assignment]
                   ) -> AsyncIterator[Any]:
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
                                           user_jwt, request):
                yield gr.skip() if chat is None else chat

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
