"""Importing litellm without keeping its Claude tokenizer's parsed JSON: 15 MB of the model
worker's peak memory.

At import, `litellm.utils` parses the 1.7 MB `anthropic_tokenizer.json` it ships into Python
objects (`json_data`, ~13 MB of dicts, lists and strings), makes a string of it again
(`claude_json_str`, which litellm's tokenizer reads when it counts a Claude model's tokens)
and keeps both. Nothing reads `json_data` after that line. Dropped as soon as
`litellm.utils` has run, its memory is reused by the rest of litellm's import: `import
litellm`'s high-water mark here 206 -> 191 MB (two runs each way), and the model worker's
peak with it (`bench/startup.py`, peak RSS after the first turn).

`install()` (idempotent, before litellm's first import: `agent/model_worker.py` and
`LiteLLMGateway.load` call it) does it through `agent.import_hooks.around_import`; where
litellm is imported already, or a later litellm no longer keeps the string the tokenizer
reads, it changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from agent.import_hooks import around_import

__all__ = ["install"]


def _drop_parsed_tokenizer(run: Callable[[ModuleType], None], module: ModuleType) -> None:
    run(module)
    if isinstance(vars(module).get("claude_json_str"), str):
        vars(module).pop("json_data", None)


def install() -> None:
    """Drop `litellm.utils.json_data` after that module's import, if it is not imported yet."""
    around_import("litellm.utils", _drop_parsed_tokenizer)
