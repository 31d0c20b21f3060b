"""Side questions in the page: the panel (accordion beside the chat) and the Gradio API.

`/side_question_submit`, `/side_question_history`, `/side_question_cancel` and
`/side_question_clear` take the page's identity components (conversation, user, token) plus
their own hidden inputs, so `gradio_client` callers set every argument (never `gr.State`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from web.side_handlers import SideHandlers
from web.side_panel import SidePanelHandlers
from web.side_render import EMPTY_HINT
from web.wire_updates import listen_wired

__all__ = ["SideApi", "SidePanel", "render_side_api", "render_side_panel", "wire_side_api",
           "wire_side_panel"]


@dataclass
class SidePanel:
    open_button: gr.Button
    accordion: gr.Accordion
    chat: gr.Chatbot
    question: gr.Textbox
    ask: gr.Button
    stop: gr.Button
    clear: gr.Button


def render_side_panel() -> SidePanel:
    """The "Side questions" accordion: its chat, input, Ask, Stop and Clear."""
    open_button = gr.Button("💬 Side questions", size="sm", variant="secondary",
                            elem_id="side-open")
    with gr.Accordion("Side questions", open=False, elem_id="side-accordion") as accordion:
        chat = gr.Chatbot(label="Side questions (/btw)", elem_id="side-chat", height=320,
                          sanitize_html=True, render_markdown=False, latex_delimiters=[],
                          placeholder=EMPTY_HINT,  # HTML from web.text_policy
                          group_consecutive_messages=False)
        with gr.Row(elem_classes=["input-row"]):
            question = gr.Textbox(placeholder="Quick question about this run…", lines=1,
                                  max_lines=4, show_label=False, scale=5,
                                  elem_id="side-input")
            ask = gr.Button("Ask", variant="primary", scale=0, min_width=70, elem_id="side-ask")
        with gr.Row():
            stop = gr.Button("Stop", variant="stop", size="sm", elem_id="side-stop")
            clear = gr.Button("Clear", variant="secondary", size="sm", elem_id="side-clear")
    return SidePanel(open_button, accordion, chat, question, ask, stop, clear)


def wire_side_panel(panel: SidePanel, handlers: SidePanelHandlers, *, conv_id: gr.Textbox,
                    user_id: gr.Textbox, user_jwt: gr.Textbox, message: gr.Textbox,
                    send: gr.Button) -> Callable[[Any], None]:
    """Wire the panel; returns `show_after(event)` for the page's conversation switches."""
    identity = [conv_id, user_id, user_jwt]
    private = {"api_visibility": "private"}
    # Streams only follow requests; many may be open at once, never behind agent runs.
    # Their updates leave in wire form (`web.wire_updates`).
    streaming = {"concurrency_limit": None, "concurrency_id": "side_panel", **private}
    opened = panel.open_button.click(lambda: gr.Accordion(open=True), None, [panel.accordion],
                                     queue=False, **private)
    for shown in (opened.then, panel.accordion.expand):
        listen_wired(shown, handlers.show, identity, [panel.chat], **streaming)
    for trigger in (panel.question.submit, panel.ask.click):
        listen_wired(trigger, handlers.ask, [*identity, panel.question],
                     [panel.chat, panel.question], **streaming)
    for trigger in (message.submit, send.click):
        trigger(handlers.open_for_btw, [message], [panel.accordion], queue=False, **private)
        listen_wired(trigger, handlers.from_main, [message, *identity], [message, panel.chat],
                     **streaming)
    panel.stop.click(handlers.stop, identity, [panel.chat], queue=False, **private)
    panel.clear.click(handlers.clear, identity, [panel.chat], queue=False, **private)

    def show_after(event: Any) -> None:
        """After `event` put another conversation or person on the page: show that one's
        side history (a stream still on the old one stops, web/side_panel.py).

        Chained by the page after each switch, not a `conv_id.change` listener: a change
        listener reads the other inputs as they were before the update that set them all,
        so after a reload it asked with no user, and its `cancels` stopped the panel's own
        follower; under load the answer then stopped on screen mid-sentence."""
        listen_wired(event.then, handlers.show, identity, [panel.chat], **streaming)

    return show_after


@dataclass
class SideApi:
    question: gr.Textbox
    client_request_id: gr.Textbox
    before: gr.Number
    request_id: gr.Textbox
    result: gr.JSON
    submit: gr.Button
    history: gr.Button
    cancel: gr.Button
    clear: gr.Button


def render_side_api() -> SideApi:
    """Hidden components: rendered into the page (so events bind) but never shown."""
    hidden = {"visible": "hidden"}
    return SideApi(
        question=gr.Textbox(label="question", **hidden),
        client_request_id=gr.Textbox(label="client_request_id", **hidden),
        before=gr.Number(label="before", precision=0, value=None, **hidden),
        request_id=gr.Textbox(label="request_id", **hidden),
        result=gr.JSON(label="side question result", **hidden),
        submit=gr.Button("side submit", **hidden),
        history=gr.Button("side history", **hidden),
        cancel=gr.Button("side cancel", **hidden),
        clear=gr.Button("side clear", **hidden))


def wire_side_api(api: SideApi, handlers: SideHandlers, *, conv_id: gr.Textbox,
                  user_id: gr.Textbox, user_jwt: gr.Textbox) -> None:
    identity = [conv_id, user_id, user_jwt]
    for button, fn, extra, name in (
            (api.submit, handlers.submit, [api.question, api.client_request_id],
             "side_question_submit"),
            (api.history, handlers.history, [api.before], "side_question_history"),
            (api.cancel, handlers.cancel, [api.request_id], "side_question_cancel"),
            (api.clear, handlers.clear, [], "side_question_clear")):
        # Own concurrency group: side questions never wait behind main agent runs.
        button.click(fn, [*identity, *extra], [api.result], api_name=name,
                     api_visibility="public", concurrency_limit=None,
                     concurrency_id="side_questions")
