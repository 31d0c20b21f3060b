"""Tool specs (langchain-core definitions plus risk, minimum role, groups) and selection.

Selection is a pipeline (SPEC §4): RBAC exclusion first, then context affinity. Only the
survivors are described to the model; the invocation guard re-checks every call against
the same rules, so a tool that was not offered can never run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, SecretStr

from agent.identity import Identity, role_at_least
from agent.settings import Settings

if TYPE_CHECKING:
    from agent.exports import ExportStore
    from agent.superset.clients import SupersetClients
    from storage import Database

__all__ = [
    "AFFINITY_GROUPS",
    "ToolContext",
    "ToolRegistry",
    "ToolServices",
    "ToolSpec",
    "select_tools",
]

ToolRisk = Literal["read", "write", "dangerous"]
# "always": offered in every context; "none": offered only when the page names no object.
AFFINITY_GROUPS = ("always", "none", "dashboard", "dataset", "migration")
_ROLE_FOR_RISK = {"read": "viewer", "write": "editor", "dangerous": "admin"}


@dataclass(frozen=True)
class ToolServices:
    """The shared objects tools reach, built once by the composition root. Each is optional
    so a tool test passes only what it uses; a tool that needs a missing one says so."""

    superset: SupersetClients | None = None
    db: Database | None = None  # migration records and history
    exports: ExportStore | None = None  # dashboard export files offered for download


@dataclass
class ToolContext:
    """What a tool may use while it runs. `superset_token` is the caller's own Superset
    token for passthrough environments; only the Superset client reads it."""

    identity: Identity
    settings: Settings
    env_id: str | None
    offered: list[ToolSpec] = field(default_factory=list)
    services: ToolServices = field(default_factory=ToolServices)
    superset_token: SecretStr | None = field(default=None, repr=False)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    args_schema: type[BaseModel]
    risk: ToolRisk
    groups: frozenset[str]
    run: Callable[[BaseModel, ToolContext], Awaitable[Any]]
    min_role: str | None = None  # defaults from the risk class
    uses_env: bool = False

    @property
    def required_role(self) -> str:
        return self.min_role or _ROLE_FOR_RISK[self.risk]

    @cached_property
    def openai_schema(self) -> dict[str, Any]:
        """What the model sees of the tool: the OpenAI tool that langchain-core's
        `convert_to_openai_tool` makes of it as a `StructuredTool` (tests/agent/
        test_tool_schemas.py compares the two for every tool), made by langchain-core's own
        JSON-schema converter from the arguments' model. Going through a `StructuredTool`
        imports `langchain_core.tools`, which pulls in langsmith: 0.8 s of CPU and 23 MB,
        paid after the server listens and on the first answer's path. As in the tool's call
        schema, the arguments' top level drops `extra="forbid"`'s `additionalProperties`."""
        from langchain_core.utils.function_calling import (
            _convert_json_schema_to_openai_function,
        )

        schema = self.args_schema.model_json_schema()
        schema.pop("additionalProperties", None)
        function = _convert_json_schema_to_openai_function(
            schema, name=self.name, description=self.description)
        return {"type": "function", "function": dict(function)}

    def offered_in(self, object_type: str | None) -> bool:
        if "always" in self.groups:
            return True
        return (object_type or "none") in self.groups


class ToolRegistry:
    """All tools the app knows, by name."""

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: ToolSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"duplicate tool {spec.name}")
        unknown = spec.groups - set(AFFINITY_GROUPS)
        if unknown:
            raise ValueError(f"{spec.name}: unknown groups {unknown}")
        self._specs[spec.name] = spec

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def all(self) -> list[ToolSpec]:
        return list(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)


def select_tools(registry: ToolRegistry, *, role: str, object_type: str | None) -> list[ToolSpec]:
    """RBAC exclusion, then context affinity; `show_capabilities` always survives."""
    permitted = [spec for spec in registry.all() if role_at_least(role, spec.required_role)]
    return [spec for spec in permitted if spec.offered_in(object_type)]
