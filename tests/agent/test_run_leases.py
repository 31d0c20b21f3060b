"""Main runs held by the database (issue 12, items 1-4; agent/run_leases.py): one running run
per conversation across runtimes on one database, dead runs ended with true records, live
ones left alone, a graceful shutdown that records, and run order from the database.

The crash itself (a real `python app.py` killed with -9 or SIGTERM) is tests/test_crash_records.py.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from sqlmodel import select

from agent.run_leases import BUSY, INTERRUPTED_MARK, ConversationBusy, RunLeases
from agent.service import SHUTTING_DOWN
from agent.settings import Settings
from runtime import Runtime, build_runtime
from storage import audit as audit_repo
from storage import conversations as repo
from storage import migrations_log
from storage import run_leases as leases_repo
from storage.audit_models import AuditEntry
from storage.models import Message, Run, utcnow
from tests.fakes.runs import collect

SLOW = {"offline_token_delay_ms": 40}


def _runtime(settings: Settings, **overrides: object) -> Runtime:
    return build_runtime(settings.model_copy(update={**SLOW, **overrides}))


async def _start(rt: Runtime, conv_id: str, message: str = "what can you do?"):  # type: ignore[no-untyped-def]
    identity, token = rt.issuer.mint_demo("admin")
    return await rt.agent.start_turn(message=message, conv_id=conv_id, user_id=identity.user_id,
                                     user_jwt=token, env_id="ss-dev", uicontext_str=None)


async def test_two_runtimes_on_one_database_run_one_turn_per_conversation(
        settings: Settings) -> None:
    first = _runtime(settings, side_replica_name="replica-a")
    second = _runtime(settings, side_replica_name="replica-b")
    try:
        outcomes = await asyncio.gather(_start(first, "shared"), _start(second, "shared"),
                                        return_exceptions=True)
        runs = [o for o in outcomes if not isinstance(o, BaseException)]
        refused = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(runs) == 1 and len(refused) == 1, outcomes
        assert isinstance(refused[0], ConversationBusy) and str(refused[0]) == BUSY
        assert (await collect(runs[0]))[-1]["status"] == "completed"
        with first.db.session() as session:
            assert session.exec(select(leases_repo.RunLease)).all() == []
            assert [r.status for r in session.exec(select(Run)).all()] == ["completed"]
        # Freed: the other runtime may take the next turn.
        later = await _start(second, "shared", "which environments are there?")
        assert (await collect(later))[-1]["status"] == "completed"
    finally:
        first.close()
        second.close()


def _dead_run(rt: Runtime, conv_id: str, *, owner: str, heartbeat_ts: float,
              write_sent: bool, write: str = "delete_dashboard",
              args: dict | None = None) -> str:
    """What a process killed mid-step leaves: a lease, a `running` run, the user's
    question, the model's two calls (an approved write and a read) without results, and
    for `write_sent` the write-ahead `executing` row of the write."""
    identity, _ = rt.issuer.mint_demo("admin")
    run_id = f"run-{conv_id}"
    with rt.db.session() as session:
        repo.create_conversation(session=session, owner_id=identity.user_id,
                                 conversation_id=conv_id)
        leases_repo.claim(session=session, conversation_id=conv_id, run_id=run_id,
                          owner=owner, user_id=identity.user_id, now=heartbeat_ts)
        repo.start_run(session=session, run_id=run_id, conversation_id=conv_id,
                       user_id=identity.user_id, model="m", env_id="prod")
        repo.append_message(session=session, conversation_id=conv_id, role="user",
                            content="delete it and list", run_id=run_id)
        repo.append_message(session=session, conversation_id=conv_id, role="assistant",
                            run_id=run_id, tool_calls=[
                                {"id": "w1", "type": "function", "function": {
                                    "name": write, "arguments": "{}"}},
                                {"id": "r1", "type": "function", "function": {
                                    "name": "list_dashboards", "arguments": "{}"}}])
        if write_sent:
            audit_repo.append_entry(session=session, user_id=identity.user_id, role="admin",
                                    action="executing", tool=write, args=args or {},
                                    outcome="sent", conversation_id=conv_id, run_id=run_id,
                                    call_id="w1")
        leases_repo.beat(session=session, run_id=run_id, owner=owner, now=heartbeat_ts,
                         partial="I am deleting")
    return run_id


def _messages(rt: Runtime, conv_id: str) -> list[Message]:
    with rt.db.session() as session:
        return list(repo.list_messages(session=session, conversation_id=conv_id))


def test_a_dead_replicas_run_is_ended_with_true_records(runtime: Runtime) -> None:
    run_id = _dead_run(runtime, "dead", owner="gone-host:7860|1.x",
                       heartbeat_ts=time.time() - 600, write_sent=True)

    assert runtime.agent.leases.sweep() == 1

    rows = _messages(runtime, "dead")
    results = {row.tool_call_id: row for row in rows if row.role == "tool"}
    assert results["w1"].content.startswith("Error: status unknown")
    assert results["w1"].meta == {"status": "unknown"}
    assert results["r1"].content.startswith("Interrupted:")  # a read: never a write's words
    assert rows[-1].role == "assistant" and rows[-1].meta == {"status": "interrupted"}
    assert rows[-1].content == f"I am deleting\n\n{INTERRUPTED_MARK}"
    with runtime.db.session() as session:
        assert session.get(Run, run_id).status == "interrupted"  # type: ignore[union-attr]
        actions = session.exec(select(AuditEntry.action, AuditEntry.outcome)
                               .where(AuditEntry.call_id == "w1")).all()
        assert session.exec(select(leases_repo.RunLease)).all() == []
    assert [a for a, _ in actions] == ["executing", "executed"]
    assert "status unknown" in actions[-1][1]
    assert runtime.agent.leases.sweep() == 0  # ended once


def test_a_migration_in_flight_at_a_crash_is_listed_as_unknown(runtime: Runtime) -> None:
    """`migration_history` reads the migration records: the import nobody saw end is there
    as `unknown`, as the audit log says (issue 12, item 1)."""
    _dead_run(runtime, "dead-migration", owner="gone-host:7860|1.x",
              heartbeat_ts=time.time() - 600, write_sent=True, write="migrate_dashboard",
              args={"dashboard_id": 3, "source_env": "ss-dev", "target_env": "prod"})

    assert runtime.agent.leases.sweep() == 1

    with runtime.db.session() as session:
        records = list(migrations_log.list_migrations(session=session))
    assert [(r.status, r.dashboard_id, r.source_env, r.target_env) for r in records] == [
        ("unknown", 3, "ss-dev", "prod")]
    assert "status unknown" in (records[0].error or "")


def test_a_write_never_sent_is_not_executed_and_a_live_replica_is_left_alone(
        runtime: Runtime) -> None:
    _dead_run(runtime, "never-sent", owner="gone-host:7860|1.x",
              heartbeat_ts=time.time() - 600, write_sent=False)
    _dead_run(runtime, "alive", owner="other-host:7860|2.y", heartbeat_ts=time.time(),
              write_sent=False)

    assert runtime.agent.leases.sweep() == 1

    never = {r.tool_call_id: r for r in _messages(runtime, "never-sent") if r.role == "tool"}
    assert never["w1"].content.startswith("Interrupted:") or never["w1"].content.startswith(
        "Not executed")
    assert [r.role for r in _messages(runtime, "alive")] == ["user", "assistant"]  # untouched


def test_a_restart_of_the_same_replica_ends_its_runs_at_once(settings: Settings) -> None:
    first = build_runtime(settings.model_copy(update={"side_replica_name": "same"}))
    run_id = _dead_run(first, "restarted", owner=first.agent.leases.instance_id,
                       heartbeat_ts=time.time(), write_sent=True)
    first.close()  # as kill -9 would leave it: nothing recorded

    again = build_runtime(settings.model_copy(update={"side_replica_name": "same"}))
    try:
        with again.db.session() as session:
            assert session.get(Run, run_id).status == "interrupted"  # type: ignore[union-attr]
    finally:
        again.close()


async def test_graceful_shutdown_cancels_records_and_refuses_new_runs(
        settings: Settings) -> None:
    rt = _runtime(settings)
    live = await _start(rt, "closing")
    while not any(e["type"] == "token" for e in live.events):
        await asyncio.sleep(0.01)
    await rt.agent.aclose()
    assert live.finished.is_set() and live.status == "cancelled"
    with rt.db.session() as session:
        assert session.get(Run, live.run_id).status == "cancelled"  # type: ignore[union-attr]
        assert session.exec(select(leases_repo.RunLease)).all() == []
    with pytest.raises(Exception, match=SHUTTING_DOWN):
        await _start(rt, "closing-2")
    rt.close()


def test_run_order_comes_from_the_database_not_this_clock(runtime: Runtime) -> None:
    """A replica whose clock is behind still orders its run after the conversation's last."""
    identity, _ = runtime.issuer.mint_demo("admin")
    ahead = utcnow() + timedelta(hours=1)  # written by a replica whose clock runs ahead
    with runtime.db.session() as session:
        repo.create_conversation(session=session, owner_id=identity.user_id,
                                 conversation_id="order")
        session.add(Run(id="ahead", conversation_id="order", user_id=identity.user_id,
                        model="m", started_at=ahead))
    with runtime.db.session() as session:
        later = repo.start_run(session=session, run_id="later", conversation_id="order",
                               user_id=identity.user_id, model="m", env_id=None)
        assert later.started_at > ahead


def test_leases_need_an_instance_id_with_a_replica() -> None:
    leases = RunLeases(None, instance_id="host:1|9.abc", stale_after_s=20)  # type: ignore[arg-type]
    assert leases.replica == "host:1" and leases.timings.heartbeat_s == 5
