"""One Superset client per configured environment, built once from settings.

Demo environments (`base_url=None`) talk to the bundled in-process demo server through its
ASGI transport, with a service login as `admin` unless they are passthrough. Every
environment uses either a service login (`auth_mode="service"`) or the person's own token
(`auth_mode="passthrough"`: each request carries the caller's Superset token, so Superset's
own permissions apply to what the agent does for them).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

from agent.errors import ToolAuthError, ToolInputError
from agent.settings import EnvironmentConfig, Settings
from agent.superset.auth import ServiceAuth
from agent.superset.client import SupersetClient

__all__ = ["DEMO_SERVICE_USER", "SupersetClients"]

DEMO_SERVICE_USER = ("admin", "admin")
_PASSTHROUGH_CACHE = 64


class _MissingCredentials:
    """Auth for a service environment configured without a username/password."""

    def __init__(self, env: str) -> None:
        self._env = env

    async def access_token(self, http: Any, env: str) -> str:
        raise ToolAuthError(f"Environment {env!r} uses a service login but has no username "
                            "and password configured.")

    async def renew(self, http: Any, env: str, stale: str) -> bool:
        return False


class SupersetClients:
    """The registry tools ask for a client: `clients.get(env_id)`."""

    def __init__(self, settings: Settings, *, demo: Any | None = None) -> None:
        self._configs: dict[str, EnvironmentConfig] = {
            env.name: env for env in settings.superset_environments}
        self._clients: dict[str, SupersetClient] = {}
        self._passthrough: OrderedDict[tuple[str, str], SupersetClient] = OrderedDict()
        read_s, write_s = settings.tool_timeout_read_s, settings.tool_timeout_write_s
        for name, config in self._configs.items():
            if config.base_url is None:
                if demo is None or name not in demo.environments:
                    continue  # get() explains the problem when a tool asks for it
                demo_auth: Any = (_MissingCredentials(name) if config.auth_mode == "passthrough"
                                  else ServiceAuth(*DEMO_SERVICE_USER, timeout_s=read_s))
                self._clients[name] = SupersetClient(
                    name, base_url=demo.base_url(name), transport=demo.transport(),
                    auth=demo_auth, read_timeout_s=read_s, write_timeout_s=write_s)
            else:
                auth: Any
                if config.auth_mode == "passthrough":
                    auth = _MissingCredentials(name)  # replaced per user by with_token()
                elif config.username and config.password:
                    auth = ServiceAuth(config.username, config.password, timeout_s=read_s)
                else:
                    auth = _MissingCredentials(name)
                self._clients[name] = SupersetClient(
                    name, base_url=config.base_url, auth=auth, read_timeout_s=read_s,
                    write_timeout_s=write_s)

    @property
    def names(self) -> list[str]:
        return list(self._configs)

    def get(self, env: str | None, *, user_token: str | None = None) -> SupersetClient:
        """The client of `env`; `user_token` is the caller's Superset bearer token, used (and
        required) only for passthrough environments."""
        known = ", ".join(self._configs) or "none configured"
        if not env:
            raise ToolInputError("No Superset environment was given or selected. "
                                 f"Pass env_id; known environments: {known}.")
        config = self._configs.get(env)
        if config is None:
            raise ToolInputError(f"Unknown environment {env!r}. Known environments: {known}.")
        client = self._clients.get(env)
        if client is None:
            raise ToolInputError(f"Environment {env!r} is a demo environment, but the demo "
                                 "Superset server does not provide it.")
        if config.auth_mode == "passthrough":
            if not user_token:
                raise ToolAuthError(f"Environment {env!r} acts with your own Superset login, "
                                    "and no Superset token came with this request (sign in "
                                    "with AUTH_MODE=superset).")
            return self._for_token(client, user_token)
        return client

    def _for_token(self, client: SupersetClient, token: str) -> SupersetClient:
        key = (client.env, hashlib.sha256(token.encode()).hexdigest())
        cached = self._passthrough.get(key)
        if cached is None:
            cached = client.with_token(token)
            self._passthrough[key] = cached
            while len(self._passthrough) > _PASSTHROUGH_CACHE:
                # Not closed here: a call may still be using it. The GC closes it.
                self._passthrough.popitem(last=False)
        else:
            self._passthrough.move_to_end(key)
        return cached

    async def aclose(self) -> None:
        for client in [*self._clients.values(), *self._passthrough.values()]:
            await client.aclose()
        self._passthrough.clear()

