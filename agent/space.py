"""Running as a Hugging Face Space (issue 14, item 1).

A Space runs `python app.py` from the repository with `requirements.txt` installed, sets
`SPACE_ID`, `GRADIO_SERVER_NAME=0.0.0.0` and `GRADIO_SERVER_PORT=7860`, and mounts
persistent storage at `/data` only when the owner pays for it. Without it the container's
disk is writable but forgotten on every restart, and the repository directory may not be
writable at all. So, on a Space and unless the operator chose a place (`DATA_DIR` or
`DATABASE_URL`): `/data` when it is mounted and writable, else a fresh temporary
directory, and then the page says that nothing is kept across restarts.

Everything else is already what a Space needs: demo mode, the offline model, no keys.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import MutableMapping
from pathlib import Path

__all__ = ["EPHEMERAL_FLAG", "PERSISTENT_DIR", "apply_space_defaults"]

PERSISTENT_DIR = Path("/data")  # where a Space mounts its persistent storage
EPHEMERAL_FLAG = "AGENT_EPHEMERAL_STORAGE"  # read by Settings.ephemeral_storage


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


def apply_space_defaults(environ: MutableMapping[str, str] | None = None,
                         persistent: Path = PERSISTENT_DIR) -> Path | None:
    """On a Space, point DATA_DIR and DATABASE_URL at `/data` or a temporary directory;
    returns the directory chosen, or None when not on a Space or the operator chose."""
    env = os.environ if environ is None else environ
    if not env.get("SPACE_ID") or env.get("DATA_DIR") or env.get("DATABASE_URL"):
        return None
    if _writable(persistent):
        chosen = persistent / "superset-agent"
        chosen.mkdir(exist_ok=True)
    else:
        chosen = Path(tempfile.mkdtemp(prefix="superset-agent-"))
        env[EPHEMERAL_FLAG] = "1"
    env["DATA_DIR"] = str(chosen)
    env["DATABASE_URL"] = f"sqlite:///{chosen}/agent.db"
    return chosen
