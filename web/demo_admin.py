"""Admin-only demo controls: inject or clear faults in a demo Superset environment (SPEC §8).

The role comes from the verified token on every call, so hiding the panel is not the guard.
"""

from __future__ import annotations

import json
from typing import Any

import gradio as gr
from pydantic import ValidationError

from agent.errors import AgentError
from runtime import Runtime
from web.errors import gradio_error, to_gradio

__all__ = ["DemoFaultHandlers"]


class DemoFaultHandlers:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    @property
    def available(self) -> bool:
        return self.runtime.demo_superset is not None

    async def _demo_for_admin(self, user_id: str, user_jwt: str) -> Any:
        try:
            identity = await self.runtime.agent.authenticate(user_id, user_jwt)
        except AgentError as exc:
            raise to_gradio(exc) from None
        if identity.role != "admin":
            raise gradio_error("Only admins can change demo faults.")
        demo = self.runtime.demo_superset
        if demo is None:
            raise gradio_error("No demo Superset is running.")
        return demo

    def _describe(self, demo: Any) -> str:
        faults = demo.get_faults()
        return json.dumps(faults, indent=1) if faults else "No faults injected."

    async def apply(self, user_id: str, user_jwt: str, env: str, status: float, count: float,
                    methods: list[str], latency_ms: float) -> str:
        demo = await self._demo_for_admin(user_id, user_jwt)
        spec = {"status": int(status), "count": int(count), "methods": methods or None,
                "latency_ms": int(latency_ms)}
        try:
            demo.set_faults(env, spec)
        except (KeyError, ValidationError, ValueError) as exc:
            raise gradio_error(f"Faults not changed: {exc}") from None
        return self._describe(demo)

    async def clear(self, user_id: str, user_jwt: str, env: str) -> str:
        demo = await self._demo_for_admin(user_id, user_jwt)
        try:
            demo.set_faults(env, None)
        except KeyError as exc:
            raise gradio_error(f"Faults not changed: {exc}") from None
        return self._describe(demo)

    async def visibility(self, user_id: str, user_jwt: str) -> Any:
        """Show the panel to admins only (the handlers check again on every call)."""
        try:
            identity = await self.runtime.agent.authenticate(user_id, user_jwt)
        except AgentError:
            return gr.update(visible=False)
        return gr.update(visible=self.available and identity.role == "admin")
