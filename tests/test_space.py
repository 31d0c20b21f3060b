"""The repository runs as a Hugging Face Space (issue 14, item 1): front matter, the
requirements a Space installs, and `python app.py` with what a Space sets."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import httpx
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

from agent.space import EPHEMERAL_FLAG, apply_space_defaults
from tests.test_app_process import served_app
from tests.web.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent


def _front_matter() -> dict:
    text = (ROOT / "README.md").read_text()
    match = re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL)
    assert match, "README.md must start with the Space's front matter"
    return yaml.safe_load(match.group(1))


def _pyproject_requirements() -> list[str]:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]["dependencies"]


def test_the_front_matter_is_a_gradio_space_on_a_gradio_this_project_allows() -> None:
    meta = _front_matter()
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
    assert str(meta["python_version"]) == "3.11" and meta["title"] and meta["emoji"]
    gradio = next(Requirement(r) for r in _pyproject_requirements() if r.startswith("gradio>"))
    assert Version(str(meta["sdk_version"])) in gradio.specifier


def test_requirements_txt_holds_the_same_requirements_as_pyproject() -> None:
    lines = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    assert sorted(map(str, map(Requirement, lines))) == sorted(
        map(str, map(Requirement, _pyproject_requirements())))


def test_storage_on_a_space_is_data_when_mounted_else_temporary(tmp_path: Path) -> None:
    mounted = tmp_path / "data"
    mounted.mkdir()
    env = {"SPACE_ID": "you/agent"}
    chosen = apply_space_defaults(env, persistent=mounted)
    assert chosen == mounted / "superset-agent" and chosen.is_dir()
    assert env["DATABASE_URL"] == f"sqlite:///{chosen}/agent.db" and EPHEMERAL_FLAG not in env

    env = {"SPACE_ID": "you/agent"}
    chosen = apply_space_defaults(env, persistent=tmp_path / "missing")
    assert chosen is not None and chosen.is_dir() and env[EPHEMERAL_FLAG] == "1"

    for chose in ({"SPACE_ID": "x", "DATA_DIR": "/srv"}, {"SPACE_ID": "x", "DATABASE_URL": "x"},
                  {}):
        before = dict(chose)
        assert apply_space_defaults(chose, persistent=mounted) is None and chose == before


def test_python_app_py_starts_as_a_space_runs_it_and_says_storage_is_temporary() -> None:
    port = free_port()
    env = {key: value for key, value in os.environ.items()
           if key not in ("DATA_DIR", "DATABASE_URL", EPHEMERAL_FLAG)}
    env |= {"SPACE_ID": "test/superset-agent", "GRADIO_SERVER_NAME": "0.0.0.0",
            "GRADIO_SERVER_PORT": str(port)}
    with served_app(env, port, ready_path="/api/health") as url:
        config = httpx.get(f"{url}/agent/config", timeout=30).text
        assert "temporary directory" in config
        assert httpx.get(f"{url}/", timeout=10).status_code in (200, 307)


def test_the_dockerfile_installs_as_the_readme_says_and_runs_unprivileged_and_checked() -> None:
    """Docker cannot run here (no daemon); what the image is made of is checked as text."""
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    assert lines[next(i for i, line in enumerate(lines) if line.startswith("FROM"))] == (
        "FROM python:3.11-slim")
    readme = (ROOT / "README.md").read_text()
    install = re.search(r"^pip install (-e \.) && python app\.py", readme, re.MULTILINE)
    assert install and f"RUN pip install -q {install.group(1)}" in lines
    user = next(line for line in lines if line.startswith("USER "))
    assert user != "USER root" and lines.index(user) < lines.index('CMD ["python", "app.py"]')
    start = next(i for i, line in enumerate(lines) if line.startswith("HEALTHCHECK"))
    assert "/api/health" in " ".join(lines[start:start + 2])
