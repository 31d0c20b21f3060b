"""The bare Gradio baseline: a Blocks app whose one streaming endpoint has the app's shape
(`/agent_handler`: seven inputs, `[chatbot, events]` out, the same Chatbot settings) and
yields updates the app sent in a real run, with the same payloads.

Run by the benchmarks as a process of its own (`python -m bench.bare_gradio`), configured by
BENCH_PORT, BENCH_CONCURRENCY (concurrent events, as UI_CONCURRENCY_LIMIT is for the app)
and BENCH_REPLAY: a JSON file `{message: [{"wait_s", "chat", "events"}, ...]}` written by
`bench.clients.save_replay`, read again whenever it changed (it is written after the start,
from the app's run, and a shared server gets more messages later). Each update is yielded
after `wait_s` (the model's own delay for the tokens it carries; 0 for a model without
delay). A message that was not recorded gets the first recording. It imports nothing of
the app: it is what Gradio alone costs.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import gradio as gr


def build(replay_path: Path, concurrency: int) -> gr.Blocks:
    loaded: dict[str, Any] = {"mtime": None, "replay": {}}

    def replay() -> dict[str, list[dict[str, Any]]]:
        mtime = replay_path.stat().st_mtime_ns
        if mtime != loaded["mtime"]:
            loaded.update(mtime=mtime, replay=json.loads(replay_path.read_text()))
        return loaded["replay"]

    async def agent_handler(message: str, history: Any, conv_id: str, user_id: str,
                            user_jwt: str, env_id: str, uicontext: str | None = None
                            ) -> AsyncIterator[tuple[Any, Any]]:
        recorded = replay()
        updates = recorded.get(message) or next(iter(recorded.values()), [])
        for update in updates:
            if update["wait_s"]:
                await asyncio.sleep(update["wait_s"])
            yield update["chat"], update["events"]

    with gr.Blocks(analytics_enabled=False) as demo:
        inputs = [gr.Textbox(visible=False) for _ in range(7)]
        chatbot = gr.Chatbot(sanitize_html=True, render_markdown=False, latex_delimiters=[],
                             group_consecutive_messages=False)
        events = gr.JSON()
        gr.Button(visible=False).click(agent_handler, inputs, [chatbot, events],
                                       api_name="agent_handler",
                                       concurrency_limit=concurrency)
    demo.queue(default_concurrency_limit=concurrency)
    return demo


if __name__ == "__main__":
    demo = build(Path(os.environ["BENCH_REPLAY"]),
                 int(os.environ.get("BENCH_CONCURRENCY", "16")))
    demo.launch(server_name="127.0.0.1", server_port=int(os.environ["BENCH_PORT"]),
                ssr_mode=False, quiet=True)
