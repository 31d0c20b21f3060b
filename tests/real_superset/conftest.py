"""Session fixture: two real Apache Superset 6.1.0 instances (dev, prod) via the repo script.

Skipped when the script's cached venv/template are missing, unless REAL_SUPERSET=required,
in which case the script builds them (~3-4 min the first time) and any failure fails.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "real_superset.py"
REQUIRED = os.environ.get("REAL_SUPERSET", "").lower() == "required"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="session")
def real_superset() -> Iterator[dict[str, str]]:
    """{"dev": url, "prod": url}: fresh copies of the seeded template, CSRF on."""
    if _script("installed").returncode != 0 and not REQUIRED:
        pytest.skip("real Superset not installed: python scripts/real_superset.py template "
                    "(or set REAL_SUPERSET=required)")
    names = [f"pytest-dev-{os.getpid()}", f"pytest-prod-{os.getpid()}"]
    procs = [subprocess.Popen([sys.executable, str(SCRIPT), "start", name, str(_free_port())],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in names]
    urls: dict[str, str] = {}
    try:
        for key, name, proc in zip(("dev", "prod"), names, procs, strict=True):
            out, err = proc.communicate(timeout=900)
            if proc.returncode != 0:
                pytest.fail(f"starting real Superset {name} failed:\n{err[-3000:]}")
            urls[key] = json.loads(out.strip().splitlines()[-1])["url"]
        yield urls
    finally:
        for name in names:
            _script("stop", name, "--purge")
