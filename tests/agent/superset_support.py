"""Test harness for the Superset tools: the real bundled demo server in-process, the real
per-environment clients, and a way to run a tool exactly as the agent loop does."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import execution
from agent.execution import ExecutionResult, validate_args
from agent.identity import Identity
from agent.settings import Settings
from agent.superset.clients import SupersetClients
from agent.tools.catalog import all_tools
from agent.tools.registry import ToolContext, ToolServices, ToolSpec
from superset_demo import DemoSuperset
from superset_demo.store import KINDS


@dataclass
class Harness:
    demo: DemoSuperset
    settings: Settings
    clients: SupersetClients
    services: ToolServices = field(default_factory=ToolServices)
    tools: dict[str, ToolSpec] = field(default_factory=dict)

    def context(self, env_id: str | None = "ss-dev", role: str = "admin") -> ToolContext:
        identity = Identity(user_id=f"demo-{role}", name=role.title(), role=role)  # type: ignore[arg-type]
        return ToolContext(identity=identity, settings=self.settings, env_id=env_id,
                           services=self.services)

    async def run(self, name: str, ctx_env: str | None = "ss-dev", **arguments: Any
                  ) -> ExecutionResult:
        """`ctx_env` is the environment the loop resolved; `env_id` in arguments wins over it.
        Validate and execute like the loop: errors come back as results for the model."""
        spec = self.tools[name]
        args, problem = validate_args(spec, arguments)
        if problem is not None:
            return ExecutionResult(ok=False, text=f"Error: {problem}", error=problem)
        return await run_like_the_loop(spec, args, self.context(ctx_env),
                                       output_limit=self.settings.tool_output_limit_chars)

    async def call(self, name: str, ctx_env: str | None = "ss-dev", **arguments: Any) -> Any:
        """Run the tool function directly; its typed errors propagate."""
        spec = self.tools[name]
        return await spec.run(spec.args_schema.model_validate(arguments), self.context(ctx_env))

    def state(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """Every object of every demo environment, to prove a call changed nothing."""
        return {(env, kind): self.demo.store.all(env, kind)
                for env in self.demo.environments for kind in KINDS}


async def run_like_the_loop(spec: ToolSpec, args: Any, ctx: ToolContext, *,
                            output_limit: int) -> ExecutionResult:
    """The loop's execution path (timeout, retry policy for reads, truncation)."""
    if hasattr(execution, "execute"):  # the retrying executor: a stream ending in a result
        result = None
        async for item in execution.execute(spec, args, ctx, timeout_s=30,
                                            output_limit=output_limit):
            if isinstance(item, ExecutionResult):
                result = item
        assert result is not None
        return result
    return await execution.execute_tool(spec, args, ctx, timeout_s=30,
                                        output_limit=output_limit)


def make_harness(tmp_path: Path, db: Any | None = None) -> Harness:
    settings = Settings(data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path}/x.db",
                        auth_jwt_secret="test-secret-" + "x" * 32)
    demo = DemoSuperset(tmp_path / "demo_superset.db")
    clients = SupersetClients(settings, demo=demo)
    services = ToolServices(superset=clients, db=db)
    return Harness(demo=demo, settings=settings, clients=clients, services=services,
                   tools={spec.name: spec for spec in all_tools()})
