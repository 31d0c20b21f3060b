"""The composition root: builds the app's object graph from settings (database, gateway,
tools, the agent service, side questions, sign-in).

It sits above `agent/` and `side_questions/` because it is the one place that knows both:
`side_questions` builds on `agent`, never the reverse (tests/test_layers.py). `app.py` and
the tests call `build_runtime`; nothing else constructs these objects, so there is no
module-level state to leak between tests or replicas.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent import long_lived, model_process, tracing
from agent.exports import ExportStore
from agent.identity import DemoIdentity, IdentityProvider, TokenIssuer
from agent.identity.superset import SupersetIdentity
from agent.loop import AgentDeps
from agent.model_gateway import LiteLLMGateway, ModelGateway
from agent.run_leases import RunLeases
from agent.secrets import Scrubber
from agent.service import AgentService
from agent.settings import Settings
from agent.signin import SignInService
from agent.superset.clients import SupersetClients
from agent.tools.catalog import all_tools
from agent.tools.registry import ToolRegistry, ToolServices, ToolSpec
from side_questions.service import SideQuestionService
from side_questions.snapshot_store import SnapshotStore
from storage import Database

if TYPE_CHECKING:
    from superset_demo import DemoSuperset

__all__ = ["Runtime", "build_runtime"]


@dataclass
class Runtime:
    settings: Settings
    db: Database
    gateway: ModelGateway
    registry: ToolRegistry
    issuer: TokenIssuer
    agent: AgentService
    side_questions: SideQuestionService
    superset: SupersetClients
    exports: ExportStore  # export files offered for download (web/exports_ui.py)
    demo_superset: DemoSuperset | None = None  # only when a demo environment is configured
    signin: SignInService | None = None  # AUTH_MODE=superset only

    @property
    def identities(self) -> IdentityProvider:
        return self.agent.identities

    def warm_up(self, *, freeze_heap: bool = False) -> threading.Thread:
        """Pay the first turn's one-time costs in a daemon thread (`app.py` starts it as the
        server starts listening): the tools' schemas (langchain-core's converter and 23
        pydantic JSON schemas, ~0.4 s of CPU) and litellm's import and first call (seconds).
        `freeze_heap` (`python app.py` only): then take what start-up built out of the
        collector's full passes (`agent/long_lived.py`)."""
        thread = threading.Thread(target=self._warm, args=(freeze_heap,), name="warm-up",
                                  daemon=True)
        thread.start()
        return thread

    def _warm(self, freeze_heap: bool) -> None:
        try:
            for spec in self.registry.all():
                _ = spec.openai_schema  # cached on the spec
            if isinstance(self.gateway, LiteLLMGateway | model_process.ProcessGateway):
                self.gateway.warm()
        finally:  # also after a failed warm-up: the collector runs again from here on
            if freeze_heap:
                long_lived.freeze("server")

    async def aclose(self) -> None:
        """Graceful shutdown: main runs are cancelled and awaited so each records its end,
        side questions end as interrupted with what they had, pending snapshots are saved,
        Superset connections close; then `close()`."""
        await self.agent.aclose()
        await self.side_questions.aclose()
        await self.superset.aclose()
        await self.identities.aclose()
        self.close()

    def close(self) -> None:
        if self.demo_superset is not None:
            self.demo_superset.close()
        self.side_questions.stop()  # the stale-request sweeper thread
        if isinstance(self.gateway, model_process.ProcessGateway):
            self.gateway.close()  # the worker process ends with its socket
        self.db.dispose()


def _gateway(settings: Settings, scrubber: Scrubber) -> ModelGateway:
    """litellm in the worker process `python app.py` started (`model_process.start_early`),
    else in this process."""
    delay_s = settings.offline_token_delay_ms / 1000
    worker = model_process.adopt_early()
    if worker is not None:
        return model_process.ProcessGateway(offline_token_delay_s=delay_s, scrubber=scrubber,
                                            worker=worker)
    return LiteLLMGateway(offline_token_delay_s=delay_s, scrubber=scrubber)


def default_tools() -> list[ToolSpec]:
    return all_tools()


