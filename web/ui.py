"""All event wiring of the agent page (`_setup_events`); the layout is `web.layout`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr

from runtime import Runtime
from web.context_check import ContextCheck
from web.conversations_ui import (
    ConversationHandlers,
    PageParts,
    wire_conversation_api,
    wire_conversation_panel,
)
from web.demo_admin import DemoFaultHandlers
from web.exports_ui import ExportHandlers
from web.handlers import Handlers
from web.layout import (
    COUNTDOWN_JS,
    CSS_PATH,
    ESC_STOPS_JS,
    FAVICON_PATH,
    KEEP_PLACE_JS,
    SHOW_EARLIER_JS,
    Components,
    render_page,
)
from web.page_runs import PageRuns
from web.side_handlers import SideHandlers
from web.side_panel import SidePanelHandlers
from web.side_ui import (
    render_side_api,
    wire_side_api,
    wire_side_panel,
)
from web.signin import SignInHandlers
from web.signin_ui import (
    CLEAR_PASSWORD_JS,
    HANDOVER_JS,
    SignInStrip,
    load_js,
    persist_js,
)
from web.wire_updates import listen_wired

__all__ = ["CSS_PATH", "FAVICON_PATH", "build_blocks"]


def _setup_events(blocks: gr.Blocks, c: Components, handlers: Handlers,
                  faults: DemoFaultHandlers, concurrency_limit: int,
                  side_after: Callable[[Any], None]) -> None:
    """`side_after(event)`: the side panel's history after `event` switched conversations."""
    s = c.signin
    session = [c.user_id, c.user_jwt, s.refresh_token, s.expires_in, s.form, s.session,
               s.label, s.message]  # the outputs of every sign-in state change
    keep = [c.user_id, c.user_jwt, s.refresh_token, s.expires_in]  # what the tab stores
    origins = handlers.runtime.settings.auth_host_origins
    agent_inputs = [c.stash, c.history, c.conv_id, c.user_id, c.user_jwt, c.env, c.uicontext]
    identity = [c.conv_id, c.user_id, c.user_jwt]
    a = c.actions
    private = {"api_visibility": "private"}
    runs = PageRuns(handlers)
    exports = ExportHandlers(handlers)
    context_check = ContextCheck(handlers)
    checked = [c.uicontext, c.pill, c.notice, c.origin]  # the page's object, checked
    check_inputs = [c.uicontext, c.env, c.origin, c.user_id, c.user_jwt]
    # Cheap readers: never wait. Their updates leave in wire form (`web.wire_updates`).
    following = {"concurrency_limit": None, "concurrency_id": "page_followers",
                 "trigger_mode": "always_last", **private}
    followed_parts = [c.chatbot, c.events, c.stop]

    def then_follow(event: Any) -> Any:
        """After `event` succeeded: stream the conversation, then show its approval card (or
        Retry) and the audit."""
        followed = listen_wired(event.success, runs.follow, identity, followed_parts,
                                **following)
        followers.append(followed)
        shown = followed.then(handlers.action_panel, [c.events], a.panel, queue=False,
                              **private)
        shown.then(None, None, None, js=COUNTDOWN_JS, **private).then(
            handlers.audit_panel, [c.user_id, c.user_jwt], [c.audit, c.audit_log],
            queue=False, **private)
        refresh_list(shown)  # its title and place by last activity
        shown.then(exports.offer, [c.events, c.user_id, c.user_jwt], [c.export_file],
                   queue=False, **private)
        return followed

    def after_switch(event: Any) -> None:
        """Another conversation is open: its approval card, and its run if one is live."""
        restored = event.success(handlers.restore_actions, identity, a.panel, queue=False,
                                 **private)
        restored.then(None, None, None, js=COUNTDOWN_JS, **private)
        followers.append(listen_wired(restored.then, runs.reattach, identity, followed_parts,
                                      **following))
        switched(event)

    def switched(event: Any) -> None:
        """After `event` put another conversation on the page (its handler told
        `handlers.views` before answering, so followers of the old one stop): show the
        side panel's history of the new one."""
        side_after(event)

    followers: list[Any] = []
    blocks.load(None, None, None, js=ESC_STOPS_JS, **private)
    blocks.load(None, None, None, js=SHOW_EARLIER_JS, **private)
    if c.earlier is not None:  # the chat's "Show earlier messages" row
        # "always_last": a click while the previous one is still in flight (a busy server)
        # runs after it instead of being dropped, as Gradio's default "once" does.
        c.earlier.click(runs.show_earlier, identity, [c.chatbot], queue=False,
                        trigger_mode="always_last", **private).then(
            None, None, None, js=KEEP_PLACE_JS, **private)
    conversations = ConversationHandlers(handlers)
    wire_conversation_api(conversations, conv_id=c.conv_id, user_id=c.user_id,
                          user_jwt=c.user_jwt)
    # Loading follows a run still live (the page was reloaded mid-run), then the card.
    loaded = blocks.load(None, None, [s.stored], js=load_js(origins), **private).then(
        handlers.on_load, [c.saved, s.stored],
        [c.uicontext, c.pill, c.env, c.user, c.conv_id, c.chatbot, c.banner, c.shell,
         *session, c.saved, c.message, c.send, c.notice], queue=False, **private)
    if handlers.signin.active:  # demo tokens are never kept in the browser
        loaded = loaded.then(None, keep, None, js=persist_js(), **private)
    reattached = listen_wired(loaded.then, runs.reattach, identity, followed_parts,
                              **following)
    followers.append(reattached)
    reattached.then(handlers.restore_actions, identity, a.panel, queue=False,
                    **private).then(None, None, None, js=COUNTDOWN_JS, **private)
    assert c.conversations is not None
    refresh_list = wire_conversation_panel(
        c.conversations, conversations,
        PageParts(c.conv_id, c.user_id, c.user_jwt, c.user, c.chatbot, c.events, c.saved),
        followers=followers, after_switch=after_switch)
    refresh_list(loaded)
    switched(loaded)
    loaded.then(context_check.resolve, check_inputs, checked, queue=False, **private)
    submitted = gr.on([c.message.submit, c.send.click], runs.submit,
                      [c.message, c.conv_id, c.user_id, c.user_jwt, c.env, c.uicontext,
                       c.user],
                      [c.message, c.chatbot, c.stop], concurrency_limit=None,
                      concurrency_id="page_submit", **private)  # queued: a refusal is
    # an SSE message the page shows, not an HTTP error response
    submitted.failure(handlers.signin.check, [c.user_id, c.user_jwt], session, queue=False,
                      **private)
    hidden_panel = submitted.success(handlers.hide_actions, None, a.panel, queue=False,
                                     **private)
    then_follow(hidden_panel)
    refresh_list(hidden_panel)  # a first message adds the conversation to the list
    # Confirm, Deny and Retry: the panel hides at once (no double click), then the
    # continuation starts and the follower streams it.
    undo_from_audit = [(c.audit_undo.undo, [*identity, c.audit_undo.change], runs.undo)] \
        if c.audit_undo is not None else []
    for button, inputs, fn in (
            (a.confirm, [*identity, a.confirmation_id, a.approve_value], runs.decide),
            (a.without_undo, [*identity, a.confirmation_id, a.without_undo_value],
             runs.decide),
            (a.deny, [*identity, a.confirmation_id, a.deny_value], runs.decide),
            (a.retry, [*identity, a.retry_call_id], runs.retry),
            (a.undo, [*identity, a.undo_audit_id], runs.undo), *undo_from_audit):
        hidden = button.click(handlers.hide_actions, None, a.panel, queue=False, **private)
        then_follow(hidden.then(fn, inputs, [c.chatbot, c.stop], queue=False, **private))
    # Edit before approve: open the form; submit approves with its values. The panel hides
    # only once the edit was accepted: a bad value leaves the card open with its message.
    a.edit.click(lambda: gr.update(visible=True), None, a.edit_group, queue=False, **private)
    edit_checked = a.edit_submit.click(
        runs.check_edit, [c.user_id, c.user_jwt, a.confirmation_id, a.edit_names,
                          *a.edit_fields], [a.edit_error, a.edit_args], queue=False, **private
    ).then(runs.require_checked, [a.edit_args], None, queue=False, **private)
    then_follow(edit_checked.success(handlers.hide_actions, None, a.panel, queue=False,
                                     **private).then(
        runs.decide, [*identity, a.confirmation_id, a.approve_value, a.edit_args],
        [c.chatbot, c.stop], queue=False, **private))
    _wire_api(c, handlers, agent_inputs, identity, concurrency_limit)
    a.arm.click(handlers.arm_confirm, None, [a.confirm, a.without_undo], queue=False,
                **private)
    c.audit_refresh.click(handlers.audit_panel, [c.user_id, c.user_jwt],
                          [c.audit, c.audit_log], queue=False, **private)
    c.stop.click(runs.stop, [*identity, c.message], [c.chatbot, c.events, c.message, c.stop],
                 queue=False, **private).then(
        handlers.action_panel, [c.events], a.panel, queue=False, **private)
    # Another conversation on the page: stop reading the old one (its run goes on).
    new_chat = c.new_chat.click(handlers.new_chat, [c.user, c.user_id],
                                [c.conv_id, c.chatbot, c.events, c.saved],
                                cancels=followers, queue=False, **private)
    switched(new_chat)
    refresh_list(new_chat.then(handlers.hide_actions, None, a.panel, queue=False, **private))
    # .input, not .change: restoring the role on load must not start a new conversation.
    user_switched = c.user.input(handlers.switch_user, [c.user, c.user_id],
                            [c.user_id, c.user_jwt, c.conv_id, c.chatbot, c.events, c.saved],
                            cancels=followers, queue=False, trigger_mode="once", **private).then(
        handlers.hide_actions, None, a.panel, queue=False, **private)
    refresh_list(user_switched)
    switched(user_switched)
    user_switched.then(
        handlers.audit_panel, [c.user_id, c.user_jwt], [c.audit, c.audit_log],
        queue=False, **private).then(
        faults.visibility, [c.user_id, c.user_jwt], [c.faults], queue=False, **private)
    # .input: the person changed it (a load sets it too, and is checked below).
    # "always_last": Gradio's default ("once") drops a step triggered while the same step is
    # in flight, so switching back during a slow lookup let the earlier answer win (and
    # the dropdown fires .input twice per pick). Only resolve writes the pill: a separate
    # pill step, run for the second .input, rendered it from the context before the
    # first lookup's answer and showed a dropped object again.
    latest = {"queue": False, "trigger_mode": "always_last", **private}
    c.env.input(handlers.env_banner, [c.env], [c.banner, c.shell], **latest).then(
        context_check.resolve, check_inputs, checked, **latest)
    loaded.then(
        handlers.audit_panel, [c.user_id, c.user_jwt], [c.audit, c.audit_log],
        queue=False, **private).then(
        faults.visibility, [c.user_id, c.user_jwt], [c.faults], queue=False, **private)
    _wire_signin(c, s, handlers, faults, session, keep, refresh_list, followers, switched)
    fault_inputs = [c.user_id, c.user_jwt, c.fault_env]
    c.fault_apply.click(faults.apply, [*fault_inputs, c.fault_status, c.fault_count,
                                       c.fault_methods, c.fault_latency], [c.fault_state],
                        queue=False, **private)
    c.fault_clear.click(faults.clear, fault_inputs, [c.fault_state], queue=False, **private)


