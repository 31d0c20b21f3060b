"""`AgentService`: identity, conversation ownership, one live run per conversation, Stop,
history across a restart, and that no secret ever reaches the database."""

from __future__ import annotations

import json
import time

import jwt
import pytest

from agent.errors import ConversationAccessError, IdentityError, InputError
from agent.settings import Settings
from runtime import Runtime, build_runtime
from storage import conversations as repo
from tests.fakes.openai_server import ScriptedCall, ScriptedOpenAIServer
from tests.fakes.runs import SENTINEL_KEY, all_rows, collect, of_type, scripted_settings


async def _turn(rt: Runtime, message: str, conv_id: str | None, role: str = "viewer"
                ) -> list[dict]:
    identity, token = rt.issuer.mint_demo(role)
    live = await rt.agent.start_turn(message=message, conv_id=conv_id, user_id=identity.user_id,
                                     user_jwt=token, env_id=None, uicontext_str=None)
    return await collect(live)


# conversations and identity -------------------------------------------------------------------


async def test_empty_conv_id_creates_a_conversation_owned_by_the_caller(runtime: Runtime) -> None:
    identity, token = runtime.issuer.mint_demo("editor")
    live = await runtime.agent.start_turn(message="what can you do?", conv_id="",
                                          user_id=identity.user_id, user_jwt=token,
                                          env_id="ss-dev", uicontext_str=None)
    events = await collect(live)

    assert events[-1]["status"] == "completed"
    assert events[0]["conv_id"] == live.conversation_id
    with runtime.db.session() as session:
        conversation = repo.get_conversation(session=session,
                                             conversation_id=live.conversation_id)
    assert conversation is not None
    assert conversation.owner_id == "demo-editor"
    assert conversation.title == "what can you do?"


async def test_another_users_conversation_is_refused_and_nothing_changes(
    runtime: Runtime,
) -> None:
    await _turn(runtime, "what can you do?", "editors-conv", role="editor")
    # Snapshots are saved coalesced (≤ every 250 ms) after the run: let that land first.
    await runtime.side_questions.snapshots.flush("editors-conv")
    before = all_rows(runtime.db)
    intruder, token = runtime.issuer.mint_demo("viewer")

    with pytest.raises(ConversationAccessError, match=r"^Conversation not found\.$"):
        await runtime.agent.start_turn(message="show me", conv_id="editors-conv",
                                       user_id=intruder.user_id, user_jwt=token,
                                       env_id=None, uicontext_str=None)
    with pytest.raises(ConversationAccessError):
        runtime.agent.history(intruder, "editors-conv")
    with pytest.raises(ConversationAccessError):
        runtime.agent.check_owner(intruder, "editors-conv")

    assert all_rows(runtime.db) == before
    assert runtime.agent.live_run("editors-conv").owner_id == "demo-editor"


async def test_stop_by_another_user_is_refused(scripted: Runtime,
                                               server: ScriptedOpenAIServer) -> None:
    held = server.reply_text("slow answer", deltas=4, hold_after=2)
    owner, owner_token = scripted.issuer.mint_demo("editor")
    live = await scripted.agent.start_turn(message="hi", conv_id="c1", user_id=owner.user_id,
                                           user_jwt=owner_token, env_id=None,
                                           uicontext_str=None)
    try:
        assert await held.until_reached()
        intruder, token = scripted.issuer.mint_demo("admin")
        refusals = []
        for conv_id in ("c1", "never-made"):  # someone else's and unknown: the same answer
            with pytest.raises(ConversationAccessError) as caught:
                await scripted.agent.stop(conv_id=conv_id, user_id=intruder.user_id,
                                          user_jwt=token)
            refusals.append(str(caught.value))
        assert refusals == ["Conversation not found."] * 2
        assert not live.finished.is_set()
    finally:
        held.release.set()
    events = await collect(live)
    assert events[-1]["status"] == "completed"


async def test_token_for_another_subject_is_refused(runtime: Runtime) -> None:
    _, viewer_token = runtime.issuer.mint_demo("viewer")
    before = all_rows(runtime.db)

    with pytest.raises(IdentityError, match="does not match"):
        await runtime.agent.start_turn(message="hi", conv_id="c1", user_id="demo-admin",
                                       user_jwt=viewer_token, env_id=None, uicontext_str=None)

    assert all_rows(runtime.db) == before


async def test_expired_and_forged_tokens_are_refused(runtime: Runtime) -> None:
    now = int(time.time())
    claims = {"sub": "demo-admin", "roles": ["admin"], "iss": "superset-agent"}
    secret = runtime.settings.jwt_secret()
    bad_tokens = {
        "expired": jwt.encode({**claims, "iat": now - 100, "exp": now - 10}, secret,
                              algorithm="HS256"),
        "other secret": jwt.encode({**claims, "exp": now + 600}, "another-secret" * 4,
                                   algorithm="HS256"),
        "unsigned": jwt.encode({**claims, "exp": now + 600}, None, algorithm="none"),
        "garbage": "not-a-jwt",
    }
    for label, token in bad_tokens.items():
        with pytest.raises(IdentityError):
            await runtime.agent.start_turn(message="hi", conv_id=f"c-{label.replace(' ', '-')}",
                                           user_id="demo-admin", user_jwt=token, env_id=None,
                                           uicontext_str=None)
    with runtime.db.session() as session:
        assert repo.get_conversation(session=session, conversation_id="c-expired") is None


