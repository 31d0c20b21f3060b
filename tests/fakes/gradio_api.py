"""One way tests open a `gradio_client.Client` on the app.

gradio_client reads the app's API description with httpx's default 5 s timeout; on a loaded
2-core machine (CI_STRESS=1) the first `/info` of a fresh server took longer, so tests errored
at setup with `httpx.ReadTimeout` before testing anything. A generous timeout keeps the wait
bounded while only the server's answer, not a clock, decides when the test goes on."""

from __future__ import annotations

from typing import Any

from gradio_client import Client

__all__ = ["API_TIMEOUT_S", "api_client"]

API_TIMEOUT_S = 120.0


def api_client(url: str, **kwargs: Any) -> Client:
    kwargs.setdefault("verbose", False)
    kwargs.setdefault("httpx_kwargs", {"timeout": API_TIMEOUT_S})
    return Client(url, **kwargs)
