"""Start-up's objects are out of the collector's full passes in both processes of
`python app.py` (agent/long_lived.py): a full pass over them took 175 ms in the server and
~200 ms in the model worker, stalling every stream at once. Each case runs in a child
process, so this test process's collector stays as it is. Not timed: what is frozen is
checked.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_SERVER = textwrap.dedent("""
    import gc, sys
    import uvicorn
    from fastapi.testclient import TestClient
    import app
    from agent.settings import Settings

    settings = Settings(database_url="sqlite:///" + sys.argv[1] + "/app.db",
                        data_dir=sys.argv[1], agent_model_process=False)

    def serve(asgi, **_):  # uvicorn's place: the app's lifespan runs, no socket is opened
        with TestClient(asgi):
            asgi.state.warm_up.join()
        print("frozen", gc.get_freeze_count())

    with TestClient(app.create_app(settings)) as plain:  # an app built for a test
        plain.app.state.warm_up.join()
    print("frozen", gc.get_freeze_count())
    uvicorn.run = serve
    app.main(settings)  # what `python app.py` runs
""")

_WORKER = textwrap.dedent("""
    import asyncio, gc, socket
    from agent.model_worker import Inbox, _Worker

    ours, theirs = socket.socketpair()
    inbox = Inbox()
    inbox.put([None])  # the server went away at once: the worker stops after its warm-up
    print("frozen", gc.get_freeze_count())
    asyncio.run(_Worker(theirs, inbox).serve([], 0.0, {}))
    print("frozen", gc.get_freeze_count())
""")


def _frozen_counts(child: str, *args: str) -> list[int]:
    done = subprocess.run([sys.executable, "-c", child, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return [int(line.split()[1]) for line in done.stdout.splitlines()
            if line.startswith("frozen ")]


def test_the_server_freezes_its_start_up_objects_once_warmed_up_and_a_test_app_does_not(
        tmp_path: Path) -> None:
    built_for_a_test, served = _frozen_counts(_SERVER, str(tmp_path))
    assert built_for_a_test == 0
    assert served > 100_000  # gradio, FastAPI, the app: ~0.7 M objects here


def test_the_model_worker_freezes_litellm_after_its_warm_up() -> None:
    before, after = _frozen_counts(_WORKER)
    assert before == 0
    assert after > 100_000  # litellm and its first call: ~0.4 M objects here
