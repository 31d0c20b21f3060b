"""gradio imported without its type-stub writer (web/gradio_import.py; issue 16, not timed):
that writer parsed every component's source file at import, a third of `import gradio`
here, before `python app.py` could answer anything. Each check runs in a new interpreter,
since this test process has imported gradio already."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_the_app_imports_gradio_without_parsing_component_sources() -> None:
    """Importing the app as `python app.py` does: no component class has its source file
    parsed (gradio's `extract_class_source_code` counts as that parse), and gradio works."""
    done = _python("""
        import ast
        parsed = []
        real_parse = ast.parse
        def counted(source, *args, **kwargs):
            if isinstance(source, str) and "class " in source and "EVENTS" in source:
                parsed.append(1)  # a component's source file: what the stub writer reads
            return real_parse(source, *args, **kwargs)
        ast.parse = counted
        import app
        import gradio as gr
        with gr.Blocks() as blocks:
            gr.Chatbot()
        assert blocks.get_config_file()["components"], "gradio did not build a page"
        print(len(parsed))
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "0", "gradio parsed component sources at import"


def test_installing_after_gradio_is_imported_changes_nothing() -> None:
    done = _python("""
        import sys
        import gradio
        import gradio.component_meta as meta
        before = (list(sys.meta_path), meta.create_or_modify_pyi)
        from web import gradio_import
        gradio_import.install()
        assert (list(sys.meta_path), meta.create_or_modify_pyi) == before
    """)
    assert done.returncode == 0, done.stderr[-2000:]
