"""The Blocks layout (`_render_*`) and all event wiring (`_setup_events`) of the agent page."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from agent.runtime import Runtime
from web.handlers import Handlers

__all__ = ["CSS_PATH", "build_blocks"]

CSS_PATH = Path(__file__).resolve().parent.parent / "assets" / "style.css"


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
    # hidden inputs of the API: real components, never gr.State, so API callers can set them
    stash: gr.Textbox
    history: gr.JSON
    conv_id: gr.Textbox
    user_id: gr.Textbox
    user_jwt: gr.Textbox
    uicontext: gr.Textbox


def _render_header(runtime: Runtime) -> tuple[gr.Markdown, gr.Dropdown, gr.Dropdown]:
    envs = [env.name for env in runtime.settings.superset_environments]
    with gr.Row(elem_classes=["agent-header"], equal_height=True):
        pill = gr.Markdown("🏠 No object selected", elem_classes=["context-pill"],
                           elem_id="context-pill")
        env = gr.Dropdown(envs, value=envs[0] if envs else None, label="Environment",
                          allow_custom_value=True, elem_id="env-select", scale=0, min_width=160)
        user = gr.Dropdown(["viewer", "editor", "admin"], value="viewer", label="Demo user",
                           visible=runtime.settings.is_demo, elem_id="user-select", scale=0,
                           min_width=140)
    return pill, env, user


def _render_chat() -> tuple[gr.Chatbot, gr.Textbox, gr.Button, gr.Button, gr.Button]:
    chatbot = gr.Chatbot(label="Agent", elem_id="agent-chat", height=520,
                         sanitize_html=True, render_markdown=True, group_consecutive_messages=False,
                         placeholder="Ask about dashboards, datasets or migrations. "
                         "Every change waits for your approval.")
    with gr.Row(elem_classes=["input-row"]):
        message = gr.Textbox(placeholder="Ask the agent… (/btw for a side question)",
                             show_label=False, lines=1, max_lines=6, scale=5,
                             elem_id="agent-input", autofocus=True)
        send = gr.Button("Send", variant="primary", scale=0, min_width=80, elem_id="send-btn")
        stop = gr.Button("Stop", variant="stop", scale=0, min_width=80, elem_id="stop-btn")
    new_chat = gr.Button("New conversation", size="sm", variant="secondary", elem_id="new-chat")
    return chatbot, message, send, stop, new_chat


def _render(runtime: Runtime) -> _Components:
    with gr.Column(elem_classes=["agent-shell"], elem_id="agent-shell") as shell:
        pill, env, user = _render_header(runtime)
        banner = gr.Markdown("", visible=False, elem_classes=["prod-banner"],
                             elem_id="prod-banner")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=360):
                chatbot, message, send, stop, new_chat = _render_chat()
            with gr.Column(scale=2, min_width=300, elem_id="side-column"):
                with gr.Accordion("Run events", open=False, elem_id="events-accordion"):
                    events = gr.JSON(label="Events of the last run", elem_id="run-events")
        stash = gr.Textbox(visible=False)
        history = gr.JSON(value=None, visible=False)
        conv_id = gr.Textbox(visible=False, elem_id="conv-id")
        user_id = gr.Textbox(visible=False)
        user_jwt = gr.Textbox(visible=False)
        uicontext = gr.Textbox(value=None, visible=False)
    return _Components(shell, pill, env, user, banner, chatbot, message, send, stop, new_chat,
                       events, stash, history, conv_id, user_id, user_jwt, uicontext)


def _setup_events(blocks: gr.Blocks, c: _Components, handlers: Handlers,
                  concurrency_limit: int) -> None:
    agent_inputs = [c.stash, c.history, c.conv_id, c.user_id, c.user_jwt, c.env, c.uicontext]
    run_events = []
    for trigger in (c.message.submit, c.send.click):
        stashed = trigger(handlers.stash_message, [c.message], [c.message, c.stash],
                          queue=False, api_visibility="private")
        run_events.append(stashed.then(
            handlers.agent_handler, agent_inputs, [c.chatbot, c.events],
            api_name="agent_handler" if not run_events else "agent_handler_send",
            api_visibility="public" if not run_events else "private",
            concurrency_limit=concurrency_limit, concurrency_id="agent_runs",
        ))
    c.stop.click(handlers.stop, [c.conv_id, c.user_id, c.user_jwt], [c.chatbot, c.events],
                 cancels=run_events, api_visibility="private", queue=False)
    c.new_chat.click(handlers.new_conversation, None, [c.conv_id, c.chatbot, c.events],
                     api_visibility="private", queue=False)
    c.user.change(handlers.switch_user, [c.user], [c.user_id, c.user_jwt, c.conv_id,
                                                   c.chatbot, c.events],
                  api_visibility="private", queue=False)
    c.env.change(handlers.env_banner, [c.env], [c.banner, c.shell],
                 api_visibility="private", queue=False).then(
        handlers.update_pill, [c.uicontext, c.env], [c.pill], api_visibility="private",
        queue=False)
    blocks.load(handlers.on_load, None,
                [c.uicontext, c.pill, c.env, c.user_id, c.user_jwt, c.conv_id, c.banner,
                 c.shell], api_visibility="private", queue=False)


def build_blocks(runtime: Runtime) -> gr.Blocks:
    handlers = Handlers(runtime)
    with gr.Blocks(title="Superset Agent", analytics_enabled=False) as blocks:
        components = _render(runtime)
        _setup_events(blocks, components, handlers, runtime.settings.ui_concurrency_limit)
    return blocks
