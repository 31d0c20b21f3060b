"""Install, initialise, seed, start and stop a real Apache Superset 6.1.0 for integration tests.

Usage (run with any Python 3.11; Superset itself lives in its own virtual environment):

    python scripts/real_superset.py install            # venv under ~/.cache/superset-agent
    python scripts/real_superset.py template           # initialised + seeded superset.db, cached
    python scripts/real_superset.py start dev 8188     # copy the template, serve on 127.0.0.1:8188
    python scripts/real_superset.py start auth 8189 --access-ttl 60 --jwt-secret other
    python scripts/real_superset.py stop dev [--purge]
    python scripts/real_superset.py status

`start` does `install` and `template` first when their cached results are missing, and
prints one JSON line `{"name", "url", "pid", "seconds"}`. Both builds run under one file
lock in the cache (`build.lock`, see `superset_cache.py`), so concurrent callers (the test
fixtures start instances in parallel) wait for a single build and then use it; the template
is built in a temporary directory and renamed into place, so a half-built template is never
visible.
Superset pins SQLAlchemy<2, so it can never share an environment with this project: we
only ever talk to it over HTTP.
Every instance has its own directory (metadata database, config, log, pid file), so two
instances on two ports make a real dev -> prod migration test. CSRF stays on. `--access-ttl`
shortens the access-token lifetime and `--jwt-secret` gives an instance its own token
signing key (tokens of one are then refused by the other, as between unrelated Supersets).
Each instance writes gunicorn's access log (`access.log` in its directory), so tests can
count requests at the Superset side.

Seeded users (password = username unless noted): admin (Admin), alpha (Alpha), gamma
(Gamma), custom (only the custom role "Reporting", Gamma's permissions under another name)
and sentinel (Alpha, password SENTINEL_PASSWORD, for secret-leak scans).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from real_superset_seed import give_custom_role, make_sales_db, seed_via_rest
from superset_cache import CACHE, build_lock, build_once
from superset_cache import log as _log

VENV = CACHE / "superset-venv"
TEMPLATE = CACHE / "template"
TEMPLATE_MARKER = ".seeded-v2"  # bump when the template's contents change
INSTANCES = CACHE / "instances"
SALES_DB = CACHE / "data" / "sales.db"
# Outside the template directory, so the metadata never records the temporary build path.
EXAMPLES_DB = CACHE / "data" / "examples.db"
PACKAGES = ["apache-superset==6.1.0", "flask-caching<2.5", "rich", "cachetools", "gunicorn"]
USERS = [("admin", "Admin"), ("alpha", "Alpha"), ("gamma", "Gamma")]
CUSTOM_ROLE_USER, CUSTOM_ROLE = "custom", "Reporting"
SENTINEL_USER, SENTINEL_PASSWORD = "sentinel", "pw-Sentinel-3f9a61c7e2"
# Test-only key: these instances bind to loopback and hold nothing but seed data.
SECRET_KEY = "superset-agent-integration-tests-only-0123456789abcdef0123456789abcdef"


def _bin(name: str) -> str:
    return str(VENV / "bin" / name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def install() -> float:
    """Build the venv once, under the build lock; a marker file records a finished install.

    Unlike the template it is built in place: a venv holds its own absolute path (script
    shebangs), so it cannot be renamed after it is made. The marker is written last, so
    its presence still means a whole install.
    """
    marker = VENV / ".installed-6.1.0"
    if marker.exists():
        return 0.0
    with build_lock():
        if marker.exists():
            return 0.0
        started = time.monotonic()
        # Re-running venv over a half-made one (an earlier crash) repairs it; pip resumes.
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([_bin("pip"), "install", "-q", *PACKAGES], check=True)
        marker.write_text(time.strftime("%Y-%m-%dT%H:%M:%S"))
        seconds = time.monotonic() - started
    _log(f"installed in {seconds:.0f} s")
    return seconds


def write_config(directory: Path, *, home: Path | None = None,
                 access_ttl_s: int | None = None, jwt_secret: str | None = None) -> Path:
    """The Superset config of one instance, written into `directory`; its metadata DB lives
    in `home` (default `directory`; the template's differs once it is renamed into place)."""
    directory.mkdir(parents=True, exist_ok=True)
    home = home or directory
    path = directory / "superset_config.py"
    extra = []
    if access_ttl_s:
        extra.append(f"JWT_ACCESS_TOKEN_EXPIRES = {int(access_ttl_s)}")
    if jwt_secret:
        extra.append(f"JWT_SECRET_KEY = {f'{jwt_secret}-{SECRET_KEY}'!r}")
    path.write_text(
        "\n".join(
            [
                f"SECRET_KEY = {SECRET_KEY!r}",
                *extra,
                f"SQLALCHEMY_DATABASE_URI = 'sqlite:///{home / 'superset.db'}'",
                f"SQLALCHEMY_EXAMPLES_URI = 'sqlite:///{EXAMPLES_DB}?check_same_thread=false'",
                f"DATA_DIR = {str(home)!r}",
                "PREVENT_UNSAFE_DB_CONNECTIONS = False",
                "TALISMAN_ENABLED = False",
                "WTF_CSRF_ENABLED = True",
                "AUTH_RATE_LIMITED = False",
                "RATELIMIT_ENABLED = False",
                "SUPERSET_WEBSERVER_TIMEOUT = 120",
                "",
            ]
        )
    )
    return path


def _env(directory: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SUPERSET_CONFIG_PATH=str(directory / "superset_config.py"),
        FLASK_APP="superset",
        SUPERSET_HOME=str(directory),
        PYTHONUNBUFFERED="1",
    )
    return env


def _superset(directory: Path, *args: str) -> None:
    started = time.monotonic()
    log = directory / "init.log"
    with log.open("a") as out:
        subprocess.run([_bin("superset"), *args], env=_env(directory), check=True,
                       stdout=out, stderr=subprocess.STDOUT)
    _log(f"superset {' '.join(args[:2])} took {time.monotonic() - started:.0f} s")


def template() -> float:
    """Initialise a metadata database once, seed it, and keep it for every instance to copy;
    concurrent callers wait for one build (see `build_once`)."""
    install()
    seconds = build_once(TEMPLATE, TEMPLATE_MARKER, _build_template)
    if seconds:
        _log(f"template built in {seconds:.0f} s")
    return seconds


def _build_template(work: Path) -> None:
    """Fill `work` with an upgraded, seeded metadata database (the caller holds the lock)."""
    write_config(work)
    make_sales_db(SALES_DB)
    _superset(work, "db", "upgrade")
    for username, role in USERS:
        if role == "Admin":
            _superset(work, "fab", "create-admin", "--username", username,
                      "--password", username, "--firstname", username.title(),
                      "--lastname", "User", "--email", f"{username}@example.org")
    _superset(work, "init")
    for username, role, password in [*((u, r, u) for u, r in USERS[1:]),
                                     (CUSTOM_ROLE_USER, "Gamma", CUSTOM_ROLE_USER),
                                     (SENTINEL_USER, "Alpha", SENTINEL_PASSWORD)]:
        _superset(work, "fab", "create-user", "--role", role, "--username", username,
                  "--password", password, "--firstname", username.title(),
                  "--lastname", "User", "--email", f"{username}@example.org")
    give_custom_role(work / "superset.db", role=CUSTOM_ROLE, username=CUSTOM_ROLE_USER)
    if os.environ.get("REAL_SUPERSET_EXAMPLES", "1") == "1":
        _superset(work, "load-examples", "--only-metadata")
    # A free port by default, so builds for two different caches cannot collide.
    port = int(os.environ.get("REAL_SUPERSET_TEMPLATE_PORT") or _free_port())
    _serve(work, port)
    try:
        seed_via_rest(f"http://127.0.0.1:{port}", SALES_DB)
    finally:
        _stop_dir(work)
    write_config(work, home=TEMPLATE)  # the paths it will have after the rename


def _wait_healthy(url: str, timeout: float, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {proc.returncode}; see its log")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                if resp.read().strip() == b"OK":
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise TimeoutError(f"{url}/health did not answer OK within {timeout:.0f} s")


def _serve(directory: Path, port: int) -> int:
    """Start gunicorn in its own session (so stop can end exactly its process group)."""
    workers = os.environ.get("REAL_SUPERSET_WORKERS", "2")
    log = (directory / "gunicorn.log").open("ab")
    proc = subprocess.Popen(
        [_bin("gunicorn"), "-w", workers, "-k", "gthread", "--threads", "4",
         "--timeout", "120", "-b", f"127.0.0.1:{port}",
         "--access-logfile", str(directory / "access.log"), "superset.app:create_app()"],
        env=_env(directory), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        cwd=directory,
    )
    (directory / "gunicorn.pid").write_text(str(proc.pid))
    (directory / "port").write_text(str(port))
    try:
        _wait_healthy(f"http://127.0.0.1:{port}", 180, proc)
    except Exception:
        _stop_dir(directory)
        raise
    return proc.pid


def _stop_dir(directory: Path) -> bool:
    pid_file = directory / "gunicorn.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text())
    pid_file.unlink()
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    for _ in range(100):
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    os.killpg(pid, signal.SIGKILL)
    return True


def start(name: str, port: int, *, access_ttl_s: int | None = None,
          jwt_secret: str | None = None) -> dict[str, object]:
    """A fresh instance from the template: copy superset.db, write config, serve, poll /health."""
    template()
    started = time.monotonic()
    directory = INSTANCES / name
    _stop_dir(directory)
    shutil.rmtree(directory, ignore_errors=True)
    write_config(directory, access_ttl_s=access_ttl_s, jwt_secret=jwt_secret)
    shutil.copyfile(TEMPLATE / "superset.db", directory / "superset.db")
    pid = _serve(directory, port)
    info = {"name": name, "url": f"http://127.0.0.1:{port}", "pid": pid,
            "seconds": round(time.monotonic() - started, 1),
            "access_log": str(directory / "access.log")}
    (directory / "instance.json").write_text(json.dumps(info))
    return info


def stop(name: str, *, purge: bool = False) -> bool:
    """Stop an instance; `purge` also deletes its directory (metadata DB, logs)."""
    stopped = _stop_dir(INSTANCES / name)
    if purge:
        shutil.rmtree(INSTANCES / name, ignore_errors=True)
    return stopped


def status() -> list[dict[str, object]]:
    found = []
    for info in sorted(INSTANCES.glob("*/instance.json")):
        data = json.loads(info.read_text())
        data["running"] = (info.parent / "gunicorn.pid").exists()
        found.append(data)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install")
    sub.add_parser("template")
    start_p = sub.add_parser("start")
    start_p.add_argument("name")
    start_p.add_argument("port", type=int)
    start_p.add_argument("--access-ttl", type=int, default=None,
                         help="access-token lifetime in seconds (Superset's default is 900)")
    start_p.add_argument("--jwt-secret", default=None,
                         help="this instance's own token signing key")
    stop_p = sub.add_parser("stop")
    stop_p.add_argument("name")
    stop_p.add_argument("--purge", action="store_true", help="also delete its directory")
    sub.add_parser("status")
    sub.add_parser("installed", help="exit 0 when the venv and template are cached")
    args = parser.parse_args(argv)
    if args.command == "install":
        print(json.dumps({"install_seconds": round(install(), 1)}))
    elif args.command == "template":
        print(json.dumps({"template_seconds": round(template(), 1)}))
    elif args.command == "start":
        print(json.dumps(start(args.name, args.port, access_ttl_s=args.access_ttl,
                               jwt_secret=args.jwt_secret)))
    elif args.command == "stop":
        print(json.dumps({"stopped": stop(args.name, purge=args.purge)}))
    elif args.command == "status":
        print(json.dumps(status()))
    elif args.command == "installed":
        ok = (VENV / ".installed-6.1.0").exists() and (TEMPLATE / TEMPLATE_MARKER).exists()
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
