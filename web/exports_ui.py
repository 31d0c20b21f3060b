"""The download of an exported bundle in the page (issue 11, item 7): after a run whose
`export_dashboard` kept its ZIP (agent/exports.py), a file appears under the chat with the
bundle's name; only the person who exported gets it."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import gradio as gr

from agent.exports import ExportStore
from web.handlers import _FAILED, Handlers

__all__ = ["ExportHandlers", "render_export"]

_EXPORT_ID = re.compile(r'"export_id":\s*"([0-9a-f]{32})"')


def render_export() -> gr.File:
    return gr.File(label="Exported bundle", visible=False, interactive=False,
                   elem_id="export-file")


class ExportHandlers:
    def __init__(self, handlers: Handlers) -> None:
        self.service = handlers.service
        self.store: ExportStore | None = handlers.runtime.exports
        self.folder = Path(tempfile.mkdtemp(prefix="superset-agent-exports-"))

    async def offer(self, events: Any, user_id: str, user_jwt: str) -> Any:
        """The newest export of the run, as a file to download (hidden when there is none,
        it expired, or it is someone else's)."""
        hidden = gr.update(value=None, visible=False)
        wanted = next((match.group(1) for event in reversed(events or [])
                       if isinstance(event, dict) and event.get("type") == "tool_result"
                       and event.get("tool") == "export_dashboard"
                       and (match := _EXPORT_ID.search(str(event.get("summary") or "")))),
                      None)
        if wanted is None or self.store is None:
            return gr.skip()  # this run exported nothing: leave an earlier offer as it is
        try:
            identity = await self.service.authenticate(user_id, user_jwt)
        except _FAILED:
            return hidden
        kept = self.store.get(wanted, identity.user_id)
        if kept is None:
            return hidden
        path = self.folder / kept.export_id / kept.filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(kept.data)
        return gr.update(value=str(path), visible=True,
                         label=f"Exported bundle of dashboard #{kept.dashboard_id} "
                               f"({kept.env}), {len(kept.data) // 1024 + 1} KB")
