"""Who is calling (SPEC §10): one `Identity`, verified by one of three providers.

    demo      tokens this app mints for its demo users (`agent.identity.demo`)
    superset  Superset access tokens, checked with Superset (`agent.identity.superset`)
    jwt       an external identity provider's tokens (`agent.identity.external_jwt`)
"""

from agent.identity.base import (
    ROLE_ORDER,
    Identity,
    IdentityProvider,
    Role,
    map_roles,
    role_at_least,
)
from agent.identity.demo import DEMO_USERS, ISSUER, DemoIdentity, TokenIssuer

__all__ = [
    "DEMO_USERS",
    "ISSUER",
    "ROLE_ORDER",
    "DemoIdentity",
    "Identity",
    "IdentityProvider",
    "Role",
    "TokenIssuer",
    "map_roles",
    "role_at_least",
]
