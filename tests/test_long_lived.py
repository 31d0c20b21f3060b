"""Start-up's objects are out of the collector's full passes in both processes of
`python app.py` (agent/long_lived.py): a full pass over them took 175 ms in the server and
~200 ms in the model worker, stalling every stream at once. Each case runs in a child
process, so this test process's collector stays as it is. Not timed: what is frozen is
checked.
"""

from __future__ import annotations

import os
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


_SERVER_START = textwrap.dedent("""
    import gc, runpy
    import uvicorn
    from agent import long_lived

    def serve(asgi, **_):  # uvicorn's place: listening, the lifespan starts the warm-up
        from fastapi.testclient import TestClient
        print("full passes before the warm-up", not long_lived.holding(), gc.get_threshold())
        with TestClient(asgi):
            asgi.state.warm_up.join()
        print("full passes after it", not long_lived.holding(), gc.get_threshold(),
              gc.get_freeze_count() > 100_000)

    uvicorn.run = serve
    runpy.run_path("app.py", run_name="__main__")  # `python app.py`
""")

_WORKER_START = textwrap.dedent("""
    import gc, importlib, socket, threading
    from agent import long_lived, model_worker

    ours, theirs = socket.socketpair()
    model_worker.send_frame(ours, threading.Lock(), ("config", [], 0.0, {}))
    frozen = long_lived.freeze

    def freeze(*args, **kwargs):  # warmed up: then the server goes, and the worker ends
        frozen(*args, **kwargs)
        ours.shutdown(socket.SHUT_WR)  # (gone before it serves, it would end at once)

    long_lived.freeze = freeze
    imported = importlib.import_module

    def import_module(name, *args, **kwargs):
        if name == "litellm.main":
            print("full passes during the import", not long_lived.holding(), gc.get_threshold())
        return imported(name, *args, **kwargs)

    importlib.import_module = import_module
    model_worker.main([str(theirs.fileno())])  # `python -m agent.model_worker FD`
    print("full passes after it", not long_lived.holding(), gc.get_threshold(),
          gc.get_freeze_count() > 100_000)
""")


def _lines(child: str, env: dict[str, str] | None = None) -> list[str]:
    done = subprocess.run([sys.executable, "-c", child], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if line.startswith("full passes")]


def test_python_app_py_runs_no_full_collection_until_warmed_up_then_as_before(
        tmp_path: Path) -> None:
    """A full pass during start-up walked every object the imports had built and freed
    nothing (one of 186 ms right before the first turn, traced)."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path}/app.db",
           "DATA_DIR": str(tmp_path), "AGENT_MODEL_PROCESS": "false"}
    assert _lines(_SERVER_START, env) == [
        f"full passes before the warm-up False (700, 10, {1 << 30})",
        "full passes after it True (700, 10, 10) True"]


def test_the_model_worker_imports_litellm_without_full_collections_then_as_before() -> None:
    """Its import ran seven full passes, 47-201 ms each: 0.9 s of 3.3 s (traced)."""
    assert _lines(_WORKER_START) == [
        f"full passes during the import False (700, 10, {1 << 30})",
        "full passes after it True (700, 10, 10) True"]
