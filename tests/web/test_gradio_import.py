"""gradio imported without its type-stub writer, its IPython magics and an eager pandas
(web/gradio_import.py; issue 16, not timed): the writer parsed every component's source file
at import, a third of `import gradio`'s time here, and IPython and pandas were a third of its
memory, before `python app.py` could answer anything. Each check runs in a new interpreter,
since this test process has imported gradio already."""

from __future__ import annotations

from tests.fresh_python import run_fresh


def test_the_app_imports_gradio_without_parsing_component_sources() -> None:
    """Importing the app as `python app.py` does: no component class has its source file
    parsed (gradio's `extract_class_source_code` counts as that parse), and gradio works."""
    done = run_fresh("""
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
    done = run_fresh("""
        import sys
        import gradio
        import gradio.component_meta as meta
        before = (list(sys.meta_path), meta.create_or_modify_pyi)
        from web import gradio_import
        gradio_import.install()
        assert (list(sys.meta_path), meta.create_or_modify_pyi) == before
    """)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_app_imports_neither_ipython_nor_pandas_until_pandas_is_read() -> None:
    """Where both are installed (here), gradio imported both at once as it shipped: IPython
    for a notebook magic, pandas for cache hashing this app never asks for."""
    done = run_fresh("""
        import sys
        import app
        import gradio as gr, gradio.caching
        with gr.Blocks() as blocks:
            gr.Chatbot()
        blocks.get_config_file()  # asks gradio.utils.colab_check, as each page's config does
        assert "IPython" not in sys.modules, "IPython imported"
        assert "pandas" not in sys.modules and "pandas.core" not in sys.modules, "pandas imported"
        frame = gradio.caching.pd.DataFrame({"a": [1]})
        import pandas
        assert type(frame) is pandas.DataFrame and sys.modules["pandas"] is pandas
        assert gradio.caching.cache_hash(frame) == gradio.caching.cache_hash(frame.copy())
        print("ok")
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "ok"


def test_in_a_process_with_ipython_and_pandas_imported_gradio_gets_both() -> None:
    done = run_fresh("""
        import IPython, pandas
        from web import gradio_import
        gradio_import.install()
        import gradio.ipython_ext as ext, gradio.caching, gradio.utils
        assert hasattr(ext, "register_cell_magic"), "the magic's imports were refused"
        import IPython.core.getipython as shell
        assert not gradio.utils.ipython_check()
        shell.get_ipython = lambda: "a running shell"  # as inside a notebook
        assert gradio.utils.ipython_check(), "gradio no longer asks IPython"
        assert gradio.caching.pd is pandas, "an imported pandas was stood in for"
        print("ok")
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "ok"