def _wire_api(c: Components, handlers: Handlers, agent_inputs: list[Any],
              identity: list[Any], concurrency_limit: int) -> None:
    """The public endpoints for programs (SPEC §2): hidden triggers, never clicked by the
    page. Each streams its run; the caller's `job.cancel()` cancels it."""
    streaming = {"concurrency_limit": concurrency_limit, "concurrency_id": "agent_runs",
                 "api_visibility": "public"}
    hidden = {"visible": "hidden"}
    a = c.actions
    for name, fn, inputs in (
            ("agent_handler", handlers.agent_handler, agent_inputs),
            ("confirm_tool", handlers.confirm_tool,
             [*identity, a.confirmation_id, a.approve_value, a.edit_args]),
            ("retry_tool", handlers.retry_tool, [*identity, a.retry_call_id]),
            ("undo_change", handlers.undo_change, [*identity, a.undo_audit_id])):
        listen_wired(gr.Button(name, **hidden).click, fn, inputs, [c.chatbot, c.events],
                     api_name=name, **streaming)


def _wire_signin(c: Components, s: SignInStrip, handlers: Handlers, faults: DemoFaultHandlers,
                 session: list[Any], keep: list[Any], refresh_list: Any,
                 followers: list[Any], switched: Callable[[Any], None]) -> None:
    """Sign in, renew, hand over and sign out: each changes the whole session, then the page
    stores it (or forgets it) in the tab and refreshes what depends on the person."""
    private = {"api_visibility": "private", "queue": False}
    signin = handlers.signin

    def then_refresh(event: Any, *, new_person: bool, cleared: bool = False) -> None:
        """Store the session in the tab; for a (possibly) new person, keep the conversation
        only if it is theirs (`cleared`: the event itself already started a new one)."""
        stored = event.then(None, keep, None, js=persist_js(), api_visibility="private")
        if new_person:
            if not cleared:
                stored = stored.then(handlers.after_sign_in, [c.conv_id, c.user_id, c.user_jwt],
                                     [c.conv_id, c.chatbot, c.events], **private)
            stored = stored.then(
                handlers.remember, [c.conv_id, c.user, c.user_id], [c.saved], **private).then(
                # the conversation's pending approval, if it is this person's (else hidden)
                handlers.restore_actions, [c.conv_id, c.user_id, c.user_jwt],
                c.actions.panel, **private).then(
                None, None, None, js=COUNTDOWN_JS, api_visibility="private")
            switched(stored)
        refresh_list(stored)  # this person's conversations
        stored.then(handlers.audit_panel, [c.user_id, c.user_jwt], [c.audit, c.audit_log],
                    **private).then(
            faults.visibility, [c.user_id, c.user_jwt], [c.faults], **private)

    for trigger in (s.submit.click, s.password.submit):
        signed = trigger(signin.sign_in, [s.username, s.password], session,
                         cancels=followers, **private)
        signed.then(None, None, [s.password], js=CLEAR_PASSWORD_JS, api_visibility="private")
        then_refresh(signed, new_person=True)
    then_refresh(s.renew.click(signin.renew, [s.refresh_token, c.user_id], session,
                               **private), new_person=False)
    handed = s.handover.click(None, None, [s.stored], js=HANDOVER_JS, api_visibility="private")
    then_refresh(handed.then(signin.handover, [s.stored], session, **private), new_person=True)
    def sign_out(user_jwt: Any, request: gr.Request = None  # type: ignore[assignment]
                 ) -> tuple[Any, ...]:
        """Sign out and clear the chat in the same update: on a shared screen the person's
        conversation must not stay in view after "You are signed out" (a later step of the
        chain cleared it, which a busy server made visible for seconds)."""
        return (*signin.sign_out(user_jwt), *handlers.new_conversation(request))

    then_refresh(s.sign_out.click(sign_out, [c.user_jwt],
                                  [*session, c.conv_id, c.chatbot, c.events],
                                  cancels=followers, **private),
                 new_person=True, cleared=True)


def build_blocks(runtime: Runtime) -> gr.Blocks:
    handlers = Handlers(runtime, SignInHandlers(runtime))
    with gr.Blocks(title="Superset Agent", analytics_enabled=False) as blocks:
        components = render_page(runtime)
        side = SideHandlers(runtime)
        side_after: Callable[[Any], None] = lambda event: None  # noqa: E731 (no panel)
        if components.side is not None:
            side_after = wire_side_panel(
                components.side, SidePanelHandlers(side, handlers.policy, handlers.views),
                conv_id=components.conv_id, user_id=components.user_id,
                user_jwt=components.user_jwt, message=components.message,
                send=components.send)
        _setup_events(blocks, components, handlers, DemoFaultHandlers(runtime),
                      runtime.settings.ui_concurrency_limit, side_after)
        wire_side_api(render_side_api(), side, conv_id=components.conv_id,
                      user_id=components.user_id, user_jwt=components.user_jwt)
    return blocks
