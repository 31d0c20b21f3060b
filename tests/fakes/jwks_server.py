"""An identity provider's key endpoint (JWKS) on loopback, with the keys to sign tokens.

RS256 and ES256 key pairs are generated per server; `sign()` makes tokens the way an
external identity provider would. Fetches of the JWKS are counted.
"""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.fakes.loopback import LoopbackServer

__all__ = ["ISSUER", "JwksServer"]

ISSUER = "https://idp.example.test/"


class JwksServer(LoopbackServer):
    def __init__(self) -> None:
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.fetches = 0
        super().__init__(Starlette(routes=[Route("/jwks.json", self._jwks)]), name="jwks")

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks.json"

    async def _jwks(self, _: Request) -> JSONResponse:
        self.fetches += 1
        keys = []
        for kid, alg, public in (("rsa-1", "RS256", self.rsa.public_key()),
                                 ("ec-1", "ES256", self.ec.public_key())):
            algorithm = RSAAlgorithm if alg == "RS256" else ECAlgorithm
            key = json.loads(algorithm.to_jwk(public))
            keys.append({**key, "kid": kid, "alg": alg, "use": "sig"})
        return JSONResponse({"keys": keys})

    def public_pem(self) -> bytes:
        return self.rsa.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def sign(self, *, alg: str = "RS256", kid: str | None = None, audience: str = "superset-agent",
             issuer: str = ISSUER, ttl_s: int = 300, **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": issuer, "aud": audience, "iat": now, "exp": now + ttl_s, **claims}
        key = self.rsa if alg.startswith("RS") else self.ec
        default_kid = "rsa-1" if alg.startswith("RS") else "ec-1"
        return jwt.encode(body, key, algorithm=alg, headers={"kid": kid or default_kid})