def _demo_superset(settings: Settings) -> DemoSuperset | None:
    """The in-process demo server, only when a demo environment exists."""
    if not any(env.base_url is None for env in settings.superset_environments):
        return None
    from superset_demo import DemoSuperset  # only demo deployments need it

    return DemoSuperset(settings.data_dir / "demo_superset.db",
                        faults=settings.demo_faults or None)


def _identity_provider(settings: Settings, issuer: TokenIssuer,
                       demo: Any | None) -> IdentityProvider:
    """The provider AUTH_MODE names (SPEC §10); a misconfiguration stops start-up here."""
    mode = settings.resolved_auth_mode
    if mode == "demo":
        return DemoIdentity(issuer)
    if mode == "jwt":
        from agent.identity.external_jwt import ExternalJwtIdentity

        return ExternalJwtIdentity(
            issuer=settings.auth_jwt_issuer, audience=settings.auth_jwt_audience,
            role_map=settings.auth_role_map, jwks_url=settings.auth_jwt_jwks_url,
            secret=None if settings.auth_jwt_jwks_url else settings.auth_jwt_secret,
            algorithms=settings.auth_jwt_algorithms, user_claim=settings.auth_jwt_user_claim,
            roles_claim=settings.auth_jwt_roles_claim, leeway_s=settings.auth_jwt_leeway_s,
            timeout_s=settings.auth_timeout_s)
    env = settings.identity_environment()
    if env is None:
        raise ValueError(f"AUTH_SUPERSET_ENV={settings.auth_superset_env!r} is not one of the "
                         "configured environments.")
    if env.base_url is None and (demo is None or env.name not in demo.environments):
        raise ValueError(f"Sign-in environment {env.name!r} has no Superset to ask.")
    return SupersetIdentity(
        env=env.name, base_url=env.base_url or demo.base_url(env.name),
        transport=None if env.base_url else demo.transport(), role_map=settings.auth_role_map,
        provider=settings.auth_superset_provider, cache_ttl_s=settings.auth_cache_ttl_s,
        timeout_s=settings.auth_timeout_s)


def build_runtime(
    settings: Settings, *, gateway: ModelGateway | None = None,
    tools: list[ToolSpec] | None = None, database: Database | None = None,
) -> Runtime:
    db = database or Database(settings.database_url)
    db.create_schema()
    scrubber = Scrubber.from_settings(settings)
    gateway = gateway or _gateway(settings, scrubber)
    registry = ToolRegistry(default_tools() if tools is None else tools)
    demo = _demo_superset(settings)
    clients, exports = SupersetClients(settings, demo=demo), ExportStore()
    tool_services = ToolServices(superset=clients, db=db, exports=exports)
    issuer = TokenIssuer(settings.jwt_secret(), ttl_s=settings.auth_token_ttl_s,
                         demo=settings.is_demo)
    identities = _identity_provider(settings, issuer, demo)
    snapshots = SnapshotStore(db)  # the loop publishes snapshots; side questions read them
    # Every model call of a run, a side answer or a summary is a span when tracing is on.
    calls = tracing.TracedGateway(gateway) if tracing.enabled() else gateway
    deps = AgentDeps(settings=settings, db=db, gateway=calls, registry=registry,
                     snapshot_listener=snapshots, services=tool_services, scrubber=scrubber)
    side_questions = SideQuestionService(settings=settings, db=db, gateway=calls,
                                         snapshots=snapshots)
    side_questions.start()  # stale running side questions become interrupted, now and later
    signin = (SignInService(identities, db, settings)
              if isinstance(identities, SupersetIdentity) else None)
    # Main runs share the side questions' instance id (one per process start, its replica
    # part stable across restarts): runs this replica's previous process left end now.
    leases = RunLeases(db, instance_id=side_questions.instance_id,
                       stale_after_s=settings.side_stale_after_s)
    leases.recover_at_start()
    return Runtime(settings=settings, db=db, gateway=gateway, registry=registry, issuer=issuer,
                   agent=AgentService(deps, identities, leases), side_questions=side_questions,
                   superset=clients, exports=exports, demo_superset=demo, signin=signin)
