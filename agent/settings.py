"""One pydantic-settings class for every configuration variable of the app (SPEC §1).

`apply_offline_defaults()` must run before gradio or litellm is imported: both phone home
at import time unless told otherwise, and no machine this runs on has internet.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
    YamlConfigSettingsSource,
)

from agent.environments import infer_tier

__all__ = [
    "DEFAULT_ROLE_MAP",
    "OFFLINE_MODEL",
    "EnvironmentConfig",
    "Settings",
    "apply_offline_defaults",
]

OFFLINE_MODEL = "offline-agent/superset-demo"

_OFFLINE_DEFAULTS = {
    # litellm: "True" is the only spelling it accepts; "1" still fetches the cost map.
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "GRADIO_ANALYTICS_ENABLED": "False",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_OFFLINE": "1",
    "LITELLM_TELEMETRY": "False",
}
# Gradio's queue summarises its last 10 000 events with pandas after every event that ends
# (3 ms with a few events, 15 ms with 10 000: a long-running server pays the most), for a
# monitoring page this app does not enable. Read when the queue is made, so set before.
_GRADIO_QUEUE_DEFAULTS = {
    "GRADIO_ANALYTICS_CACHE_FREQUENCY": str(10**12),  # events between summaries: never
    "GRADIO_ANALYTICS_MAX_EVENTS": "100",  # the per-event records it keeps for it
}


def apply_offline_defaults() -> None:
    """Set the no-phone-home variables and Gradio's queue settings above, unless the
    operator set them already."""
    for key, value in {**_OFFLINE_DEFAULTS, **_GRADIO_QUEUE_DEFAULTS}.items():
        os.environ.setdefault(key, value)


Tier = Literal["prod", "staging", "dev"]
Role = Literal["viewer", "editor", "admin"]
DEFAULT_ROLE_MAP: dict[str, Role] = {"Admin": "admin", "Alpha": "editor", "Gamma": "viewer"}


class EnvironmentConfig(BaseModel):
    """One Superset environment. `base_url=None` means the bundled in-process demo server."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    base_url: str | None = None
    tier: Tier | None = None
    auth_mode: Literal["passthrough", "service"] = "service"
    username: str | None = None
    password: str | None = Field(default=None, repr=False)


DEMO_ENVIRONMENTS = [
    EnvironmentConfig(name="ss-dev", tier="dev"),
    EnvironmentConfig(name="staging", tier="staging"),
    EnvironmentConfig(name="prod", tier="prod"),
]


