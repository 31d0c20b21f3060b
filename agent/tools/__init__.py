"""Tools the agent can call: specs, selection, and the built-in tools."""

from agent.tools.registry import ToolContext, ToolRegistry, ToolSpec, select_tools

__all__ = ["ToolContext", "ToolRegistry", "ToolSpec", "select_tools"]
