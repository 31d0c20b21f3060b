"""Running a check in a new interpreter: for what a test process that imported gradio or
litellm already cannot show (what a first import does, `tests/web/test_gradio_import.py`,
`tests/agent/test_litellm_import.py`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.waits import PROCESS_START_S

__all__ = ["run_fresh"]

ROOT = Path(__file__).resolve().parents[1]


def run_fresh(code: str) -> subprocess.CompletedProcess[str]:
    """`code` (dedented) run by `python -c` in the project's root; its output captured."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=PROCESS_START_S)
