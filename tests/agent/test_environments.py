"""Environment tiers (configured, else inferred from the name, else prod) and resolution."""

from __future__ import annotations

import pytest

from agent.environments import infer_tier, resolve_env, tier_of


@pytest.mark.parametrize(("name", "tier"), [
    ("prod", "prod"), ("superset-prd", "prod"), ("LIVE-eu", "prod"), ("production", "prod"),
    ("staging", "staging"), ("stage-2", "staging"), ("uat", "staging"),
    ("preprod", "staging"), ("PreProd-eu", "staging"),
    ("ss-dev", "dev"), ("test", "dev"), ("local", "dev"), ("sandbox-7", "dev"),
    ("analytics", "prod"), ("eu-west", "prod"), ("", "prod"),
])
def test_inferred_tier(name: str, tier: str) -> None:
    assert infer_tier(name) == tier


def test_configured_tier_beats_the_name() -> None:
    configured = {"dev-mirror": "prod", "reporting": None}

    assert tier_of("dev-mirror", configured) == "prod"
    assert tier_of("reporting", configured) == "prod"  # unknown tier: fail safe
    assert tier_of("my-sandbox", configured) == "dev"
    assert tier_of(None, configured) is None
    assert tier_of("", configured) is None


def test_resolution_order_is_tool_arg_then_submit_then_context() -> None:
    assert resolve_env("prod", "ss-dev", "staging") == "prod"
    assert resolve_env(None, "ss-dev", "staging") == "ss-dev"
    assert resolve_env("", "  ", "staging") == "staging"
    assert resolve_env(None, None, None) is None
    assert resolve_env(" staging ") == "staging"


def test_the_settings_hold_the_one_environment_to_tier_map(settings) -> None:  # type: ignore[no-untyped-def]
    """The guard, the run request, the banner and `list_environments` all read this map."""
    from agent.settings import EnvironmentConfig

    configured = settings.model_copy(update={"superset_environments": [
        EnvironmentConfig(name="ss-dev"), EnvironmentConfig(name="analytics"),
        EnvironmentConfig(name="sandbox-eu", tier="prod")]})
    assert configured.environment_tiers == {"ss-dev": "dev", "analytics": "prod",
                                            "sandbox-eu": "prod"}