async def test_empty_token_is_the_demo_viewer(runtime: Runtime) -> None:
    live = await runtime.agent.start_turn(message="what can you do?", conv_id="anon",
                                          user_id="", user_jwt="", env_id=None,
                                          uicontext_str=None)
    events = await collect(live)

    assert events[-1]["status"] == "completed"
    assert live.owner_id == "demo-viewer"
    with pytest.raises(IdentityError):
        await runtime.agent.authenticate("demo-admin", "")


async def test_without_demo_mode_there_are_no_demo_tokens(settings: Settings) -> None:
    rt = build_runtime(settings.model_copy(update={"demo_mode": False}))
    try:
        with pytest.raises(IdentityError, match="demo mode"):
            rt.issuer.mint_demo("viewer")
        with pytest.raises(IdentityError, match="token is required"):
            await rt.agent.start_turn(message="hi", conv_id="c1", user_id="", user_jwt="",
                                      env_id=None, uicontext_str=None)
        assert all_rows(rt.db)["conversations"] == []
    finally:
        rt.close()


async def test_malformed_conv_id_is_refused(runtime: Runtime) -> None:
    identity, token = runtime.issuer.mint_demo("viewer")
    for conv_id in ("../etc/passwd", "a" * 65, "id with spaces"):
        with pytest.raises(InputError, match="conv_id"):
            await runtime.agent.start_turn(message="hi", conv_id=conv_id,
                                           user_id=identity.user_id, user_jwt=token,
                                           env_id=None, uicontext_str=None)


# one run per conversation ---------------------------------------------------------------------


async def test_second_turn_while_one_runs_is_refused(scripted: Runtime,
                                                     server: ScriptedOpenAIServer) -> None:
    held = server.reply_text("the first answer", deltas=4, hold_after=2)
    server.reply_text("other conversation")
    identity, token = scripted.issuer.mint_demo("viewer")
    first = await scripted.agent.start_turn(message="one", conv_id="c1",
                                            user_id=identity.user_id, user_jwt=token,
                                            env_id=None, uicontext_str=None)
    try:
        assert await held.until_reached()
        with pytest.raises(InputError, match="already in progress"):
            await scripted.agent.start_turn(message="two", conv_id="c1",
                                            user_id=identity.user_id, user_jwt=token,
                                            env_id=None, uicontext_str=None)
        # another conversation of the same user is not blocked
        other = await scripted.agent.start_turn(message="three", conv_id="c2",
                                                user_id=identity.user_id, user_jwt=token,
                                                env_id=None, uicontext_str=None)
        assert (await collect(other))[-1]["status"] == "completed"
    finally:
        held.release.set()
    assert (await collect(first))[-1]["status"] == "completed"
    with scripted.db.session() as session:
        stored = repo.list_messages(session=session, conversation_id="c1")
    assert [m.content for m in stored] == ["one", "the first answer"]


async def test_stop_ends_the_run_with_done_cancelled(scripted: Runtime,
                                                     server: ScriptedOpenAIServer) -> None:
    held = server.reply_text("never finished", deltas=6, hold_after=3)
    identity, token = scripted.issuer.mint_demo("viewer")
    live = await scripted.agent.start_turn(message="hi", conv_id="c1", user_id=identity.user_id,
                                           user_jwt=token, env_id=None, uicontext_str=None)
    assert await held.until_reached()

    stopped = await scripted.agent.stop(conv_id="c1", user_id=identity.user_id, user_jwt=token)
    held.release.set()

    assert stopped is live and live.finished.is_set()
    assert live.status == "cancelled"
    assert live.events[-1]["seq"] > live.events[-2]["seq"]
    with pytest.raises(ConversationAccessError):  # unknown: the same as someone else's
        await scripted.agent.stop(conv_id="nothing-here", user_id=identity.user_id,
                                  user_jwt=token)
    # the conversation is idle now: nothing to stop
    assert await scripted.agent.stop(conv_id="c1", user_id=identity.user_id,
                                     user_jwt=token) is live
    # the conversation is free again
    server.reply_text("next answer")
    events = await _turn(scripted, "again", "c1")
    assert events[-1]["status"] == "completed"


# restart and secrets -------------------------------------------------------------------------


