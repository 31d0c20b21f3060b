"""What the model sees of each tool is langchain-core's OpenAI tool of it, made without
importing `langchain_core.tools` (which pulls in langsmith: 0.8 s of CPU and 23 MB on the
first answer's path after start)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from agent.tools.registry import ToolSpec
from runtime import default_tools

TOOLS = default_tools()


def _through_langchain(spec: ToolSpec) -> dict[str, Any]:
    """The schema as langchain-core makes it of the tool as a `StructuredTool`."""
    async def _unbound(**_: Any) -> Any:
        raise AssertionError("never run")

    return convert_to_openai_tool(StructuredTool.from_function(
        coroutine=_unbound, name=spec.name, description=spec.description,
        args_schema=spec.args_schema, infer_schema=False))


@pytest.mark.parametrize("spec", TOOLS, ids=[spec.name for spec in TOOLS])
def test_each_tool_schema_is_langchains_openai_tool(spec: ToolSpec) -> None:
    assert spec.openai_schema == _through_langchain(spec)


def test_the_schemas_are_made_without_langchains_tools_module() -> None:
    code = ("import sys\n"
            "from runtime import default_tools\n"
            "schemas = [spec.openai_schema for spec in default_tools()]\n"
            "assert len(schemas) > 20\n"
            "print(sorted(name for name in ('langchain_core.tools', 'langsmith')"
            " if name in sys.modules))\n")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, timeout=120).stdout.strip()
    assert loaded == "[]"
