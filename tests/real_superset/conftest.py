"""Fixtures: real Apache Superset 6.1.0 instances via the repo script: dev and prod
(migrations, tools), and a third with 60 s tokens and its own signing key (sign-in).

Skipped when the script's cached venv/template are missing, unless REAL_SUPERSET=required,
in which case the script builds them (~3-4 min the first time) and any failure fails. The
build runs once, before any instance starts, so a broken build is one clear failure; the
script's build lock would also make instances started in parallel wait for a single build.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from runtime import Runtime, build_runtime
from tests.real_superset.tools_support import AdminRest, real_settings
from tests.web.conftest import browser  # noqa: F401  (the Chromium fixture, for sign-in pages)

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "real_superset.py"
REQUIRED = os.environ.get("REAL_SUPERSET", "").lower() == "required"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=900)


def _start_all(specs: dict[str, list[str]]) -> dict[str, dict[str, str]]:
    """Start instances in parallel: key -> `start` arguments; returns key -> its info."""
    procs = {key: subprocess.Popen([sys.executable, str(SCRIPT), "start", *args],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for key, args in specs.items()}
    infos: dict[str, dict[str, str]] = {}
    for key, proc in procs.items():
        out, err = proc.communicate(timeout=900)
        if proc.returncode != 0:
            pytest.fail(f"starting real Superset {specs[key][0]} failed:\n{err[-3000:]}")
        infos[key] = json.loads(out.strip().splitlines()[-1])
    return infos


def _require_installed() -> None:
    if _script("installed").returncode == 0:
        return
    if not REQUIRED:
        pytest.skip("real Superset not installed: python scripts/real_superset.py template "
                    "(or set REAL_SUPERSET=required)")
    built = _script("template")
    if built.returncode != 0:
        pytest.fail(f"building the real Superset template failed:\n{built.stderr[-3000:]}")


@pytest.fixture(scope="session")
def real_superset_instances() -> Iterator[dict[str, dict[str, str]]]:
    """{"dev": info, "prod": info}, info = {"name", "url", "access_log", ...}: fresh copies of
    the seeded template, CSRF on."""
    _require_installed()
    names = {"dev": f"pytest-dev-{os.getpid()}", "prod": f"pytest-prod-{os.getpid()}"}
    try:
        yield _start_all({key: [name, str(_free_port())] for key, name in names.items()})
    finally:
        for name in names.values():
            _script("stop", name, "--purge")


@pytest.fixture(scope="session")
def real_superset(real_superset_instances: dict[str, dict[str, str]]) -> dict[str, str]:
    """{"dev": url, "prod": url}."""
    return {key: info["url"] for key, info in real_superset_instances.items()}


@pytest.fixture(scope="session")
def real_superset_auth() -> Iterator[dict[str, str]]:
    """A third instance for sign-in tests: 60-second access tokens and its own token signing
    key (so tokens of dev/prod are foreign to it)."""
    _require_installed()
    name = f"pytest-auth-{os.getpid()}"
    try:
        yield _start_all({"auth": [name, str(_free_port()), "--access-ttl", "60",
                                   "--jwt-secret", "sign-in-tests"]})["auth"]
    finally:
        _script("stop", name, "--purge")


@pytest.fixture
async def dev(real_superset: dict[str, str]) -> AsyncIterator[AdminRest]:
    """Admin REST on the dev instance (a test's own objects are deleted at the end)."""
    async with AdminRest(real_superset["dev"]) as rest:
        yield rest


@pytest.fixture
async def prod(real_superset: dict[str, str]) -> AsyncIterator[AdminRest]:
    async with AdminRest(real_superset["prod"]) as rest:
        yield rest


@pytest.fixture
async def real_rt(real_superset: dict[str, str], tmp_path: Path,
                  database_url: str) -> AsyncIterator[Runtime]:
    runtime = build_runtime(real_settings(real_superset, tmp_path, database_url=database_url))
    yield runtime
    await runtime.superset.aclose()
    runtime.close()
