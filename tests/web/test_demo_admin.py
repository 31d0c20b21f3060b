"""The demo-fault controls check the verified role on every call, not only by hiding."""

from __future__ import annotations

import gradio as gr
import pytest

from web.demo_admin import DemoFaultHandlers


async def test_only_admins_can_inject_faults(runtime) -> None:  # type: ignore[no-untyped-def]
    handlers = DemoFaultHandlers(runtime)
    demo = runtime.demo_superset
    viewer, viewer_token = runtime.issuer.mint_demo("viewer")
    with pytest.raises(gr.Error, match="Only admins"):
        await handlers.apply(viewer.user_id, viewer_token, "ss-dev", 502, 1, ["GET"], 0)
    assert demo.get_faults() == {}

    admin, admin_token = runtime.issuer.mint_demo("admin")
    state = await handlers.apply(admin.user_id, admin_token, "staging", 503, 2, ["GET"], 10)
    assert '"status": 503' in state and demo.get_faults()["staging"]["count"] == 2
    with pytest.raises(gr.Error, match="not changed"):
        await handlers.apply(admin.user_id, admin_token, "nowhere", 502, 1, ["GET"], 0)
    with pytest.raises(gr.Error, match="not changed"):
        await handlers.apply(admin.user_id, admin_token, "ss-dev", 200, 1, ["GET"], 0)
    assert await handlers.clear(admin.user_id, admin_token, "staging") == "No faults injected."


async def test_panel_visibility_follows_the_token(runtime) -> None:  # type: ignore[no-untyped-def]
    handlers = DemoFaultHandlers(runtime)
    admin, admin_token = runtime.issuer.mint_demo("admin")
    editor, editor_token = runtime.issuer.mint_demo("editor")
    assert (await handlers.visibility(admin.user_id, admin_token))["visible"] is True
    assert (await handlers.visibility(editor.user_id, editor_token))["visible"] is False
    assert (await handlers.visibility("demo-admin", "forged"))["visible"] is False