async def test_history_survives_a_restart_and_reaches_the_model(
    settings: Settings, server: ScriptedOpenAIServer
) -> None:
    configured = scripted_settings(settings, server.base_url)
    first = build_runtime(configured)
    server.reply_tool_calls(ScriptedCall("show_capabilities"))
    server.reply_text("I can list dashboards.")
    events = await _turn(first, "what can you do?", "kept")
    assert events[-1]["status"] == "completed"
    first.close()

    second = build_runtime(configured)
    try:
        identity, _ = second.issuer.mint_demo("viewer")
        history = second.agent.history(identity, "kept")
        assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
        server.reply_text("Yes, as I said.")
        events = await _turn(second, "really?", "kept")
    finally:
        second.close()

    assert events[-1]["status"] == "completed"
    sent = server.requests[-1].messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant",
                                         "user"]
    assert sent[1]["content"] == "what can you do?"
    assert sent[2]["tool_calls"][0]["id"] == sent[3]["tool_call_id"]
    assert sent[4]["content"] == "I can list dashboards."
    assert sent[5]["content"] == "really?"


async def test_no_secret_is_stored_or_sent_in_events(
    scripted: Runtime, server: ScriptedOpenAIServer
) -> None:
    identity, token = scripted.issuer.mint_demo("admin")
    server.reply_tool_calls(ScriptedCall("show_capabilities"))
    server.reply_text("Here is what I can do.")
    for _ in range(3):
        server.reply_error(500)
    server.reply_error(401, {"error": {"message": f"Incorrect API key provided: {SENTINEL_KEY}",
                                       "code": "invalid_api_key"}})
    events: list[dict] = []
    for message in ("what can you do?", "and now?", "once more"):
        live = await scripted.agent.start_turn(message=message, conv_id="secret-conv",
                                               user_id=identity.user_id, user_jwt=token,
                                               env_id="ss-dev", uicontext_str=None)
        events += await collect(live)
    assert [e["status"] for e in of_type(events, "done")] == ["completed", "failed", "failed"]

    secrets = [SENTINEL_KEY, token, scripted.settings.jwt_secret()]
    dumped = json.dumps(all_rows(scripted.db), default=str)
    assert "what can you do?" in dumped  # the scan sees real content
    for secret in secrets:
        assert secret not in dumped
        assert secret not in json.dumps(events)


async def test_a_run_cancelled_before_its_first_step_still_ends(runtime: Runtime) -> None:
    """Send then Stop at once, before the task ever ran: the run still ends with
    done(cancelled) and frees the conversation (it used to hang and block it for good), and
    the person's message is kept with the stop (it used to vanish: issue 11)."""
    identity, token = runtime.issuer.mint_demo("viewer")
    live = await runtime.agent.start_turn(message="what can you do?", conv_id="quick",
                                          user_id=identity.user_id, user_jwt=token,
                                          env_id=None, uicontext_str=None)
    live.cancel()

    events = await collect(live, timeout_s=10)

    assert [e["type"] for e in events] == ["run_started", "done"]  # no model call
    assert events[-1]["status"] == "cancelled"
    with runtime.db.session() as session:
        rows = repo.list_messages(session=session, conversation_id="quick")
        run = repo.get_run(session=session, run_id=live.run_id)
    assert [(row.role, row.content, (row.meta or {}).get("status")) for row in rows] == [
        ("user", "what can you do?", None), ("assistant", "", "stopped")]
    assert run is not None and run.status == "cancelled"
    again = await _turn(runtime, "what can you do?", "quick")
    assert again[-1]["status"] == "completed"


async def test_stop_right_after_send_returns_a_settled_run(runtime: Runtime) -> None:
    identity, token = runtime.issuer.mint_demo("viewer")
    live = await runtime.agent.start_turn(message="what can you do?", conv_id="quick",
                                          user_id=identity.user_id, user_jwt=token,
                                          env_id=None, uicontext_str=None)

    stopped = await runtime.agent.stop(conv_id="quick", user_id=identity.user_id,
                                       user_jwt=token, wait_s=10)

    assert stopped is live and live.finished.is_set()
    assert live.status == "cancelled"


async def test_a_failure_outside_the_loop_still_ends_the_run(runtime: Runtime) -> None:
    """If the run cannot even be recorded (here: its conversation vanished before the task
    ran), readers still get done(failed) instead of an event list without an end."""
    identity, token = runtime.issuer.mint_demo("viewer")
    live = await runtime.agent.start_turn(message="what can you do?", conv_id="vanishing",
                                          user_id=identity.user_id, user_jwt=token,
                                          env_id=None, uicontext_str=None)
    with runtime.db.session() as session:  # no await since start_turn: the task has not run
        session.delete(repo.get_conversation(session=session, conversation_id="vanishing"))

    events = await collect(live, timeout_s=10)

    assert events[-1]["type"] == "done"
    assert events[-1]["status"] == "failed"
    assert events[-1]["error"].startswith("Internal error")


async def test_a_nul_character_in_a_message_is_stored_on_every_backend(
    scripted: Runtime, server: ScriptedOpenAIServer
) -> None:
    """PostgreSQL text cannot hold NUL; a pasted NUL must not fail the run there."""
    server.reply_text("Got it\x00 anyway.")

    events = await _turn(scripted, "hello\x00world", "nul")

    assert events[-1]["status"] == "completed", events[-1]
    with scripted.db.session() as session:
        stored = [m.content for m in repo.list_messages(session=session, conversation_id="nul")]
    assert stored[0].startswith("hello") and stored[0].endswith("world")
    assert "\x00" not in "".join(stored)
