"""Parse and sanitise the `uicontext_str` a page sends (SPEC §2, §3). Never raises.

Bad input drops or trims the context and returns warnings for the run's `warning` events.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any, Literal

from pydantic import BaseModel

__all__ = ["MAX_CONTEXT_BYTES", "UIContext", "parse_uicontext"]

MAX_CONTEXT_BYTES = 4096
MAX_NAME_CHARS = 200
MAX_ROUTE_CHARS = 512
_OBJECT_TYPES = ("dashboard", "dataset", "migration")
_ENV_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_KNOWN_KEYS = ("objectType", "objectId", "objectName", "envId", "route")


class UIContext(BaseModel):
    """The page the person came from; every field is already validated."""

    objectType: Literal["dashboard", "dataset", "migration"] | None = None
    objectId: int | None = None
    objectName: str | None = None
    envId: str | None = None
    route: str | None = None

    def is_empty(self) -> bool:
        return not any(self.model_dump().values())


def _clean_text(value: str, limit: int) -> str:
    """Drop control characters and trim; HTML stays as text and is escaped where shown."""
    text = "".join(ch for ch in value if unicodedata.category(ch)[0] != "C")
    return text.strip()[:limit]


def parse_uicontext(raw: str | dict[str, Any] | None) -> tuple[UIContext | None, list[str]]:
    """Return the sanitised context (or None) and human-readable warnings."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None, []
    warnings: list[str] = []
    if isinstance(raw, str):
        if len(raw.encode("utf-8", "ignore")) > MAX_CONTEXT_BYTES:
            return None, [f"UI context ignored: larger than {MAX_CONTEXT_BYTES} bytes."]
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):  # 4 KB of "[" nests deeper than the stack
            return None, ["UI context ignored: it is not valid JSON."]
    else:
        data = raw
        try:
            size = len(json.dumps(data, default=str))
        except (ValueError, RecursionError):  # circular or absurdly deep
            return None, ["UI context ignored: it is not valid JSON."]
        if size > MAX_CONTEXT_BYTES:
            return None, [f"UI context ignored: larger than {MAX_CONTEXT_BYTES} bytes."]
    if not isinstance(data, dict):
        return None, ["UI context ignored: expected a JSON object."]

    unknown = sorted(str(k) for k in data if k not in _KNOWN_KEYS)
    if unknown:
        warnings.append(f"UI context: ignored unknown keys {', '.join(unknown)[:200]}.")
    fields: dict[str, Any] = {}

    object_type = data.get("objectType")
    if object_type is not None:
        if isinstance(object_type, str) and object_type.lower() in _OBJECT_TYPES:
            fields["objectType"] = object_type.lower()
        else:
            warnings.append("UI context: objectType must be dashboard, dataset or migration.")

    object_id = data.get("objectId")
    if object_id is not None and object_id != "":
        if isinstance(object_id, bool):
            object_id = None
        elif isinstance(object_id, str) and object_id.strip().isdigit():
            object_id = int(object_id.strip())
        if isinstance(object_id, int) and 0 < object_id < 2**31:
            fields["objectId"] = object_id
        else:
            warnings.append("UI context: objectId must be a positive integer.")

    name = data.get("objectName")
    if name is not None:
        if isinstance(name, (str, int)):
            cleaned = _clean_text(str(name), MAX_NAME_CHARS)
            if len(str(name)) > MAX_NAME_CHARS:
                warnings.append(f"UI context: objectName cut to {MAX_NAME_CHARS} characters.")
            fields["objectName"] = cleaned or None
        else:
            warnings.append("UI context: objectName must be a string.")

    env_id = data.get("envId")
    if env_id is not None and env_id != "":
        if isinstance(env_id, str) and _ENV_ID.match(env_id):
            fields["envId"] = env_id
        else:
            warnings.append("UI context: envId must be a short environment name.")

    route = data.get("route")
    if route is not None and route != "":
        if isinstance(route, str) and route.startswith("/") and len(route) <= MAX_ROUTE_CHARS:
            fields["route"] = _clean_text(route, MAX_ROUTE_CHARS)
        else:
            warnings.append("UI context: route must be a path starting with '/'.")

    if "objectId" in fields and "objectType" not in fields:
        warnings.append("UI context: objectId ignored without an objectType.")
        fields.pop("objectId")
    context = UIContext(**fields)
    return (None if context.is_empty() else context), warnings
