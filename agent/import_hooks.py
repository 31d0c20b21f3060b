"""Run code around one third-party module's execution at import, without editing its files.

Why: a few modules that gradio and litellm import at start cost this app memory and time for
features it never uses (gradio's type-stub writer and IPython magics, pandas for gradio's
cache hashing, the Claude tokenizer's parsed JSON that litellm keeps beside its text);
`web/gradio_import.py` and `agent/litellm_import.py` say what and how much. Each such change
goes through `around_import`, a one-shot finder on `sys.meta_path`: the target module is
found by the usual path finder and executed by its usual loader, inside the caller's
wrapper. Where the target is imported already, or is not a plain source or bytecode module,
nothing changes: the import is as costly as before, never broken.

Kept out of gradio and litellm imports itself: the model worker imports it before litellm.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType
from typing import Any

__all__ = ["LazyModule", "around_import", "hooked", "standing_in", "without"]

Wrapper = Callable[[Callable[[ModuleType], None], ModuleType], None]
"""Gets the loader's `exec_module` and the new module; must call the former on the latter."""


class _AroundImport:
    """A one-shot meta-path finder: `target`'s loader runs through `wrapper`."""

    def __init__(self, target: str, wrapper: Wrapper) -> None:
        self.target = target
        self.wrapper = wrapper

    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None
                  ) -> ModuleSpec | None:
        if fullname != self.target:
            return None
        _remove(self)
        spec = PathFinder.find_spec(fullname, path)
        loader = getattr(spec, "loader", None)
        if spec is None or not hasattr(loader, "exec_module"):
            return spec  # not a plain source or bytecode file: left as it ships
        run = loader.exec_module
        wrapper = self.wrapper

        def exec_module(module: ModuleType) -> None:
            wrapper(run, module)

        loader.exec_module = exec_module  # type: ignore[union-attr]
        return spec


def _remove(finder: object) -> None:
    sys.meta_path[:] = [entry for entry in sys.meta_path if entry is not finder]


def hooked(target: str) -> bool:
    """Whether `around_import` has a finder waiting for `target`."""
    return any(isinstance(entry, _AroundImport) and entry.target == target
               for entry in sys.meta_path)


def around_import(target: str, wrapper: Wrapper) -> bool:
    """Run `target`'s first import through `wrapper`; False (and nothing done) if `target`
    is imported already or has a wrapper waiting."""
    if target in sys.modules or hooked(target):
        return False
    sys.meta_path.insert(0, _AroundImport(target, wrapper))
    return True


class _Refused:
    """A meta-path finder that refuses a package and its submodules."""

    def __init__(self, package: str) -> None:
        self.package = package

    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None) -> None:
        if fullname == self.package or fullname.startswith(self.package + "."):
            raise ModuleNotFoundError(f"No module named {fullname!r} (not imported by "
                                      "this app: agent/import_hooks.py)", name=fullname)


@contextmanager
def without(package: str) -> Iterator[None]:
    """Within the block, importing `package` fails as if it were not installed, unless it
    is imported already (then its own modules' imports are left alone)."""
    if package in sys.modules:
        yield
        return
    refused = _Refused(package)
    sys.meta_path.insert(0, refused)
    try:
        yield
    finally:
        _remove(refused)


class LazyModule(ModuleType):
    """Stands in for a module until an attribute is read, then imports it (once, under a
    lock: the standard library's `importlib.util.LazyLoader` is not safe when two threads
    touch a module first at once on Python 3.11) and answers from it."""

    def __init__(self, name: str) -> None:
        super().__init__(name, f"{name}, imported when first used (agent/import_hooks.py)")
        self._lock = threading.Lock()
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        with self._lock:
            if self._module is None:
                if sys.modules.get(self.__name__) is self:
                    del sys.modules[self.__name__]
                __import__(self.__name__)
                self._module = sys.modules[self.__name__]
        return getattr(self._module, attribute)


@contextmanager
def standing_in(name: str) -> Iterator[None]:
    """Within the block, `import name` gives a `LazyModule` (unless `name` is imported
    already); after it, `sys.modules` no longer holds the stand-in, so later importers get
    the module itself."""
    if name in sys.modules:
        yield
        return
    lazy = LazyModule(name)
    sys.modules[name] = lazy
    try:
        yield
    finally:
        if sys.modules.get(name) is lazy:
            del sys.modules[name]
