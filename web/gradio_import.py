"""Importing gradio without its type-stub writer: a third of its import time, measured here.

Every component class gradio defines goes through `gradio.component_meta.ComponentMeta`,
which calls `create_or_modify_pyi` for it: it reads the class's source file, parses it
whole with `ast` (twice), renders a Jinja template and rewrites the `.pyi` stub beside it
in site-packages if the text differs. Those stubs are for editors and type checkers
writing gradio components; the wheel ships them, and nothing reads them at run time. On
this 2-core machine `import gradio` took 3.3-3.7 s with it and 2.1-2.4 s without (three
alternating runs each), and `python app.py` imports gradio before it can answer anything.

`install()` (idempotent, before gradio's first import; `web/__init__.py` and `app.py` call
it) puts a finder first on `sys.meta_path` that lets `gradio.component_meta` load as usual
and then replaces its `create_or_modify_pyi` with `_no_stubs`, before any component class
is defined. Where gradio is already imported, or a later gradio renames the function, it
changes nothing: the import is as slow as before, never broken.
"""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType
from typing import Any

__all__ = ["install"]

_TARGET = "gradio.component_meta"


def _no_stubs(*_args: Any, **_kwargs: Any) -> None:
    """Stands in for gradio's `create_or_modify_pyi`: no stub is read, parsed or written."""


class _StubWriterOff:
    """A one-shot meta-path finder for `gradio.component_meta`."""

    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None
                  ) -> ModuleSpec | None:
        if fullname != _TARGET:
            return None
        _remove()
        spec = PathFinder.find_spec(fullname, path)
        loader = getattr(spec, "loader", None)
        if spec is None or not hasattr(loader, "exec_module"):
            return spec  # not a plain source or bytecode file: left as gradio ships it
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            if hasattr(module, "create_or_modify_pyi"):
                module.create_or_modify_pyi = _no_stubs

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _remove() -> None:
    sys.meta_path[:] = [finder for finder in sys.meta_path
                        if not isinstance(finder, _StubWriterOff)]


def install() -> None:
    """Skip gradio's stub writing in this process, if gradio is not imported yet."""
    if _TARGET in sys.modules or any(isinstance(finder, _StubWriterOff)
                                     for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, _StubWriterOff())