class Settings(BaseSettings):
    """Every knob of the app; read from the environment, then an optional TOML/YAML file."""

    model_config = SettingsConfigDict(extra="ignore", env_ignore_empty=True)

    # Where things live
    database_url: str = "sqlite:///./data/agent.db"
    data_dir: Path = Path("./data")
    # Set on a Space without persistent storage (agent/space.py): the page says so.
    ephemeral_storage: bool = Field(default=False, validation_alias="AGENT_EPHEMERAL_STORAGE")
    config_file: Path | None = Field(default=None, validation_alias="AGENT_CONFIG_FILE")
    # /api/health answers 503 when the database does not answer `SELECT 1` within this.
    database_health_timeout_s: float = Field(default=2.0, gt=0, le=30)

    # Logs (agent/logs.py): one handler, run fields on every line, secrets scrubbed
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = "text"

    # Server
    gradio_server_name: str = "127.0.0.1"
    gradio_server_port: int = Field(default=7860, ge=1, le=65535)
    ui_concurrency_limit: int = Field(default=16, ge=1)
    ui_session_capacity: int = Field(default=1000, ge=1)  # web/gradio_sessions.py
    max_request_body_bytes: int = Field(default=256 * 1024, ge=1024)

    # Models
    agent_model: str = OFFLINE_MODEL
    agent_api_base: str | None = None
    agent_api_key: str | None = Field(default=None, repr=False)
    agent_context_window: int | None = Field(default=None, ge=1024)
    agent_max_output_tokens: int = Field(default=4096, ge=16)
    agent_temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    agent_max_steps: int = Field(default=8, ge=1, le=50)
    # Earlier messages a step sends verbatim besides the current run's own; beyond it the
    # oldest are folded into the rolling summary (agent/prompt_window.py), and a step reads
    # at most twice this many, so the read and the prompt stay bounded.
    agent_history_messages: int = Field(default=200, ge=10, le=10_000)
    agent_model_timeout_s: float = Field(default=120.0, gt=0)
    # `python app.py` makes its model calls from a worker process (agent/model_worker.py:
    # litellm's import runs beside gradio's, on the other core); false keeps them in the
    # server process. An app built in another program's process (create_app) keeps them in.
    agent_model_process: bool = True
    offline_token_delay_ms: int = Field(default=0, ge=0, le=5000)
    max_message_chars: int = Field(default=8000, ge=100)
    agent_max_tool_calls_per_step: int = Field(default=10, ge=1, le=100)

    # Fair shares per user (per process; see agent/fairness.py)
    runs_max_per_user: int = Field(default=4, ge=1)
    runs_per_minute_per_user: float = Field(default=60.0, gt=0)
    runs_burst_per_user: int = Field(default=30, ge=1)
    side_max_running_per_user: int = Field(default=2, ge=1)
    side_per_minute_per_user: float = Field(default=60.0, gt=0)
    side_burst_per_user: int = Field(default=20, ge=1)
    sse_max_per_user: int = Field(default=8, ge=1)

    # Identity (SPEC §10). AUTH_MODE unset: demo when every environment is a bundled demo,
    # else superset. DEMO_MODE is the older switch (true = demo, false = superset).
    auth_mode: Literal["demo", "superset", "jwt"] | None = None
    demo_mode: bool | None = None
    # demo: signs demo tokens (generated into DATA_DIR when unset); jwt: the identity
    # provider's HS256 secret, when it does not publish a JWKS.
    auth_jwt_secret: str | None = Field(default=None, repr=False)
    auth_token_ttl_s: int = Field(default=12 * 3600, ge=60)
    # Superset (and JWT) role names -> app roles; the highest mapped role wins, none refuses.
    auth_role_map: dict[str, Role] = Field(default_factory=lambda: dict(DEFAULT_ROLE_MAP))
    auth_superset_env: str | None = None  # None: the first non-demo environment
    auth_superset_provider: Literal["db", "ldap"] = "db"
    auth_cache_ttl_s: float = Field(default=60.0, ge=0)
    auth_timeout_s: float = Field(default=10.0, gt=0)
    auth_login_max_failures: int = Field(default=5, ge=1)
    auth_login_window_s: float = Field(default=60.0, gt=0)
    # Origins of host frontends allowed to hand a token over by postMessage (own origin always).
    auth_host_origins: list[str] = Field(default_factory=list)
    auth_jwt_jwks_url: str | None = None
    auth_jwt_issuer: str | None = None
    auth_jwt_audience: str | None = None
    auth_jwt_algorithms: list[str] | None = None  # None: RS256+ES256 (JWKS) or HS256 (secret)
    auth_jwt_user_claim: str = "sub"
    auth_jwt_roles_claim: str = "roles"  # a dotted path such as realm_access.roles works too
    auth_jwt_leeway_s: int = Field(default=30, ge=0, le=300)

    # Superset environments
    superset_environments: list[EnvironmentConfig] = Field(
        default_factory=lambda: [env.model_copy() for env in DEMO_ENVIRONMENTS]
    )
    demo_faults: dict[str, Any] = Field(default_factory=dict)

    # Tool execution (SPEC §5, §6)
    tool_timeout_read_s: float = Field(default=20.0, gt=0)
    tool_timeout_write_s: float = Field(default=60.0, gt=0)
    tool_output_limit_chars: int = Field(default=4000, ge=200)
    confirmation_ttl_s: int = Field(default=15 * 60, ge=1)
    dangerous_countdown_s: int = Field(default=10, ge=0)

    # Side questions (SPEC §9)
    side_max_running_per_process: int = Field(default=4, ge=1)
    side_timeout_s: float = Field(default=120.0, gt=0)
    side_max_question_chars: int = Field(default=4000, ge=1)
    # A running side question whose process showed no sign of life for this long is ended
    # as interrupted by any replica (heartbeats every quarter of it, sweeps every half).
    side_stale_after_s: float = Field(default=20.0, gt=0)
    # Which replica this process is. A restarted process with the same name knows its previous
    # incarnation's running side questions are dead and ends them at once; None derives
    # "<hostname>:<port>", unique per replica as long as two never share host and port.
    side_replica_name: str | None = Field(default=None, max_length=96)
    # How long the last write of a finished side answer keeps trying while the database is
    # away (in the background; the client already has the answer). Enough for a 30 s outage.
    side_final_write_s: float = Field(default=60.0, gt=0, le=600)

    @field_validator("superset_environments", mode="before")
    @classmethod
    def _parse_environments(cls, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value

    @field_validator("auth_role_map", "auth_host_origins", "auth_jwt_algorithms",
                     mode="before")
    @classmethod
    def _parse_json_values(cls, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) and value[:1] in "[{" else value

    @field_validator("demo_faults", mode="before")
    @classmethod
    def _parse_faults(cls, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = os.environ.get("AGENT_CONFIG_FILE")
        if path:
            if path.endswith((".yaml", ".yml")):
                sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=path))
            else:
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    # Derived values -------------------------------------------------------------------

    @property
    def resolved_auth_mode(self) -> Literal["demo", "superset", "jwt"]:
        """AUTH_MODE; else DEMO_MODE; else demo exactly when every environment is a demo."""
        if self.auth_mode is not None:
            return self.auth_mode
        if self.demo_mode is not None:
            return "demo" if self.demo_mode else "superset"
        return "demo" if all(env.base_url is None for env in self.superset_environments) \
            else "superset"

    @property
    def is_demo(self) -> bool:
        return self.resolved_auth_mode == "demo"

    @property
    def environment_tiers(self) -> dict[str, str]:
        """Each configured environment's tier: its TIER, else inferred from its name (SPEC
        §3). The one map the guard, the run request and `list_environments` read."""
        return {env.name: env.tier or infer_tier(env.name) for env in self.superset_environments}

    def identity_environment(self) -> EnvironmentConfig | None:
        """Where Superset sign-in happens: AUTH_SUPERSET_ENV, else the first real environment,
        else the first one (the bundled demo, so sign-in can be tried without a Superset)."""
        if self.auth_superset_env:
            return self.environment(self.auth_superset_env)
        real = [env for env in self.superset_environments if env.base_url is not None]
        return (real or self.superset_environments or [None])[0]

    def jwt_secret(self) -> str:
        """The HS256 secret: configured, or generated once and kept in the data directory."""
        if self.auth_jwt_secret:
            return self.auth_jwt_secret
        path = self.data_dir / "jwt_secret"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(secrets.token_urlsafe(48))
            path.chmod(0o600)
        return path.read_text().strip()

    def environment(self, name: str) -> EnvironmentConfig | None:
        return next((env for env in self.superset_environments if env.name == name), None)
