"""Side-question Gradio API: hidden input components and the four public endpoints.

`/side_question_submit`, `/side_question_history`, `/side_question_cancel` and
`/side_question_clear` take the page's identity components (conversation, user, token) plus
their own hidden inputs, so `gradio_client` callers set every argument (never `gr.State`).
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from web.side_handlers import SideHandlers

__all__ = ["SideApi", "render_side_api", "wire_side_api"]


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
