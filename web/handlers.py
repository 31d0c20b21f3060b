"""Gradio callbacks: each parses its inputs, calls one service function and renders.

`agent_handler` is the public API endpoint (SPEC §2); its seven inputs are real components.
Domain errors become `gr.Error` here and nowhere else.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import gradio as gr

from agent.errors import AgentError, ConversationAccessError, IdentityError
from agent.identity import DEMO_USERS
from agent.identity.demo import new_visitor, visitor_of
from agent.service import LiveRun
from agent.uicontext import parse_uicontext
from runtime import Runtime
from storage import off_loop
from storage.retry import DatabaseUnavailable
from web.chat_window import ChatView, render_window, without_run
from web.edit_form import SLOTS, form_fields
from web.errors import to_gradio
from web.render import (
    confirmation_card,
    context_pill,
    pending_confirmation,
    retryable_call,
    undoable_change,
)
from web.session_views import SessionViews
from web.signin import SessionView, SignInHandlers
from web.text_policy import TextPolicy, md_code, md_escape

__all__ = ["INPUT_PLACEHOLDER", "Handlers"]

INPUT_PLACEHOLDER = "Ask the agent… (/btw for a side question)"

# What a callback turns into a clear `gr.Error` (or a quiet default): refusals, and a
# database outage (one safe sentence, never the driver's text).
_FAILED = (AgentError, DatabaseUnavailable)

ChatUpdate = tuple[list[dict[str, Any]], list[dict[str, Any]]]
ActionUpdate = tuple[Any, ...]  # one value per `Actions.panel` component


def context_notice(warnings: list[str]) -> Any:
    """What of the page link was not applied, shown at once (never only when a tool runs).
    The texts quote the link's values, so they are Markdown-escaped."""
    if not warnings:
        return gr.update(value="", visible=False)
    lines = "\n".join(f"- {md_escape(text)}" for text in warnings)
    return gr.update(value=f"⚠️ **The link that opened this page was not used as given:**\n"
                           f"{lines}", visible=True)


