"""Importing gradio without what this app never uses: its type-stub writer, its IPython
magics, and pandas for its cache hashing. Together a third of `import gradio`'s time and
a third of its memory, measured here.

- **The stub writer.** Every component class gradio defines goes through
  `gradio.component_meta.ComponentMeta`, which calls `create_or_modify_pyi` for it: it reads
  the class's source file, parses it whole with `ast` (twice), renders a Jinja template and
  rewrites the `.pyi` stub beside it in site-packages if the text differs. Those stubs are
  for editors and type checkers writing gradio components; the wheel ships them, and
  nothing reads them at run time. `import gradio` took 3.3-3.7 s with it and 2.1-2.4 s
  without (three alternating runs each). Replaced by `_no_stubs` before any component
  class is defined.
- **IPython.** `gradio.ipython_ext` defines the `%%blocks` notebook magic if IPython imports
  (where it is installed, gradio imports all of it, with jedi and prompt_toolkit: ~450
  modules, 21 MB resident, measured as `import gradio`'s high-water mark with and without).
  A server never runs in a notebook, so IPython is refused while that module runs: gradio's
  own `ImportError` branch leaves the magic out. And `gradio.utils.colab_check` and
  `ipython_check` import IPython to ask `get_ipython()` for the running shell, the first one
  whenever the page's config is built: an IPython shell runs only in a process that has
  imported IPython, so where it is not imported they answer False (as they would) without
  importing it. In a notebook IPython is imported already and nothing changes.
- **pandas.** `gradio.caching` imports it to hash DataFrames for `gr.Cache` (unused here);
  the queue imports it only inside its monitoring summary (off: `agent/settings.py`), and
  the Dataframe and plot components inside their methods (none on this page). While
  `gradio.caching` runs, `import pandas` gives a stand-in that imports pandas the first
  time it is read (`agent.import_hooks.LazyModule`); after it, later importers get pandas
  itself. ~360 modules, 33 MB less at start when nothing reads it.

`import gradio`'s high-water mark here: 157 MB as gradio ships (2 152 modules), 103 MB with
these (1 365); the server's after its first turn 226.9 MB before the IPython and pandas
changes, 173.5 MB with them (bench/startup.py counts it beside the model worker's).
`install()` (idempotent, before gradio's first import; `web/__init__.py` and `app.py` call
it) sets each change up with `agent.import_hooks.around_import`; where gradio
is already imported, or a later gradio renames what a change expects, it changes nothing.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from agent.import_hooks import around_import, standing_in, without

__all__ = ["install"]


def _no_stubs(*_args: Any, **_kwargs: Any) -> None:
    """Stands in for gradio's `create_or_modify_pyi`: no stub is read, parsed or written."""


def _stub_writer_off(run: Callable[[ModuleType], None], module: ModuleType) -> None:
    run(module)
    if hasattr(module, "create_or_modify_pyi"):
        module.create_or_modify_pyi = _no_stubs


def _without_ipython(run: Callable[[ModuleType], None], module: ModuleType) -> None:
    with without("IPython"):
        run(module)


def _no_shell_unless_ipython_imported(check: Callable[[], bool]) -> Callable[[], bool]:
    """`check` (is this process in a notebook?), asked only where IPython is imported."""

    @functools.wraps(check)
    def checked() -> bool:
        return "IPython" in sys.modules and check()

    return checked


def _notebook_checks_without_import(run: Callable[[ModuleType], None], module: ModuleType
                                    ) -> None:
    run(module)
    for name in ("colab_check", "ipython_check"):
        if callable(check := getattr(module, name, None)):
            setattr(module, name, _no_shell_unless_ipython_imported(check))


def _pandas_when_read(run: Callable[[ModuleType], None], module: ModuleType) -> None:
    with standing_in("pandas"):
        run(module)


def install() -> None:
    """Set the changes above up in this process, for those of gradio's modules not imported
    yet."""
    around_import("gradio.component_meta", _stub_writer_off)
    around_import("gradio.utils", _notebook_checks_without_import)
    around_import("gradio.ipython_ext", _without_ipython)
    around_import("gradio.caching", _pandas_when_read)
