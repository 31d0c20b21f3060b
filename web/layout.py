"""The Blocks layout of the agent page: header, chat, approval card, side column, hidden
API inputs. Wiring lives in `web.ui`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from runtime import Runtime
from web.chat_window import EARLIER_HREF
from web.conversations_ui import ConversationPanel, render_conversations
from web.edit_form import SLOTS
from web.exports_ui import render_export
from web.side_ui import SidePanel, render_side_panel
from web.signin_ui import SignInStrip, render_session, render_signin

__all__ = ["COUNTDOWN_JS", "CSS_PATH", "ESC_STOPS_JS", "FAVICON_PATH", "KEEP_PLACE_JS",
           "SHOW_EARLIER_JS", "Actions", "Components", "render_page"]

CSS_PATH = Path(__file__).resolve().parent.parent / "assets" / "style.css"
FAVICON_PATH = CSS_PATH.with_name("favicon.svg")

# Dangerous calls: Confirm stays disabled while the card counts down in the page, then the
# hidden "arm" button makes it clickable. A UI guard only; the server never sleeps.
# Esc stops the run (when Stop is shown), as in a terminal or an IDE's agent panel.
ESC_STOPS_JS = """
() => {
  if (window.__agentEsc) return [];
  window.__agentEsc = true;
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape' || event.defaultPrevented) return;
    const stop = document.querySelector('#stop-btn');
    if (stop && stop.offsetParent !== null) stop.click();
  });
  return [];
}
"""

# "Show earlier messages": the chat's first row is a link (web/chat_window.py); a click on
# it clicks the hidden button whose event extends the chat. Where the person was reading
# stays in place: the distance from the bottom of the chat's scroll box is kept, and
# `KEEP_PLACE_JS` (run after the update) scrolls back to it once the older rows are in.
SHOW_EARLIER_JS = """
() => {
  if (window.__agentEarlier) return [];
  window.__agentEarlier = true;
  document.addEventListener('click', (event) => {
    const link = event.target.closest && event.target.closest('a[href="EARLIER_HREF"]');
    if (!link || !link.closest('#agent-chat')) return;
    event.preventDefault();
    event.stopPropagation();
    let box = link.parentElement;
    while (box && !(box.scrollHeight > box.clientHeight &&
                    /(auto|scroll)/.test(getComputedStyle(box).overflowY))) {
      box = box.parentElement;
    }
    window.__agentKeepPlace = box ? {box, fromBottom: box.scrollHeight - box.scrollTop,
                                     height: box.scrollHeight} : null;
    document.querySelector('#chat-earlier')?.click();
  }, true);
  return [];
}
""".replace("EARLIER_HREF", EARLIER_HREF)

KEEP_PLACE_JS = """
() => {
  const kept = window.__agentKeepPlace;
  window.__agentKeepPlace = null;
  if (!kept) return [];
  // The older rows can land some frames after this runs (a busy page renders hundreds of
  // messages): wait for the box to grow (up to 20 s), then hold the place while it settles.
  // The reader's own scrolling, typing or clicking ends the hold at once: it must never
  // take the page back from them. `__agentHoldingPlace` says a hold is on (tests wait on
  // it before the next click, which a hold would scroll away from under the pointer).
  // Wheel and touch listeners are not passive, so the browser tells us before it scrolls
  // (with a passive one it may scroll first and tell us a frame later, after the hold has
  // undone the scroll). A scroll the hold did not make is not taken as the reader's: the
  // chat's own layout moves the box too while the rows land (a scrollbar drag starts with
  // a pointerdown, which ends the hold).
  const inputs = ['wheel', 'touchstart', 'keydown', 'pointerdown'];
  const listening = {capture: true, passive: false};
  let interrupted = false;
  const interrupt = () => { interrupted = true; };
  const end = () => {
    window.__agentHoldingPlace = false;
    inputs.forEach((type) => window.removeEventListener(type, interrupt, listening));
  };
  inputs.forEach((type) => window.addEventListener(type, interrupt, listening));
  window.__agentHoldingPlace = true;
  const box = kept.box;
  const started = performance.now();
  let grown = null;
  const hold = () => {
    const now = performance.now();
    if (interrupted) return end();
    if (grown === null) {
      if (box.scrollHeight !== kept.height) grown = now;
      else if (now - started > 20000) return end();
    }
    if (grown !== null) {
      box.scrollTop = box.scrollHeight - kept.fromBottom;
      if (now - grown > 1000) return end();
    }
    requestAnimationFrame(hold);
  };
  requestAnimationFrame(hold);
  return [];
}
"""

COUNTDOWN_JS = """
() => {
  const start = (tries) => {
    const card = document.querySelector('#confirm-card [data-confirmation]');
    if (!card) { if (tries < 100) setTimeout(() => start(tries + 1), 50); return; }
    const id = card.dataset.confirmation;
    // Where the eye is: the card, then its buttons, scrolled into view (not focused: an
    // Enter meant for the chat must not decide).
    card.scrollIntoView({block: 'nearest'});
    document.querySelector('.action-row')?.scrollIntoView({block: 'nearest'});
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
class Actions:
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
    undo: gr.Button  # "Undo this change": the run's last change with a pre-image (issue 15)
    undo_audit_id: gr.Textbox
    without_undo_value: gr.Textbox
    without_undo: gr.Button  # approve although no copy for undo could be read
    # Edit before approve: the proposed arguments as fields (web/edit_form.py)
    edit: gr.Button
    edit_group: gr.Group
    edit_fields: list[gr.Textbox]
    edit_names: gr.Textbox
    edit_submit: gr.Button
    edit_args: gr.Textbox  # the API's optional `args` of /confirm_tool
    edit_error: gr.Markdown  # why an edit was refused (the field's message)

    @property
    def panel(self) -> list[gr.components.Component]:
        return [self.card, self.confirmation_id, self.confirm, self.deny, self.retry,
                self.retry_call_id, self.undo, self.undo_audit_id, self.without_undo,
                self.edit, self.edit_group, self.edit_names, self.edit_error,
                *self.edit_fields]


def _render_actions() -> Actions:
    card = gr.HTML("", visible=False, elem_id="confirm-card", js_on_load=None)
    with gr.Row(elem_classes=["action-row"]):
        confirm = gr.Button("Confirm", variant="primary", visible=False, elem_id="confirm-btn",
                            scale=0, min_width=120)
        deny = gr.Button("Deny", variant="secondary", visible=False, elem_id="deny-btn",
                         scale=0, min_width=120)
        without_undo = gr.Button("Confirm without undo", variant="secondary", visible=False,
                                 elem_id="confirm-without-undo-btn", scale=0, min_width=120)
        retry = gr.Button("Retry", variant="secondary", visible=False, elem_id="retry-btn",
                          scale=0, min_width=120)
        undo = gr.Button("↩️ Undo this change", variant="secondary", visible=False,
                         elem_id="undo-btn", scale=0, min_width=120)
        edit = gr.Button("Edit…", variant="secondary", visible=False, elem_id="edit-btn",
                         scale=0, min_width=120)
    with gr.Group(visible=False, elem_id="edit-form") as edit_group:
        fields = [gr.Textbox(visible=False, elem_id=f"edit-field-{i}", max_lines=4)
                  for i in range(SLOTS)]
        edit_error = gr.Markdown("", visible=False, elem_id="edit-error",
                                 elem_classes=["context-notice"])
        edit_submit = gr.Button("Confirm with these values", variant="primary",
                                elem_id="edit-submit-btn")
    arm = gr.Button("arm", visible="hidden", elem_id="confirm-arm")
    return Actions(card=card, confirm=confirm, deny=deny, arm=arm, retry=retry,
                    confirmation_id=gr.Textbox(visible=False),
                    retry_call_id=gr.Textbox(visible=False),
                    approve_value=gr.Textbox("approve", visible=False),
                    deny_value=gr.Textbox("deny", visible=False), undo=undo,
                    undo_audit_id=gr.Textbox(visible=False),
                    without_undo_value=gr.Textbox("approve_without_undo", visible=False),
                    without_undo=without_undo, edit=edit, edit_group=edit_group,
                    edit_fields=fields, edit_names=gr.Textbox(visible=False),
                    edit_submit=edit_submit, edit_args=gr.Textbox("", visible=False),
                    edit_error=edit_error)


@dataclass
class AuditUndo:
    """Undo from the audit log: the id of a change whose entry says `"undo": "available"`."""

    change: gr.Number
    undo: gr.Button


def _render_audit() -> tuple[gr.Accordion, gr.JSON, gr.Button, AuditUndo]:
    with gr.Accordion("Audit log", open=False, visible=False,
                      elem_id="audit-accordion") as accordion:
        log = gr.JSON(label="Writes and decisions, newest first", elem_id="audit-log")
        with gr.Row():
            refresh = gr.Button("Refresh", size="sm", elem_id="audit-refresh")
            change = gr.Number(None, label="Change # (an entry with undo available)",
                               precision=0, minimum=1, elem_id="audit-undo-id")
            undo = gr.Button("↩️ Undo change", size="sm", elem_id="audit-undo-btn")
    return accordion, log, refresh, AuditUndo(change, undo)


@dataclass
class Components:
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
    actions: Actions
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
    conversations: ConversationPanel | None = None  # the list (web/conversations_ui.py)
    notice: gr.Markdown | None = None  # what of the page link was not applied
    export_file: gr.File | None = None  # an exported bundle to download
    origin: gr.Textbox | None = None  # where the page's object was found (web/context_check)
    audit_undo: AuditUndo | None = None  # undo a change named in the audit log
    earlier: gr.Button | None = None  # "Show earlier messages", clicked by SHOW_EARLIER_JS


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


def _render_chat() -> tuple[gr.Chatbot, Actions, gr.Textbox, gr.Button, gr.Button, gr.Button]:
    # Messages arrive as HTML already rendered by web.text_policy (the one rendering policy);
    # Gradio's sanitiser still runs on them, LaTeX is off (nothing here needs it).
    chatbot = gr.Chatbot(label="Agent", elem_id="agent-chat", height=520, sanitize_html=True,
                         render_markdown=False, latex_delimiters=[],
                         group_consecutive_messages=False,
                         placeholder="Ask about dashboards, datasets or migrations. "
                         "Every change waits for your approval.")
    actions = _render_actions()
    with gr.Row(elem_classes=["input-row"]):
        # Disabled until the page's identity has arrived (`on_load` enables both): a message
        # sent before would go in as nobody in particular.
        message = gr.Textbox(placeholder="Connecting…", show_label=False, lines=1,
                             max_lines=6, scale=5, elem_id="agent-input", autofocus=True,
                             interactive=False)
        send = gr.Button("Send", variant="primary", scale=0, min_width=80, elem_id="send-btn",
                         interactive=False)
        # Shown only while something runs (the follower shows and hides it); Esc stops too.
        stop = gr.Button("Stop", variant="stop", scale=0, min_width=80, elem_id="stop-btn",
                         visible=False)
    new_chat = gr.Button("New conversation", size="sm", variant="secondary", elem_id="new-chat")
    return chatbot, actions, message, send, stop, new_chat


EPHEMERAL_NOTE = ("ℹ️ This demo keeps its conversations in a temporary directory: they are "
                  "gone when it restarts. (Add persistent storage to the Space to keep them.)")


def render_page(runtime: Runtime) -> Components:
    with gr.Column(elem_classes=["agent-shell"], elem_id="agent-shell") as shell:
        pill, env, user, session = _render_header(runtime)
        signin = render_signin(active=not runtime.settings.is_demo,
                               form=runtime.signin is not None, session=session)
        if runtime.settings.ephemeral_storage:  # a Space without persistent storage
            gr.Markdown(EPHEMERAL_NOTE, elem_classes=["context-notice"],
                        elem_id="storage-notice")
        banner = gr.Markdown("", visible=False, elem_classes=["prod-banner"],
                             elem_id="prod-banner")
        notice = gr.Markdown("", visible=False, elem_classes=["context-notice"],
                             elem_id="context-notice")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=360):
                chatbot, actions, message, send, stop, new_chat = _render_chat()
                export_file = render_export()
            with gr.Column(scale=2, min_width=300, elem_id="side-column"):
                conversations = render_conversations()
                side = render_side_panel()
                with gr.Accordion("Run events", open=False, elem_id="events-accordion"):
                    events = gr.JSON(label="Events of the last run", elem_id="run-events")
                audit, audit_log, audit_refresh, audit_undo = _render_audit()
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
        earlier = gr.Button("Show earlier messages", visible="hidden", elem_id="chat-earlier")
    return Components(shell, pill, env, user, banner, chatbot, message, send, stop, new_chat,
                       events, actions, audit, audit_log, audit_refresh, stash, history,
                       conv_id, user_id, user_jwt, uicontext, saved, *fault_parts,
                      signin=signin, side=side, conversations=conversations,
                      notice=notice, export_file=export_file,
                      origin=gr.Textbox(visible=False), audit_undo=audit_undo,
                      earlier=earlier)
