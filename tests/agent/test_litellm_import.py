"""litellm imported without keeping its Claude tokenizer's parsed JSON (agent/litellm_import.py;
issue 16, not timed): ~13 MB of objects nothing reads, 15 MB of the model worker's peak.
Each check runs in a new interpreter, as the model worker imports litellm."""

from __future__ import annotations

from tests.fresh_python import run_fresh


def test_the_gateway_imports_litellm_without_the_parsed_tokenizer_and_claude_still_counts(
) -> None:
    """The gateway's import (as in the model worker) drops `json_data`; the string litellm's
    Claude tokenizer reads stays, and counting with it works."""
    done = run_fresh("""
        from agent.settings import apply_offline_defaults
        apply_offline_defaults()
        from agent.model_gateway import LiteLLMGateway
        litellm = LiteLLMGateway().load()
        import litellm.utils as utils
        assert not hasattr(utils, "json_data"), "the parsed tokenizer is kept"
        assert isinstance(utils.claude_json_str, str) and len(utils.claude_json_str) > 10**6
        litellm.disable_token_counter = False  # the gateway's setting; counted here on purpose
        model = next(name for name in litellm.anthropic_models
                     if utils.huggingface_tokenizer_kind(name) == "anthropic")
        print(litellm.token_counter(model=model, messages=[{"role": "user",
                                                            "content": "hello there"}]))
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) > 0


def test_the_model_worker_installs_it_before_its_import() -> None:
    """`agent/model_worker.py` imports litellm itself (before the gateway loads it): the
    hook must be in place by then."""
    done = run_fresh("""
        import importlib, sys
        from agent import import_hooks, model_worker
        real = importlib.import_module
        seen = []
        def watched(name, *args, **kwargs):
            if name == "litellm.main":
                seen.append(import_hooks.hooked("litellm.utils"))
                raise SystemExit(0 if seen == [True] else 3)
            return real(name, *args, **kwargs)
        importlib.import_module = watched
        import socket
        left, right = socket.socketpair()
        model_worker.main([str(right.fileno())])
    """)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
