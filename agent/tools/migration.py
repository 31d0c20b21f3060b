"""Migration tools (SPEC §4): compare a dashboard across environments, plan and perform its
promotion (export from source, import with overwrite into target), and the history of it."""

from __future__ import annotations

from typing import Any

from agent.errors import ToolFailure, ToolInputError, ToolNotFound
from agent.superset.bundle import Bundle, read_bundle
from agent.superset.client import SupersetClient
from agent.superset.compare import compare_bundles, import_plan, target_index
from agent.tools.registry import ToolContext, ToolSpec
from agent.tools.superset_args import CompareArgs, MigrateArgs, MigrationHistoryArgs
from agent.tools.superset_common import client_for
from storage import migrations_log

__all__ = ["MIGRATION_TOOLS"]


def _clients(args: CompareArgs, ctx: ToolContext) -> tuple[SupersetClient, SupersetClient]:
    if args.source_env == args.target_env:
        raise ToolInputError("source_env and target_env are the same environment; "
                             "name two different ones.")
    return client_for(ctx, args.source_env), client_for(ctx, args.target_env)


async def _export(client: SupersetClient, dashboard_id: int) -> tuple[bytes, Bundle]:
    data = await client.export("dashboard", [dashboard_id],
                               what=f"export of dashboard {dashboard_id}")
    bundle = read_bundle(data)
    if not bundle.of_kind("dashboard"):
        raise ToolFailure(f"The export of dashboard {dashboard_id} from {client.env!r} "
                          "contains no dashboard.")
    return data, bundle


def _dashboard_of(bundle: Bundle) -> dict[str, Any]:
    dash = bundle.of_kind("dashboard")[0]
    return {"uuid": dash.uuid, "title": dash.name}


async def _compare(args: CompareArgs, ctx: ToolContext) -> dict[str, Any]:
    source, target = _clients(args, ctx)
    _, bundle = await _export(source, args.dashboard_id)
    index = await target_index(target)
    dashboard = _dashboard_of(bundle)
    twin = index["dashboard"].get(dashboard["uuid"])
    target_bundle = None
    if twin is not None:
        _, target_bundle = await _export(target, int(twin["id"]))
    result = compare_bundles(bundle, target_bundle, index)
    counts = result["counts"]
    # First, so it survives truncation: a plan ("promote it if they differ") reads it.
    return {"differs": counts["missing"] + counts["different"] > 0,
            "source_env": args.source_env, "target_env": args.target_env,
            "dashboard": {**dashboard, "source_id": args.dashboard_id,
                          "target_id": twin["id"] if twin else None},
            **result}


async def _plan(args: MigrateArgs, ctx: ToolContext) -> dict[str, Any]:
    source, target = _clients(args, ctx)
    _, bundle = await _export(source, args.dashboard_id)
    plan = import_plan(bundle, await target_index(target))
    return {"dry_run": True, "source_env": args.source_env, "target_env": args.target_env,
            "dashboard": {**_dashboard_of(bundle), "source_id": args.dashboard_id}, **plan}


def _record(ctx: ToolContext, **fields: Any) -> int | None:
    """Write the migration record; without a database (bare tool tests) it is skipped."""
    db = ctx.services.db
    if db is None:
        return None
    with db.session() as session:
        return migrations_log.record_migration(
            session=session, user_id=ctx.identity.user_id, **fields).id


async def _migrate(args: MigrateArgs, ctx: ToolContext) -> dict[str, Any]:
    source, target = _clients(args, ctx)
    data, bundle = await _export(source, args.dashboard_id)
    dashboard = _dashboard_of(bundle)
    plan = import_plan(bundle, await target_index(target))
    base = {"source_env": args.source_env, "target_env": args.target_env,
            "dashboard_id": args.dashboard_id, "dashboard_uuid": dashboard["uuid"],
            "dashboard_title": dashboard["title"]}
    try:
        await target.import_bundle("dashboard", data, overwrite=True,
                                   what=f"import of dashboard {dashboard['title']!r}")
    except ToolFailure as exc:
        _record(ctx, **base, status="failed", error=str(exc)[:2000],
                details={"counts": plan["counts"]})
        raise
    after = await target.list_all("dashboard")
    twin = next((row for row in after if str(row.get("uuid")) == dashboard["uuid"]), None)
    if twin is None:
        _record(ctx, **base, status="failed", error="dashboard missing after import")
        raise ToolNotFound(f"Superset ({args.target_env}) accepted the import but the "
                           "dashboard is not there afterwards; check Superset.")
    summary = {key: plan[key] for key in ("create", "overwrite", "reuse")}
    record_id = _record(ctx, **base, status="succeeded", target_dashboard_id=int(twin["id"]),
                        details={"counts": plan["counts"], **summary})
    return {"migrated": True, "source_env": args.source_env, "target_env": args.target_env,
            "dashboard": {**dashboard, "source_id": args.dashboard_id,
                          "target_id": twin["id"]},
            "created": plan["create"], "overwritten": plan["overwrite"],
            "reused": plan["reuse"], "counts": plan["counts"], "record_id": record_id}


async def _history(args: MigrationHistoryArgs, ctx: ToolContext) -> dict[str, Any]:
    db = ctx.services.db
    if db is None:
        raise ToolFailure("Migration history is not available: no database is configured.")
    with db.session() as session:
        rows = migrations_log.list_migrations(session=session, limit=args.limit,
                                              dashboard_id=args.dashboard_id)
        items = [{"id": r.id, "at": r.created_at.isoformat(timespec="seconds"),
                  "user": r.user_id, "source_env": r.source_env, "target_env": r.target_env,
                  "dashboard_id": r.dashboard_id, "dashboard_title": r.dashboard_title,
                  "target_dashboard_id": r.target_dashboard_id, "status": r.status,
                  **({"counts": (r.details or {}).get("counts")} if r.details else {}),
                  **({"error": r.error} if r.error else {})} for r in rows]
    return {"count": len(items), "migrations": items}


def _spec(name: str, description: str, args_schema: Any, risk: str, run: Any) -> ToolSpec:
    # The environments come from source_env/target_env, not from the selected one.
    return ToolSpec(name=name, description=description, args_schema=args_schema,
                    risk=risk, groups=frozenset({"migration", "none"}),  # type: ignore[arg-type]
                    run=run)


MIGRATION_TOOLS = [
    _spec("compare_environments", "Compare one dashboard and its charts, datasets and "
          "databases between two environments by uuid: missing, different (and what "
          "differs) or the same.", CompareArgs, "read", _compare),
    _spec("plan_migration", "Dry run of migrating a dashboard from source_env to target_env: "
          "what would be created, overwritten, or reused. Changes nothing.", MigrateArgs,
          "read", _plan),
    _spec("migration_history", "Show past dashboard migrations between environments, newest "
          "first.", MigrationHistoryArgs, "read", _history),
    _spec("migrate_dashboard", "Migrate a dashboard with its charts, datasets and databases "
          "from source_env to target_env (export, then import with overwrite). Needs a "
          "person's approval; dangerous when the target is prod.", MigrateArgs, "write",
          _migrate),
]
