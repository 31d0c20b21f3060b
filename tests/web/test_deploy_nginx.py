"""Two `python app.py` replicas on one PostgreSQL behind nginx with `deploy/nginx.conf`
(issue 14, item 2): a browser journey through nginx chats, approves a write and asks a side
question; with the replica that served it killed (-9), new visits are served by the other
and no committed row is lost."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.conftest import postgres_schema
from tests.test_app_process import served_process
from tests.web.conftest import free_port
from tests.web.journey_support import VIEWPORTS, Watched

ROOT = Path(__file__).resolve().parents[2]
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
SECRET = "deploy-test-secret-" + "x" * 32
TABLES = ("conversations", "messages", "runs", "audit_log", "side_question_requests")


@dataclass
class Entrance:
    """What `Watched` needs of a server: where the page is."""

    url: str

    @property
    def agent_url(self) -> str:
        return f"{self.url}/agent/"


def _nginx_config(listen: int, replicas: list[int], log: Path) -> str:
    """deploy/nginx.conf as shipped, with loopback addresses and a log of the upstreams."""
    config = (ROOT / "deploy" / "nginx.conf").read_text()
    config = config.replace("listen 8080;", f"listen 127.0.0.1:{listen};")
    for name, port in zip(("app1:7860", "app2:7860"), replicas, strict=True):
        assert name in config
        config = config.replace(name, f"127.0.0.1:{port}")
    logged = (f"http {{\n    log_format upstream '$upstream_addr $request_uri';\n"
              f"    access_log {log} upstream;\n")
    return config.replace("http {\n", logged, 1)


@contextmanager
def _nginx(workdir: Path, listen: int, replicas: list[int]) -> Iterator[Path]:
    if not os.path.exists(NGINX):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("nginx is required under CI=true (.ci/run installs it)")
        pytest.skip("nginx is not installed (apt-get install nginx-light)")
    log = workdir / "access.log"
    conf = workdir / "nginx.conf"
    conf.write_text(_nginx_config(listen, replicas, log))
    process = subprocess.Popen(
        [NGINX, "-p", str(workdir), "-c", str(conf), "-g",
         f"daemon off; pid {workdir}/nginx.pid; error_log {workdir}/error.log;"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.stdout.read() if process.stdout else ""
            try:
                if httpx.get(f"http://127.0.0.1:{listen}/api/health", timeout=2).is_success:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "nginx did not answer within 30 s"
            time.sleep(0.1)  # polling a starting process: the wait is for its answer
        yield log
    finally:
        process.terminate()
        process.wait(timeout=10)


def _counts(url: str) -> dict[str, int]:
    engine = create_engine(url)
    with engine.connect() as conn:
        counts = {table: conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
                  for table in TABLES}
    engine.dispose()
    return counts


def test_two_replicas_behind_nginx_serve_a_journey_and_survive_losing_one(
        browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ports = [free_port(), free_port()]
    listen = free_port()
    with postgres_schema() as database_url, ExitStack() as stack:
        replicas = {}
        for number, port in enumerate(ports, start=1):
            env = {**os.environ, "DATABASE_URL": database_url, "GRADIO_SERVER_PORT": str(port),
                   "DATA_DIR": str(tmp_path / f"replica{number}"), "AUTH_JWT_SECRET": SECRET}
            _, replicas[port] = stack.enter_context(served_process(env, port))
        log = stack.enter_context(_nginx(tmp_path, listen, ports))
        entrance = Entrance(f"http://127.0.0.1:{listen}")

        watched = Watched(browser, entrance, VIEWPORTS["desktop"])
        page = watched.page
        page.locator("#user-select input").click()
        page.get_by_role("option", name="editor", exact=True).click()
        page.wait_for_function("() => !document.querySelector('#agent-input textarea').disabled")
        watched.send("rename dashboard 3 to 'Behind nginx'")
        page.locator("#confirm-card").get_by_text("Behind nginx").first.wait_for(timeout=90_000)
        page.locator("#confirm-btn").click()
        watched.wait_chat("chat.includes('✅') && !chat.includes('awaiting approval')")
        watched.send("/btw which tools did you use?")
        page.wait_for_function(
            "() => { const side = document.querySelector('#side-chat')?.innerText || '';"
            " return side.includes('update_dashboard') && !side.includes('▌'); }",
            timeout=90_000)
        watched.close("deploy-behind-nginx")

        served = {int(port) for port in re.findall(r"127\.0\.0\.1:(\d+) /agent/gradio_api/queue",
                                                   log.read_text())}
        assert len(served) == 1, f"one page, one replica (sticky): {served}"
        before = _counts(database_url)
        assert before["audit_log"] >= 2 and before["side_question_requests"] == 1

        (gone,) = served
        replicas[gone].kill()  # -9: no chance to tidy up
        replicas[gone].wait(timeout=10)
        for _ in range(3):  # new visits, with and without the old route cookie
            assert httpx.get(entrance.agent_url, timeout=30).status_code == 200
        again = Watched(browser, entrance, VIEWPORTS["desktop"])
        again.send("what can you do?")
        again.wait_chat("chat.includes('explicit approval')")
        again.close("deploy-after-failover")
        after = _counts(database_url)
        assert all(after[table] >= before[table] for table in TABLES), (before, after)
        assert after["messages"] > before["messages"]  # the survivor took the new turn
