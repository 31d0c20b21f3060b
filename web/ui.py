"""The Blocks layout (`_render_*`) and all event wiring (`_setup_events`) of the agent page."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from agent.runtime import Runtime
from web.demo_admin import DemoFaultHandlers
from web.handlers import Handlers
from web.side_handlers import SideHandlers
from web.side_panel import SidePanelHandlers
from web.side_ui import (
    SidePanel,
    render_side_api,
    render_side_panel,
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
    render_session,
    render_signin,
)

__all__ = ["CSS_PATH", "build_blocks"]

CSS_PATH = Path(__file__).resolve().parent.parent / "assets" / "style.css"

# Dangerous calls: Confirm stays disabled while the card counts down in the page, then the
# hidden "arm" button makes it clickable. A UI guard only; the server never sleeps.
COUNTDOWN_JS = """
() => {
  const start = (tries) => {
    const card = document.querySelector('#confirm-card [data-confirmation]');
    if (!card) { if (tries < 100) setTimeout(() => start(tries + 1), 50); return; }
    const id = card.dataset.confirmation;
    const total = parseInt(card.dataset.countdown || '0', 10);
    if (window.__agentCountdown) clearInterval(window.__agentCountdown);
    if (!total) return;
    const until = Date.now() + total * 1000;
    const tick = () => {
      const now = document.querySelector('#confirm-card [data-confirmation]');
      if (!now || now.dataset.confirmation !== id) {
        clearInterval(window.__agentCountdown);
        return;
      }
      const label = now.querySelector('.confirm-countdown');
      const left = Math.ceil((until - Date.now()) / 1000);
      if (left > 0) { if (label) label.textContent = `Confirm unlocks in ${left} s`; return; }
      clearInterval(window.__agentCountdown);
      if (label) label.textContent = 'You can confirm now.';
      const arm = document.querySelector('#confirm-arm');
      if (arm) arm.click();
    };
    tick();
    window.__agentCountdown = setInterval(tick, 200);
  };
  start(0);
  return [];
}
"""


@dataclass
class _Actions:
    """The approval card with Confirm/Deny, and Retry for a failed read."""

    card: gr.HTML
    confirm: gr.Button
    deny: gr.Button
    arm: gr.Button
    retry: gr.Button
    confirmation_id: gr.Textbox
    retry_call_id: gr.Textbox
    approve_value: gr.Textbox
    deny_value: gr.Textbox

    @property
    def panel(self) -> list[gr.components.Component]:
        return [self.card, self.confirmation_id, self.confirm, self.deny, self.retry,
                self.retry_call_id]


def _render_actions() -> _Actions:
    card = gr.HTML("", visible=False, elem_id="confirm-card", js_on_load=None)
    with gr.Row(elem_classes=["action-row"]):
        confirm = gr.Button("Confirm", variant="primary", visible=False, elem_id="confirm-btn",
                            scale=0, min_width=120)
        deny = gr.Button("Deny", variant="secondary", visible=False, elem_id="deny-btn",
                         scale=0, min_width=120)
        retry = gr.Button("Retry", variant="secondary", visible=False, elem_id="retry-btn",
                          scale=0, min_width=120)
    arm = gr.Button("arm", visible="hidden", elem_id="confirm-arm")
    return _Actions(card=card, confirm=confirm, deny=deny, arm=arm, retry=retry,
                    confirmation_id=gr.Textbox(visible=False),
                    retry_call_id=gr.Textbox(visible=False),
                    approve_value=gr.Textbox("approve", visible=False),
                    deny_value=gr.Textbox("deny", visible=False))


def _render_audit() -> tuple[gr.Accordion, gr.JSON, gr.Button]:
    with gr.Accordion("Audit log", open=False, visible=False,
                      elem_id="audit-accordion") as accordion:
        log = gr.JSON(label="Writes and decisions, newest first", elem_id="audit-log")
        refresh = gr.Button("Refresh", size="sm", elem_id="audit-refresh")
    return accordion, log, refresh


@dataclass
class _Components:
    shell: gr.Column
    pill: gr.Markdown
    env: gr.Dropdown
    user: gr.Dropdown
    banner: gr.Markdown
    chatbot: gr.Chatbot
    message: gr.Textbox
    send: gr.Button
    stop: gr.Button
    new_chat: gr.Button
    events: gr.JSON
    actions: _Actions
    audit: gr.Accordion
    audit_log: gr.JSON
    audit_refresh: gr.Button
    # hidden inputs of the API: real components, never gr.State, so API callers can set them
    stash: gr.Textbox
    history: gr.JSON
    conv_id: gr.Textbox
    user_id: gr.Textbox
    user_jwt: gr.Textbox
    uicontext: gr.Textbox
    saved: gr.BrowserState
    # admin-only demo fault injection
    faults: gr.Accordion
    fault_env: gr.Dropdown
    fault_status: gr.Number
    fault_count: gr.Number
    fault_methods: gr.CheckboxGroup
    fault_latency: gr.Number
    fault_apply: gr.Button
    fault_clear: gr.Button
    fault_state: gr.Code
    signin: SignInStrip  # shown outside demo mode (web/signin_ui.py)
    side: SidePanel | None = None  # the side-question accordion (web/side_ui.py)


def _render_faults(envs: list[str]) -> tuple[Any, ...]:
    """Admin-only: make a demo environment fail or slow down, to watch retries and timeouts."""
    with gr.Accordion("Demo faults (admin)", open=False, visible=False,
                      elem_id="faults-accordion") as accordion:
        env = gr.Dropdown(envs, value=envs[0] if envs else None, label="Environment",
                          elem_id="fault-env")
        with gr.Row():
            status = gr.Number(502, label="HTTP status", precision=0, minimum=400,
                               maximum=599, elem_id="fault-status")
            count = gr.Number(1, label="Failing requests", precision=0, minimum=0,
                              maximum=1000, elem_id="fault-count")
            latency = gr.Number(0, label="Latency ms", precision=0, minimum=0,
                                maximum=120_000, elem_id="fault-latency")
        methods = gr.CheckboxGroup(["GET", "POST", "PUT", "DELETE"], value=["GET"],
                                   label="Methods", elem_id="fault-methods")
        with gr.Row():
            apply = gr.Button("Inject", size="sm", variant="stop", elem_id="fault-apply")
            clear = gr.Button("Clear", size="sm", elem_id="fault-clear")
        state = gr.Code("No faults injected.", language="json", label="Active faults",
                        interactive=False, elem_id="fault-state")
    return accordion, env, status, count, methods, latency, apply, clear, state


def _render_header(runtime: Runtime) -> tuple[Any, ...]:
    """Context pill, environment, and the demo user switcher or who is signed in."""
    envs = [env.name for env in runtime.settings.superset_environments]
    demo = runtime.settings.is_demo

    def switcher() -> gr.Dropdown:
        return gr.Dropdown(["viewer", "editor", "admin"], value="viewer", label="Demo user",
                           visible=demo, elem_id="user-select", scale=0, min_width=140)

    with gr.Row(elem_classes=["agent-header"], equal_height=True):
        pill = gr.Markdown("🏠 No object selected", elem_classes=["context-pill"],
                           elem_id="context-pill")
        env = gr.Dropdown(envs, value=envs[0] if envs else None, label="Environment",
                          allow_custom_value=True, elem_id="env-select", scale=0, min_width=160)
        user = switcher() if demo else None
        session = render_session()
    # Outside demo mode the (hidden) switcher stays out of the header's form group.
    return pill, env, user or switcher(), session


def _render_chat() -> tuple[gr.Chatbot, _Actions, gr.Textbox, gr.Button, gr.Button, gr.Button]:
    # Messages arrive as HTML already rendered by web.text_policy (the one rendering policy);
    # Gradio's sanitiser still runs on them, LaTeX is off (nothing here needs it).
    chatbot = gr.Chatbot(label="Agent", elem_id="agent-chat", height=520, sanitize_html=True,
                         render_markdown=False, latex_delimiters=[],
                         group_consecutive_messages=False,
                         placeholder="Ask about dashboards, datasets or migrations. "
                         "Every change waits for your approval.")
    actions = _render_actions()
    with gr.Row(elem_classes=["input-row"]):
        message = gr.Textbox(placeholder="Ask the agent… (/btw for a side question)",
                             show_label=False, lines=1, max_lines=6, scale=5,
                             elem_id="agent-input", autofocus=True)
        send = gr.Button("Send", variant="primary", scale=0, min_width=80, elem_id="send-btn")
        stop = gr.Button("Stop", variant="stop", scale=0, min_width=80, elem_id="stop-btn")
    new_chat = gr.Button("New conversation", size="sm", variant="secondary", elem_id="new-chat")
    return chatbot, actions, message, send, stop, new_chat


def _render(runtime: Runtime) -> _Components:
    with gr.Column(elem_classes=["agent-shell"], elem_id="agent-shell") as shell:
        pill, env, user, session = _render_header(runtime)
        signin = render_signin(active=not runtime.settings.is_demo,
                               form=runtime.signin is not None, session=session)
        banner = gr.Markdown("", visible=False, elem_classes=["prod-banner"],
                             elem_id="prod-banner")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=360):
                chatbot, actions, message, send, stop, new_chat = _render_chat()
            with gr.Column(scale=2, min_width=300, elem_id="side-column"):
                side = render_side_panel()
                with gr.Accordion("Run events", open=False, elem_id="events-accordion"):
                    events = gr.JSON(label="Events of the last run", elem_id="run-events")
                audit, audit_log, audit_refresh = _render_audit()
                fault_parts = _render_faults(
                    [e.name for e in runtime.settings.superset_environments
                     if e.base_url is None])
        stash = gr.Textbox(visible=False)
        history = gr.JSON(value=None, visible=False)
        conv_id = gr.Textbox(visible=False, elem_id="conv-id")
        user_id = gr.Textbox(visible=False)
        user_jwt = gr.Textbox(visible=False)
        uicontext = gr.Textbox(value=None, visible=False)
        saved = gr.BrowserState({}, storage_key="superset-agent-visit")
    return _Components(shell, pill, env, user, banner, chatbot, message, send, stop, new_chat,
                       events, actions, audit, audit_log, audit_refresh, stash, history,
                       conv_id, user_id, user_jwt, uicontext, saved, *fault_parts,
                       signin=signin, side=side)


def _setup_events(blocks: gr.Blocks, c: _Components, handlers: Handlers,
                  faults: DemoFaultHandlers, concurrency_limit: int) -> None:
    s = c.signin
    session = [c.user_id, c.user_jwt, s.refresh_token, s.expires_in, s.form, s.session,
               s.label, s.message]  # the outputs of every sign-in state change
    keep = [c.user_id, c.user_jwt, s.refresh_token, s.expires_in]  # what the tab stores
    origins = handlers.runtime.settings.auth_host_origins
    agent_inputs = [c.stash, c.history, c.conv_id, c.user_id, c.user_jwt, c.env, c.uicontext]
    identity = [c.conv_id, c.user_id, c.user_jwt]
    a = c.actions
    streaming = {"concurrency_limit": concurrency_limit, "concurrency_id": "agent_runs"}
    private = {"api_visibility": "private"}
    run_events = []
    for trigger in (c.message.submit, c.send.click):
        stashed = trigger(handlers.stash_message, [c.message, c.user_id, c.user_jwt],
                          [c.message, c.stash], queue=False, **private)
        stashed.failure(handlers.signin.check, [c.user_id, c.user_jwt], session, queue=False,
                        **private)
        hidden = stashed.success(handlers.hide_actions, None, a.panel, queue=False, **private)
        run_events.append(hidden.then(
            handlers.agent_handler, agent_inputs, [c.chatbot, c.events],
            api_name="agent_handler" if not run_events else "agent_handler_send",
            api_visibility="public" if not run_events else "private", **streaming,
        ))
    # Confirm, Deny and Retry: the panel hides at once (no double click), then the run streams.
    for button, inputs, name, public in (
            (a.confirm, [*identity, a.confirmation_id, a.approve_value], "confirm_tool", True),
            (a.deny, [*identity, a.confirmation_id, a.deny_value], "confirm_tool_deny", False),
            (a.retry, [*identity, a.retry_call_id], "retry_tool", True)):
        fn = handlers.retry_tool if button is a.retry else handlers.confirm_tool
        hidden = button.click(handlers.hide_actions, None, a.panel, queue=False, **private)
        run_events.append(hidden.then(fn, inputs, [c.chatbot, c.events], api_name=name,
                                      api_visibility="public" if public else "private",
                                      **streaming))
    for run in run_events:  # after every run: the action panel, its countdown, the audit log
        run.then(handlers.action_panel, [c.events], a.panel, queue=False, **private).then(
            None, None, None, js=COUNTDOWN_JS, **private).then(
            handlers.audit_panel, [c.user_id, c.user_jwt], [c.audit, c.audit_log],
            queue=False, **private)
    a.arm.click(handlers.arm_confirm, None, [a.confirm], queue=False, **private)
    c.audit_refresh.click(handlers.audit_panel, [c.user_id, c.user_jwt],
                          [c.audit, c.audit_log], queue=False, **private)
    c.stop.click(handlers.stop, identity, [c.chatbot, c.events],
                 cancels=run_events, queue=False, **private).then(
        handlers.action_panel, [c.events], a.panel, queue=False, **private)
    c.new_chat.click(handlers.new_chat, [c.user, c.user_id],
                     [c.conv_id, c.chatbot, c.events, c.saved], queue=False, **private).then(
        handlers.hide_actions, None, a.panel, queue=False, **private)
    # .input, not .change: restoring the role on load must not start a new conversation.
    c.user.input(handlers.switch_user, [c.user, c.user_id], [c.user_id, c.user_jwt, c.conv_id,
                                                   c.chatbot, c.events, c.saved],
                  queue=False, **private).then(
        handlers.hide_actions, None, a.panel, queue=False, **private).then(
        handlers.audit_panel, [c.user_id, c.user_jwt], [c.audit, c.audit_log],
        queue=False, **private).then(
        faults.visibility, [c.user_id, c.user_jwt], [c.faults], queue=False, **private)
    c.env.change(handlers.env_banner, [c.env], [c.banner, c.shell],
                 queue=False, **private).then(
        handlers.update_pill, [c.uicontext, c.env], [c.pill], queue=False, **private)
    loaded = blocks.load(None, None, [s.stored], js=load_js(origins), **private).then(
        handlers.on_load, [c.saved, s.stored],
        [c.uicontext, c.pill, c.env, c.user, c.conv_id, c.chatbot, c.banner, c.shell,
         *session, c.saved], queue=False, **private)
    if handlers.signin.active:  # demo tokens are never kept in the browser
        loaded = loaded.then(None, keep, None, js=persist_js(), **private)
    loaded.then(
        handlers.restore_actions, identity, a.panel, queue=False, **private).then(
        None, None, None, js=COUNTDOWN_JS, **private).then(
        handlers.audit_panel, [c.user_id, c.user_jwt], [c.audit, c.audit_log],
        queue=False, **private).then(
        faults.visibility, [c.user_id, c.user_jwt], [c.faults], queue=False, **private)
    _wire_signin(c, s, handlers, faults, session, keep)
    fault_inputs = [c.user_id, c.user_jwt, c.fault_env]
    c.fault_apply.click(faults.apply, [*fault_inputs, c.fault_status, c.fault_count,
                                       c.fault_methods, c.fault_latency], [c.fault_state],
                        queue=False, **private)
    c.fault_clear.click(faults.clear, fault_inputs, [c.fault_state], queue=False, **private)


def _wire_signin(c: _Components, s: SignInStrip, handlers: Handlers, faults: DemoFaultHandlers,
                 session: list[Any], keep: list[Any]) -> None:
    """Sign in, renew, hand over and sign out: each changes the whole session, then the page
    stores it (or forgets it) in the tab and refreshes what depends on the person."""
    private = {"api_visibility": "private", "queue": False}
    signin = handlers.signin

    def then_refresh(event: Any, *, new_person: bool, fresh: bool = False) -> None:
        """Store the session in the tab; for a (possibly) new person, keep the conversation
        only if it is theirs (`fresh`: always start a new one)."""
        stored = event.then(None, keep, None, js=persist_js(), api_visibility="private")
        if new_person:
            restore = handlers.new_conversation if fresh else handlers.after_sign_in
            stored = stored.then(restore, None if fresh else [c.conv_id, c.user_id, c.user_jwt],
                                 [c.conv_id, c.chatbot, c.events], **private).then(
                handlers.remember, [c.conv_id, c.user, c.user_id], [c.saved], **private).then(
                # the conversation's pending approval, if it is this person's (else hidden)
                handlers.restore_actions, [c.conv_id, c.user_id, c.user_jwt],
                c.actions.panel, **private).then(
                None, None, None, js=COUNTDOWN_JS, api_visibility="private")
        stored.then(handlers.audit_panel, [c.user_id, c.user_jwt], [c.audit, c.audit_log],
                    **private).then(
            faults.visibility, [c.user_id, c.user_jwt], [c.faults], **private)

    for trigger in (s.submit.click, s.password.submit):
        signed = trigger(signin.sign_in, [s.username, s.password], session, **private)
        signed.then(None, None, [s.password], js=CLEAR_PASSWORD_JS, api_visibility="private")
        then_refresh(signed, new_person=True)
    then_refresh(s.renew.click(signin.renew, [s.refresh_token, c.user_id], session,
                               **private), new_person=False)
    handed = s.handover.click(None, None, [s.stored], js=HANDOVER_JS, api_visibility="private")
    then_refresh(handed.then(signin.handover, [s.stored], session, **private), new_person=True)
    then_refresh(s.sign_out.click(signin.sign_out, [c.user_jwt], session, **private),
                 new_person=True, fresh=True)


def build_blocks(runtime: Runtime) -> gr.Blocks:
    handlers = Handlers(runtime, SignInHandlers(runtime))
    with gr.Blocks(title="Superset Agent", analytics_enabled=False) as blocks:
        components = _render(runtime)
        _setup_events(blocks, components, handlers, DemoFaultHandlers(runtime),
                      runtime.settings.ui_concurrency_limit)
        side = SideHandlers(runtime)
        wire_side_api(render_side_api(), side, conv_id=components.conv_id,
                      user_id=components.user_id, user_jwt=components.user_jwt)
        if components.side is not None:
            wire_side_panel(components.side, SidePanelHandlers(side, handlers.policy),
                            conv_id=components.conv_id,
                            user_id=components.user_id, user_jwt=components.user_jwt,
                            message=components.message, send=components.send)
    return blocks
