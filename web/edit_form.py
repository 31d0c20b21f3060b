"""The approval card's edit form (issue 15): the proposed call's arguments as fields of the
tool's pydantic schema, pre-filled, for the person to correct before approving.

Gradio needs its components up front, so the form is `SLOTS` text fields, each labelled
with a schema field (name and description) when a card is shown; the rest stay hidden.
On submit the texts go back to the field names (`edited_args`): text for a string field,
JSON for the others (a list of owner ids, a number, true/false), nothing for an empty
optional field. The server validates the result against the schema (`AgentService.
confirm`), so a bad value is refused with the field's message and nothing runs.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from agent.tools.registry import ToolRegistry
from agent.undo import UNDO_SPEC, UNDO_TOOL

__all__ = ["SLOTS", "edited_args", "form_fields"]

SLOTS = 8


def _is_text(schema: type[BaseModel], name: str) -> bool:
    annotation = str(schema.model_fields[name].annotation)
    return "str" in annotation and "list" not in annotation


def _shown(value: Any, text: bool) -> str:
    if value is None:
        return ""
    return value if text and isinstance(value, str) else json.dumps(value)


def form_fields(registry: ToolRegistry, tool: Any, args: Any
                ) -> tuple[list[dict[str, Any]], str]:
    """(one {label, value, visible} per slot, the slots' field names as JSON) for a card."""
    spec = UNDO_SPEC if tool == UNDO_TOOL else registry.get(str(tool or ""))
    args = args if isinstance(args, dict) else {}
    slots: list[dict[str, Any]] = []
    names: list[str] = []
    if spec is not None:
        schema = spec.args_schema
        for name, field in list(schema.model_fields.items())[:SLOTS]:
            label = name + (f" — {field.description}" if field.description else "")
            slots.append({"label": label, "visible": True,
                          "value": _shown(args.get(name), _is_text(schema, name))})
            names.append(name)
    slots += [{"label": "", "value": "", "visible": False}] * (SLOTS - len(slots))
    return slots, json.dumps({"tool": str(tool or ""), "names": names})


def edited_args(registry: ToolRegistry, names_json: Any, values: tuple[Any, ...]
                ) -> dict[str, Any]:
    """The form's texts as the call's arguments (see the module docstring)."""
    try:
        form = json.loads(names_json) if isinstance(names_json, str) else {}
    except ValueError:
        form = {}
    tool = form.get("tool") if isinstance(form, dict) else None
    spec = UNDO_SPEC if tool == UNDO_TOOL else registry.get(str(tool or ""))
    names = form.get("names") if isinstance(form, dict) else None
    if spec is None or not isinstance(names, list):
        return {}
    out: dict[str, Any] = {}
    for name, value in zip(names, values, strict=False):
        text = value.strip() if isinstance(value, str) else ""
        if not text or name not in spec.args_schema.model_fields:
            continue
        if _is_text(spec.args_schema, name):
            out[name] = text
            continue
        try:
            out[name] = json.loads(text)
        except ValueError:
            out[name] = text  # the schema's validation names the field and the problem
    return out
