"""The conversation list: a panel in the page (open, rename, delete, search, more) and the
same operations as Gradio endpoints for programs (`/list_conversations`,
`/rename_conversation`, `/delete_conversation`, `/conversation_history`).

Server-side and owner-only (`agent.conversation_list`); the page keeps no list of its own.
"New conversation" no longer throws a chat away: the old one stays in the list and opens
again from it. Delete asks first, in the panel, and says that side questions go too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import gradio as gr

from agent.conversation_list import ConversationSummary
from agent.errors import InputError
from storage import off_loop
from web.chat_window import render_window
from web.errors import to_gradio
from web.handlers import _FAILED, Handlers

__all__ = ["ConversationHandlers", "ConversationPanel", "render_conversations",
           "wire_conversation_api"]

DELETE_WARNING = ("Delete this conversation, its answers and its side questions? This "
                  "cannot be undone (the audit log keeps what happened in Superset).")


@dataclass
class ConversationPanel:
    accordion: gr.Accordion
    search: gr.Textbox
    picker: gr.Radio
    more: gr.Button
    cursor: gr.Textbox
    shown: gr.JSON  # the (label, id) pairs the list shows, for "Show older"
    title: gr.Textbox
    rename: gr.Button
    delete: gr.Button
    confirm_delete: gr.Button
    cancel_delete: gr.Button
    warning: gr.Markdown


def render_conversations() -> ConversationPanel:
    with gr.Accordion("Conversations", open=False, elem_id="conversations") as accordion:
        search = gr.Textbox(placeholder="Search by title", show_label=False, max_lines=1,
                            elem_id="conv-search")
        picker = gr.Radio(choices=[], label="Newest first", elem_id="conv-list")
        more = gr.Button("Show older", size="sm", visible=False, elem_id="conv-more")
        cursor = gr.Textbox(visible=False)
        shown = gr.JSON([], visible=False)
        with gr.Row(equal_height=True):
            title = gr.Textbox(placeholder="New title for this conversation", max_lines=1,
                               show_label=False, scale=3, elem_id="conv-title")
            rename = gr.Button("Rename", size="sm", scale=1, elem_id="conv-rename")
        delete = gr.Button("Delete this conversation", size="sm", variant="stop",
                           elem_id="conv-delete")
        warning = gr.Markdown(DELETE_WARNING, visible=False, elem_id="conv-delete-warning")
        with gr.Row():
            confirm_delete = gr.Button("Yes, delete it", size="sm", variant="stop",
                                       visible=False, elem_id="conv-delete-yes")
            cancel_delete = gr.Button("Keep it", size="sm", visible=False,
                                      elem_id="conv-delete-no")
    return ConversationPanel(accordion, search, picker, more, cursor, shown, title, rename, delete,
                             confirm_delete, cancel_delete, warning)


def _before(cursor: str | None) -> int | None:
    """A `/conversation_history` cursor (the first message's number of the page after)."""
    if cursor is None or not str(cursor).strip():
        return None
    if not str(cursor).strip().isdigit():
        raise InputError("The cursor is not valid: pass a page's next_cursor back as is.")
    return int(str(cursor).strip())


def _label(item: ConversationSummary, now: float) -> str:
    age = max(0, int(now - item.updated_at.timestamp()))
    when = ("just now" if age < 60 else f"{age // 60} min ago" if age < 3600
            else f"{age // 3600} h ago" if age < 86_400 else item.updated_at.strftime("%d %b"))
    return f"{item.title} · {when}"


class ConversationHandlers:
    """Callbacks of the panel and of the conversation endpoints."""

    def __init__(self, handlers: Handlers) -> None:
        self.handlers = handlers
        self.service = handlers.service

    async def _identity(self, user_id: Any, user_jwt: Any) -> Any:
        return await self.service.authenticate(user_id, user_jwt)

    # the Gradio API (JSON in, JSON out) --------------------------------------------------

    async def api_list(self, user_id: str, user_jwt: str, query: str | None,
                       cursor: str | None) -> dict[str, Any]:
        """The caller's conversations, newest activity first, 20 a page."""
        try:
            identity = await self._identity(user_id, user_jwt)
            page = self.service.conversations.page(identity, query=query or None,
                                                   cursor=cursor or None)
        except _FAILED as exc:
            raise to_gradio(exc) from None
        return page.model_dump(mode="json")

    async def api_rename(self, conv_id: str, user_id: str, user_jwt: str, title: str
                         ) -> dict[str, Any]:
        try:
            identity = await self._identity(user_id, user_jwt)
            return self.service.conversations.rename(identity, conv_id, title).model_dump(
                mode="json")
        except _FAILED as exc:
            raise to_gradio(exc) from None

    async def api_delete(self, conv_id: str, user_id: str, user_jwt: str) -> dict[str, Any]:
        try:
            identity = await self._identity(user_id, user_jwt)
            self.service.conversations.delete(identity, conv_id)
        except _FAILED as exc:
            raise to_gradio(exc) from None
        return {"deleted": conv_id}

    async def api_history(self, conv_id: str, user_id: str, user_jwt: str,
                          cursor: str | None = None) -> dict[str, Any]:
        """The stored transcript of one of the caller's conversations (to reopen it), a
        page at a time: the newest messages (whole turns), then, with `cursor` set to the
        page's `next_cursor`, the ones before them; `next_cursor` is None at the start."""
        try:
            identity = await self._identity(user_id, user_jwt)
            self.service.check_owner(identity, conv_id or "")
            window = await off_loop(self.service.history_window, identity, conv_id,
                                    before_seq=_before(cursor))
        except _FAILED as exc:
            raise to_gradio(exc) from None
        return {"conv_id": conv_id, "messages": [
            {"seq": row.seq, "role": row.role, "content": row.content,
             "tool_calls": row.tool_calls, "tool_call_id": row.tool_call_id,
             "tool_name": row.tool_name, "status": (row.meta or {}).get("status")}
            for row in window.rows],
            "next_cursor": str(window.start_seq) if window.earlier else None}

    # the panel -------------------------------------------------------------------------

    async def refresh(self, conv_id: str, user_id: str, user_jwt: str, query: str | None
                      ) -> tuple[Any, Any, Any, Any]:
        """The first page for the current search, the open conversation selected:
        `[list, more, cursor, shown]`."""
        try:
            identity = await self._identity(user_id, user_jwt)
            page = self.service.conversations.page(identity, query=query or None)
        except _FAILED:
            return gr.update(choices=[], value=None), gr.update(visible=False), "", []
        return self._show(page, [], conv_id)

    async def older(self, conv_id: str, user_id: str, user_jwt: str, query: str | None,
                    cursor: str, shown: Any) -> tuple[Any, Any, Any, Any]:
        """Append the next (older) page to what the list shows."""
        try:
            identity = await self._identity(user_id, user_jwt)
            page = self.service.conversations.page(identity, query=query or None,
                                                   cursor=cursor or None)
        except _FAILED as exc:
            raise to_gradio(exc) from None
        return self._show(page, shown if isinstance(shown, list) else [], conv_id)

    @staticmethod
    def _show(page: Any, shown: list[Any], conv_id: str) -> tuple[Any, Any, Any, Any]:
        now = time.time()
        known = {pair[1] for pair in shown if isinstance(pair, list | tuple) and len(pair) == 2}
        choices = [tuple(pair) for pair in shown if isinstance(pair, list | tuple)
                   and len(pair) == 2] + [(_label(item, now), item.id) for item in page.items
                                           if item.id not in known]
        selected = conv_id if any(value == conv_id for _, value in choices) else None
        return (gr.update(choices=choices, value=selected),
                gr.update(visible=page.next_cursor is not None), page.next_cursor or "",
                [list(pair) for pair in choices])

    async def open(self, picked: str, user_id: str, user_jwt: str, role: str,
                   request: gr.Request = None  # type: ignore[assignment]
                   ) -> tuple[Any, ...]:
        """Open a conversation from the list: `[conv_id, chatbot, events, saved]`.

        The tab is recorded as showing `picked` before the window is read, not after: a
        follower of the conversation shown until now stops at once, so none of its updates
        is still in Gradio's pipeline when this answer is (one made during the read could
        reach the page after it and show the old conversation over the new one, seen once
        under a loaded full suite). A refused open puts the old conversation back."""
        views = self.handlers.views
        before = views.shown(request)
        views.switch(request, picked)
        try:
            identity = await self._identity(user_id, user_jwt)
            window = await off_loop(self.service.history_window, identity, picked)
        except _FAILED as exc:
            if before is not None:
                views.switch(request, before)
            raise to_gradio(exc) from None
        chat = render_window(window, self.handlers.policy)
        return picked, chat, [], self.handlers.remember(picked, role, user_id)

    async def rename(self, conv_id: str, user_id: str, user_jwt: str, title: str
                     ) -> Any:
        await self.api_rename(conv_id, user_id, user_jwt, title)
        return ""

    def ask_delete(self) -> tuple[Any, Any, Any]:
        shown = gr.update(visible=True)
        return shown, shown, shown

    def keep(self) -> tuple[Any, Any, Any]:
        hidden = gr.update(visible=False)
        return hidden, hidden, hidden

    async def delete(self, conv_id: str, user_id: str, user_jwt: str, role: str,
                     request: gr.Request = None  # type: ignore[assignment]
                     ) -> tuple[Any, ...]:
        """Delete the open conversation and start a new one: `[conv_id, chatbot, events,
        saved, warning, yes, no]`."""
        await self.api_delete(conv_id, user_id, user_jwt)
        new_id, chat, events = self.handlers.new_conversation(request)
        gr.Info("Conversation deleted.")
        return (new_id, chat, events, self.handlers.remember(new_id, role, user_id),
                *self.keep())


def wire_conversation_api(handlers: ConversationHandlers, *, conv_id: gr.Textbox,
                          user_id: gr.Textbox, user_jwt: gr.Textbox) -> None:
    """Hidden components and triggers: the endpoints programs call."""
    hidden = {"visible": "hidden"}
    query = gr.Textbox(label="query", **hidden)
    cursor = gr.Textbox(label="cursor", **hidden)
    title = gr.Textbox(label="title", **hidden)
    result = gr.JSON(label="conversations result", **hidden)
    public = {"api_visibility": "public", "concurrency_limit": None,
              "concurrency_id": "conversations"}
    for name, fn, inputs in (
            ("list_conversations", handlers.api_list, [user_id, user_jwt, query, cursor]),
            ("rename_conversation", handlers.api_rename, [conv_id, user_id, user_jwt, title]),
            ("delete_conversation", handlers.api_delete, [conv_id, user_id, user_jwt]),
            ("conversation_history", handlers.api_history,
             [conv_id, user_id, user_jwt, cursor])):
        gr.Button(name, **hidden).click(fn, inputs, [result], api_name=name, **public)


@dataclass
class PageParts:
    """What the panel reads and changes elsewhere on the page."""

    conv_id: gr.Textbox
    user_id: gr.Textbox
    user_jwt: gr.Textbox
    role: gr.Dropdown
    chatbot: gr.Chatbot
    events: gr.JSON
    saved: gr.BrowserState


def wire_conversation_panel(panel: ConversationPanel, handlers: ConversationHandlers,
                            page: PageParts, *, followers: list[Any],
                            after_switch: Any) -> Any:
    """Wire the panel; returns `refresh(event)`, which chains a list refresh after `event`
    (the page calls it after anything that adds, renames or moves a conversation).
    `after_switch(event)` chains what follows opening another conversation (its approval
    card, a live run to follow)."""
    private = {"api_visibility": "private", "queue": False}
    listing = [panel.picker, panel.more, panel.cursor, panel.shown]
    current = [page.conv_id, page.user_id, page.user_jwt]

    def refresh(event: Any) -> Any:
        return event.then(handlers.refresh, [*current, panel.search], listing, **private)

    panel.search.change(handlers.refresh, [*current, panel.search], listing,
                        trigger_mode="always_last", **private)
    panel.more.click(handlers.older, [*current, panel.search, panel.cursor, panel.shown],
                     listing, **private)
    switched = [page.conv_id, page.chatbot, page.events, page.saved]
    # Queued, unlike the panel's other events: its answer then travels the page's one event
    # stream, after any update a follower of the old conversation sent before the switch,
    # so that update can never land over the conversation just opened (over plain HTTP the
    # two raced, and a late update showed the other conversation's live run).
    in_order = {"api_visibility": "private", "concurrency_limit": None,
                "concurrency_id": "page_switch"}
    opened = panel.picker.input(handlers.open, [panel.picker, page.user_id, page.user_jwt,
                                                page.role], switched, cancels=followers,
                                **in_order)
    after_switch(opened)
    refresh(panel.rename.click(handlers.rename, [*current, panel.title], [panel.title],
                               **private))
    asking = [panel.warning, panel.confirm_delete, panel.cancel_delete]
    panel.delete.click(handlers.ask_delete, None, asking, **private)
    panel.cancel_delete.click(handlers.keep, None, asking, **private)
    deleted = panel.confirm_delete.click(handlers.delete, [*current, page.role],
                                         [*switched, *asking], cancels=followers, **private)
    after_switch(deleted)
    refresh(deleted)
    return refresh
