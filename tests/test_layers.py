"""The packages' import arrows point one way (issue 14, item 6): `storage` imports no other
package of the app, `agent` never imports `side_questions` (side questions build on the
agent, not the reverse), and neither imports `web` or the composition root `runtime`.

Read from the source with `ast`, so an import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agent", "side_questions", "storage", "web", "superset_demo", "runtime")
FORBIDDEN = {
    "storage": {"agent", "side_questions", "web", "superset_demo", "runtime"},
    "agent": {"side_questions", "web", "runtime"},
    "side_questions": {"web", "runtime"},
}


def _imports(path: Path) -> set[str]:
    """The app's top-level packages a module imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found.update(name.split(".")[0] for name in names if name.split(".")[0] in PACKAGES)
    return found


def _violations(package: str) -> list[str]:
    return [f"{path.relative_to(ROOT)} imports {sorted(bad)}"
            for path in sorted((ROOT / package).rglob("*.py"))
            if (bad := _imports(path) & FORBIDDEN[package])]


def test_storage_imports_no_other_package_of_the_app() -> None:
    assert _violations("storage") == []


def test_agent_never_imports_side_questions_web_or_the_composition_root() -> None:
    assert _violations("agent") == []


def test_side_questions_never_import_web_or_the_composition_root() -> None:
    assert _violations("side_questions") == []


def test_the_walk_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from side_questions.service import X\n    import web.ui\n")
    assert _imports(module) == {"side_questions", "web"}