class Handlers:
    """Callbacks bound to one runtime (no module-level state)."""

    def __init__(self, runtime: Runtime, signin: SignInHandlers) -> None:
        self.runtime = runtime
        self.service = runtime.agent
        self.signin = signin
        self.policy = TextPolicy.from_settings(runtime.settings)
        # Which conversation each tab shows: every handler that switches it says so before
        # it answers, and streams on another stop at their next update (session_views.py).
        self.views = SessionViews()

    # the agent endpoint ------------------------------------------------------------------

    async def agent_handler(
        self, message: str | None, history: Any, conv_id: str | None, user_id: str | None,
        user_jwt: str | None, env_id: str | None, uicontext_str: str | None = None,
    ) -> AsyncIterator[ChatUpdate]:
        """Run one turn; stream `[chatbot, events]` until the run is done.

        `history` is accepted for compatibility and ignored: the server owns history. The
        chat output is the conversation's newest messages (a bounded window, first row "Show
        earlier messages" when there are more) and this run, rendered once per update.
        """
        del history
        try:
            identity = await self.service.authenticate(user_id, user_jwt)
            window = await off_loop(self.service.history_window, identity, conv_id or "")
            live = await self.service.start_turn(
                message=message, conv_id=conv_id, user_id=identity.user_id, user_jwt=user_jwt,
                env_id=env_id, uicontext_str=uicontext_str)
        except _FAILED as exc:
            raise to_gradio(exc) from None
        view = ChatView(window, self.policy)
        try:
            async for events in live.follow():
                yield view.render(events, live.request.user_message), events
        finally:
            if not live.finished.is_set():  # the caller went away: Stop, cancel, disconnect
                live.cancel()

    async def confirm_tool(
        self, conv_id: str | None, user_id: str | None, user_jwt: str | None,
        confirmation_id: str | None, decision: str | None, args: str | None = None,
    ) -> AsyncIterator[ChatUpdate]:
        """Approve or deny a paused call; stream the continuation like `agent_handler`.
        `args` (optional JSON object): the call's arguments as edited before approving."""
        async for update in self._continuation(
                conv_id, user_id, user_jwt, lambda: self.service.confirm(
                    conv_id=conv_id, user_id=user_id, user_jwt=user_jwt,
                    confirmation_id=confirmation_id, decision=decision, args=args)):
            yield update

    async def retry_tool(
        self, conv_id: str | None, user_id: str | None, user_jwt: str | None,
        call_id: str | None,
    ) -> AsyncIterator[ChatUpdate]:
        """Run a failed read again (after its automatic retry failed); stream the run."""
        async for update in self._continuation(
                conv_id, user_id, user_jwt, lambda: self.service.retry(
                    conv_id=conv_id, user_id=user_id, user_jwt=user_jwt, call_id=call_id)):
            yield update

    async def undo_change(
        self, conv_id: str | None, user_id: str | None, user_jwt: str | None,
        audit_id: Any,
    ) -> AsyncIterator[ChatUpdate]:
        """Ask to undo an audited change (issue 15); stream the run to its approval card."""
        async for update in self._continuation(
                conv_id, user_id, user_jwt, lambda: self.service.undo_change(
                    conv_id=conv_id, user_id=user_id, user_jwt=user_jwt,
                    audit_id=audit_id)):
            yield update

    async def _continuation(self, conv_id: str | None, user_id: str | None,
                            user_jwt: str | None, start: Any) -> AsyncIterator[ChatUpdate]:
        try:
            identity = await self.service.authenticate(user_id, user_jwt)
            window = await off_loop(self.service.history_window, identity, conv_id or "")
            live = await start()
        except _FAILED as exc:
            raise to_gradio(exc) from None
        view = ChatView(window, self.policy, awaiting=False)
        try:
            async for events in live.follow():
                yield view.render(events), events
        finally:
            if not live.finished.is_set():
                live.cancel()

    # the action panel (Confirm / Deny / Retry) under the chat -------------------------------

    def action_panel(self, events: Any) -> ActionUpdate:
        """Show the approval card when the run stopped for one, or Retry for a failed read."""
        events = events if isinstance(events, list) else []
        pending = pending_confirmation(events)
        retry_id = None if pending else retryable_call(events)
        undo_id = None if pending else undoable_change(events)
        locked = bool(pending and pending.get("dangerous") and pending.get("countdown_s"))
        return (gr.update(value=confirmation_card(pending), visible=pending is not None),
                pending["confirmation_id"] if pending else "",
                gr.update(visible=pending is not None, interactive=not locked),
                gr.update(visible=pending is not None),
                gr.update(visible=retry_id is not None), retry_id or "",
                gr.update(visible=undo_id is not None,
                          value=f"↩️ Undo this change (#{undo_id})" if undo_id else None),
                str(undo_id or ""), gr.update(visible=pending is not None, interactive=not locked),
                *self._edit_form(pending))

    def _edit_form(self, pending: dict[str, Any] | None) -> tuple[Any, ...]:
        """The card's edit form, pre-filled with the proposed arguments (hidden until
        "Edit…" is clicked)."""
        slots, names = form_fields(self.runtime.registry, (pending or {}).get("tool"),
                                   (pending or {}).get("args"))
        fields = [gr.update(label=slot["label"], value=slot["value"],
                            visible=slot["visible"] and pending is not None) for slot in slots]
        return (gr.update(visible=pending is not None), gr.update(visible=False), names,
                gr.update(value="", visible=False), *fields)

    async def restore_actions(self, conv_id: str, user_id: str, user_jwt: str
                              ) -> ActionUpdate:
        """After a reload: show the approval card again if the conversation still waits."""
        try:
            pending = await self.service.open_confirmation(conv_id=conv_id, user_id=user_id,
                                                           user_jwt=user_jwt)
        except _FAILED:
            pending = None
        if pending is None:
            return self.hide_actions()
        done = {"type": "done", "status": "awaiting_confirmation"}
        return self.action_panel([pending, done])

    def hide_actions(self) -> ActionUpdate:
        """Hide the panel at a click; the ids stay, the next step reads them."""
        hidden = gr.update(visible=False)
        return (hidden, gr.update(), hidden, hidden, hidden, gr.update(), hidden, gr.update(),
                hidden, hidden, hidden, gr.update(), hidden,
                *(gr.update() for _ in range(SLOTS)))

    def arm_confirm(self) -> tuple[Any, Any]:
        """The page's countdown has run out: Confirm (with or without undo) may be clicked
        (a UI guard only)."""
        return gr.update(interactive=True), gr.update(interactive=True)

    async def audit_panel(self, user_id: str | None, user_jwt: str | None
                          ) -> tuple[Any, Any]:
        """The audit accordion: shown to admins only, with the newest entries."""
        try:
            entries = await self.service.audit_entries(user_id=user_id, user_jwt=user_jwt,
                                                       limit=100)
        except _FAILED:  # not an admin, or not signed in
            return gr.update(visible=False), []
        return gr.update(visible=True), entries

    async def stop(self, conv_id: str, user_id: str, user_jwt: str,
                   request: gr.Request = None  # type: ignore[assignment]
                   ) -> ChatUpdate:
        """Stop the page's run. A conversation not stored yet (or not the caller's: the same
        answer) has nothing to stop, so the page simply shows nothing running."""
        try:
            live = await self.service.stop(conv_id=conv_id, user_id=user_id, user_jwt=user_jwt)
            identity = await self.service.authenticate(user_id, user_jwt)
            window = await off_loop(self.service.history_window, identity, conv_id,
                                    from_seq=self.views.shown_from(request, conv_id))
        except ConversationAccessError:
            return [], []
        except _FAILED as exc:
            raise to_gradio(exc) from None
        if live is None:
            return render_window(window, self.policy), []
        return self._render_live(window, live), live.events

    def _render_live(self, window: Any, live: LiveRun) -> list[dict[str, Any]]:
        return ChatView(without_run(window, live.run_id), self.policy, awaiting=False).render(
            live.events, live.request.user_message)

    # page life cycle -------------------------------------------------------------------

    async def on_load(self, saved: Any, stored: Any, request: gr.Request) -> tuple[Any, ...]:
        """Read query parameters once into the hidden context and restore the last visit.

        Demo mode: the browser keeps only the conversation id, the demo role and its visitor
        id (never a token); a new token is minted for that visitor's identity in that role,
        so two visitors who pick the same role stay apart. Otherwise `stored` is the tab's saved
        sign-in or a host's hand-over, verified again. The conversation comes back only if
        it exists and belongs to that user; else the page starts a new one.
        """
        params = dict(request.query_params) if request else {}
        raw = {k: params[k] for k in ("objectType", "objectId", "objectName", "envId", "route")
               if params.get(k)}
        context, warnings = parse_uicontext(raw or None)
        configured = [e.name for e in self.runtime.settings.superset_environments]
        if context and context.envId and context.envId not in configured:
            warnings.append(f"Environment “{context.envId}” is not configured here, so it "
                            f"was not applied; using “{self._default_env()}”.")
            context = context.model_copy(update={"envId": None})
        context_json = json.dumps(context.model_dump(exclude_none=True)) if context else ""
        env = (context.envId if context and context.envId else None) or self._default_env()
        saved = saved if isinstance(saved, dict) else {}
        role = saved.get("user") if saved.get("user") in DEMO_USERS else "viewer"
        if self.signin.active:
            session = await self.signin.restore(stored)
        else:
            visitor = saved.get("visitor") if isinstance(saved.get("visitor"), str) else None
            user_id, token = self._demo_identity(role, visitor)
            session = SessionView(user_id=user_id, user_jwt=token)
        conv_id, chat = await self._restore(saved.get("conv_id"), session.user_id,
                                            session.user_jwt)
        self.views.switch(request, conv_id)
        return (context_json, context_pill(context.model_dump() if context else None, env),
                gr.update(value=env), gr.update(value=role), conv_id, chat,
                *self.env_banner(env), *session.outputs(strip=self.signin.active),
                self.remember(conv_id, role, session.user_id),
                gr.update(interactive=True, placeholder=INPUT_PLACEHOLDER),
                gr.update(interactive=True), context_notice(warnings))

    async def after_sign_in(self, conv_id: Any, user_id: str, user_jwt: str,
                            request: gr.Request = None  # type: ignore[assignment]
                            ) -> tuple[str, list[Any], list[Any]]:
        """Keep the open conversation when it is the signed-in person's, else start anew;
        a failed sign-in (no token) changes nothing on the page."""
        if not user_jwt:
            return gr.update(), gr.update(), gr.update()  # type: ignore[return-value]
        kept, chat = await self._restore(conv_id, user_id, user_jwt)
        self.views.switch(request, kept)
        return kept, chat, []

    async def _restore(self, conv_id: Any, user_id: str, token: str
                       ) -> tuple[str, list[Any]]:
        if isinstance(conv_id, str) and conv_id and user_id:
            try:
                identity = await self.service.authenticate(user_id, token)
                window = await off_loop(self.service.history_window, identity, conv_id)
            except _FAILED:
                window = None
            if window is not None and window.rows:
                return conv_id, render_window(window, self.policy)
        return self.service.new_conversation_id(), []

    @staticmethod
    def remember(conv_id: str, role: str, user_id: str) -> dict[str, Any]:
        """What the browser keeps between visits: no token, only ids. Returned by the same
        callbacks that set those ids (load, user switch, new conversation), never computed
        in a `.change` listener: such a listener reads the other inputs as they were before
        the update that set them all, and on a busy server the stale write won, so a
        reload lost the visitor and its conversation."""
        return {"conv_id": conv_id, "user": role, "visitor": visitor_of(user_id)}

    def switch_user(self, role: str, user_id: str,
                    request: gr.Request = None  # type: ignore[assignment]
                    ) -> tuple[Any, ...]:
        """Demo mode: the same visitor in another role; conversations are per identity, so
        start afresh. Picking the role the page already has changes nothing (a dropdown
        pick can fire twice; the second made another conversation)."""
        if has_role(user_id, role):
            return tuple(gr.skip() for _ in range(6))
        user_id, token = self._demo_identity(role, visitor_of(user_id))
        conv_id, chat, events = self.new_conversation(request)
        return user_id, token, conv_id, chat, events, self.remember(conv_id, role, user_id)

    def new_conversation(self, request: gr.Request = None  # type: ignore[assignment]
                         ) -> tuple[str, list[Any], list[Any]]:
        """A fresh conversation id and an empty chat, now what the tab shows."""
        conv_id = self.service.new_conversation_id()
        self.views.switch(request, conv_id)
        return conv_id, [], []

    def new_chat(self, role: str, user_id: str,
                 request: gr.Request = None  # type: ignore[assignment]
                 ) -> tuple[Any, ...]:
        """The "New conversation" button: a fresh conversation, saved for the next visit."""
        conv_id, chat, events = self.new_conversation(request)
        return conv_id, chat, events, self.remember(conv_id, role, user_id)

    def env_banner(self, env_id: str | None) -> tuple[Any, Any]:
        from agent.environments import tier_of

        tier = tier_of(env_id, self.runtime.settings.environment_tiers)
        is_prod = tier == "prod"
        banner = (f"🔴 **PRODUCTION** — {md_code(env_id)}: changes here affect live users and "
                  "always need an explicit approval." if is_prod else "")
        return gr.update(value=banner, visible=is_prod), gr.update(
            elem_classes=["agent-shell", "prod-tier"] if is_prod else ["agent-shell"])

    def update_pill(self, uicontext_str: str, env_id: str | None) -> str:
        context, _ = parse_uicontext(uicontext_str or None)
        return context_pill(context.model_dump() if context else None, env_id)

    # helpers ---------------------------------------------------------------------------

    def _default_env(self) -> str | None:
        environments = self.runtime.settings.superset_environments
        return environments[0].name if environments else None

    def _demo_identity(self, role: str, visitor: str | None) -> tuple[str, str]:
        """This visit's identity in `role` (a new visitor when the browser had none)."""
        if not self.runtime.settings.is_demo or role not in DEMO_USERS:
            return "", ""
        try:
            identity, token = self.runtime.issuer.mint_demo(role, visitor or new_visitor())
        except IdentityError:  # a malformed visitor id from the browser: a new visit
            identity, token = self.runtime.issuer.mint_demo(role, new_visitor())
        return identity.user_id, token


def has_role(user_id: Any, role: Any) -> bool:
    """The demo identity `user_id` already has `role` (ids are `demo-<role>-<visitor>`)."""
    return isinstance(user_id, str) and isinstance(role, str) and bool(role) and (
        user_id == f"demo-{role}" or user_id.startswith(f"demo-{role}-"))
