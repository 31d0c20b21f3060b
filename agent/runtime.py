"""Builds the app's object graph from settings: database, gateway, tools, services.

`app.py` and the tests call `build_runtime`; nothing else constructs these objects, so there
is no module-level state to leak between tests or replicas.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.identity import TokenIssuer
from agent.loop import AgentDeps
from agent.model_gateway import LiteLLMGateway, ModelGateway
from agent.service import AgentService
from agent.settings import Settings
from agent.superset.clients import SupersetClients
from agent.tools.catalog import all_tools
from agent.tools.registry import ToolRegistry, ToolSpec
from side_questions.service import SideQuestionService
from side_questions.snapshot_store import SnapshotStore
from storage import Database

__all__ = ["Runtime", "build_runtime"]


@dataclass
class Runtime:
    settings: Settings
    db: Database
    gateway: ModelGateway
    registry: ToolRegistry
    issuer: TokenIssuer
    agent: AgentService
    services: dict[str, Any] = field(default_factory=dict)

    async def aclose(self) -> None:
        """Graceful shutdown: side questions end as interrupted with what they had, pending
        snapshots are saved, Superset connections close; then `close()`."""
        side_questions = self.services.get("side_questions")
        if side_questions is not None:
            await side_questions.aclose()
        clients = self.services.get("superset")
        if clients is not None:
            await clients.aclose()
        self.close()

    def close(self) -> None:
        demo = self.services.get("demo_superset")
        if demo is not None:
            demo.close()
        side_questions = self.services.get("side_questions")
        if side_questions is not None:
            side_questions.stop()  # the stale-request sweeper thread
        self.db.dispose()


def default_tools() -> list[ToolSpec]:
    return all_tools()


def _superset_services(settings: Settings, db: Database) -> dict[str, Any]:
    """Per-env Superset clients; the in-process demo server only when a demo env exists."""
    demo = None
    if any(env.base_url is None for env in settings.superset_environments):
        from superset_demo import DemoSuperset  # only demo deployments need it

        demo = DemoSuperset(settings.data_dir / "demo_superset.db",
                            faults=settings.demo_faults or None)
    return {"superset": SupersetClients(settings, demo=demo), "demo_superset": demo, "db": db}


def build_runtime(
    settings: Settings, *, gateway: ModelGateway | None = None,
    tools: list[ToolSpec] | None = None, database: Database | None = None,
) -> Runtime:
    db = database or Database(settings.database_url)
    db.create_schema()
    gateway = gateway or LiteLLMGateway(
        offline_token_delay_s=settings.offline_token_delay_ms / 1000)
    registry = ToolRegistry(default_tools() if tools is None else tools)
    services: dict[str, Any] = _superset_services(settings, db)
    issuer = TokenIssuer(settings.jwt_secret(), ttl_s=settings.auth_token_ttl_s,
                         demo=settings.is_demo)
    snapshots = SnapshotStore(db)  # the loop publishes snapshots; side questions read them
    deps = AgentDeps(settings=settings, db=db, gateway=gateway, registry=registry,
                     snapshot_listener=snapshots, services=services)
    side_questions = SideQuestionService(settings=settings, db=db, gateway=gateway,
                                         snapshots=snapshots)
    side_questions.start()  # stale running side questions become interrupted, now and later
    services["side_questions"] = side_questions
    return Runtime(settings=settings, db=db, gateway=gateway, registry=registry, issuer=issuer,
                   agent=AgentService(deps, issuer), services=services)
