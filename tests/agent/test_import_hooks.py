"""agent/import_hooks.py on small packages written for each test (issue 16, not timed): a
wrapped import, a refused package, a module that stands in until it is read."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.import_hooks import LazyModule, around_import, hooked, standing_in, without


@pytest.fixture()
def packages(tmp_path: Path) -> Iterator[Path]:
    """A directory on sys.path; the modules imported from it (all named `hk_...`) are
    forgotten afterwards, and nothing else (a module the test happened to import first
    stays: a second copy of it later would split its classes in two)."""
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in [name for name in sys.modules if name.startswith("hk_")]:
        del sys.modules[name]


def _write(root: Path, name: str, source: str) -> None:
    path = root.joinpath(*name.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True, exist_ok=True)
    for parent in path.relative_to(root).parents:
        if parent != Path("."):
            root.joinpath(parent, "__init__.py").touch()
    path.write_text(source)


def test_a_wrapped_import_runs_inside_its_wrapper_once(packages: Path) -> None:
    _write(packages, "hk_one.inner", "VALUE = 1\n")
    seen: list[str] = []

    def wrapper(run, module):  # type: ignore[no-untyped-def]
        seen.append("before")
        run(module)
        module.VALUE += 1
        seen.append("after")

    assert around_import("hk_one.inner", wrapper)
    assert hooked("hk_one.inner")
    assert not around_import("hk_one.inner", wrapper), "a second wrapper was waiting too"
    import hk_one.inner

    assert hk_one.inner.VALUE == 2 and seen == ["before", "after"]
    assert not hooked("hk_one.inner"), "the finder stayed after its one import"


def test_a_module_imported_already_is_left_alone(packages: Path) -> None:
    _write(packages, "hk_two", "VALUE = 1\n")
    import hk_two  # noqa: F401

    finders = list(sys.meta_path)
    assert not around_import("hk_two", lambda run, module: None)
    assert sys.meta_path == finders


def test_without_refuses_a_package_and_its_modules_only_within_the_block(packages: Path
                                                                         ) -> None:
    _write(packages, "hk_three.sub", "VALUE = 3\n")
    finders = list(sys.meta_path)
    with without("hk_three"), pytest.raises(ModuleNotFoundError) as refused:
        import hk_three.sub
    assert refused.value.name == "hk_three" and "hk_three" not in sys.modules
    assert sys.meta_path == finders
    import hk_three.sub

    assert hk_three.sub.VALUE == 3


def test_without_leaves_an_imported_package_importable(packages: Path) -> None:
    _write(packages, "hk_four.sub", "VALUE = 4\n")
    import hk_four

    with without("hk_four"):
        import hk_four.sub
    assert hk_four.sub.VALUE == 4


def test_a_stand_in_imports_its_module_on_first_read_and_leaves_sys_modules(packages: Path
                                                                            ) -> None:
    _write(packages, "hk_five", "import sys\nLOADS = sys.modules.setdefault('hk_loads', [])\n"
                                "LOADS.append(1)\nclass Thing: pass\n")
    _write(packages, "hk_user", "import hk_five\n")
    with standing_in("hk_five"):
        import hk_user
    assert isinstance(hk_user.hk_five, LazyModule)
    assert "hk_five" not in sys.modules and "hk_loads" not in sys.modules, "imported eagerly"

    assert hk_user.hk_five.Thing.__name__ == "Thing"
    import hk_five

    assert hk_user.hk_five.Thing is hk_five.Thing, "the stand-in answers from another copy"
    assert sys.modules["hk_loads"] == [1]


def test_a_stand_in_read_by_many_threads_at_once_imports_its_module_once(packages: Path
                                                                          ) -> None:
    """The standard library's LazyLoader is not safe here on Python 3.11: the thread that
    came second read a half-run module."""
    _write(packages, "hk_six", "import sys, time\nsys.modules.setdefault('hk_six_loads', [])"
                               ".append(1)\ntime.sleep(0.05)\nVALUE = 6\n")
    lazy = LazyModule("hk_six")
    start = threading.Barrier(8)
    values: list[int] = []
    errors: list[BaseException] = []

    def read() -> None:
        start.wait()
        try:
            values.append(lazy.VALUE)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and values == [6] * 8
    assert sys.modules["hk_six_loads"] == [1]
