"""Links from an answer to the Superset objects it names (issue 11, item 5).

Built on the server from two things the model cannot invent: the objects the run's own tool
calls returned (kind, id, title, environment) and the environment's configured `base_url`.
An object gets a link only when its title appears in the answer text, so a link is always to
something the answer talks about; the bundled demo environments have no web UI (no
`base_url`), so their objects get none.

URL shapes are Superset 6.1's own pages: `/superset/dashboard/<id>/` for a dashboard,
`/explore/?slice_id=<id>` for a chart and `/explore/?datasource_type=table&datasource_id=<id>`
for a dataset (its Explore view, which is where "open the dataset" goes in Superset's UI).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_LINKS", "FoundObject", "link_objects", "objects_in"]

MAX_LINKS = 25  # a page of a listing; beyond that the links line is noise
_MIN_TITLE_CHARS = 3  # "a", "QA": too short to be a name found in prose by chance

# A list in a tool result (its key) → the kind of the objects in it.
_LISTS = {"dashboards": "dashboard", "charts": "chart", "datasets": "dataset"}
# Tools that return one object at the top level → its kind.
_SINGLE = {"get_dashboard": "dashboard", "get_dataset": "dataset", "get_chart": "chart"}
_TITLE_KEYS = ("title", "name", "table_name", "slice_name", "dashboard_title")
_PATHS = {"dashboard": "/superset/dashboard/{id}/",
          "chart": "/explore/?slice_id={id}",
          "dataset": "/explore/?datasource_type=table&datasource_id={id}"}


@dataclass(frozen=True)
class FoundObject:
    kind: str  # dashboard | chart | dataset
    id: int
    title: str
    env_id: str | None


def _title(item: Mapping[str, Any]) -> str | None:
    for key in _TITLE_KEYS:
        value = item.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _found(kind: str, item: Any, env_id: str | None) -> FoundObject | None:
    if not isinstance(item, Mapping):
        return None
    object_id, title = item.get("id"), _title(item)
    if not isinstance(object_id, int) or isinstance(object_id, bool) or title is None:
        return None
    return FoundObject(kind, object_id, title, env_id)


def objects_in(tool: str, result: Any, env_id: str | None) -> list[FoundObject]:
    """The dashboards, charts and datasets a tool result names, with their environment
    (the result's own `env` when it says, else the call's)."""
    if not isinstance(result, Mapping):
        return []
    env = result.get("env") if isinstance(result.get("env"), str) else env_id
    found: list[FoundObject | None] = []
    if tool in _SINGLE:
        found.append(_found(_SINGLE[tool], result, env))
    for key, kind in _LISTS.items():
        items = result.get(key)
        if isinstance(items, list):
            found.extend(_found(kind, item, env) for item in items)
    return [item for item in found if item is not None]


def link_objects(answer: str, found: Iterable[FoundObject],
                 base_urls: Mapping[str, str]) -> list[dict[str, Any]]:
    """`[{kind, id, title, env_id, url}]` for each found object named in `answer` whose
    environment has a base URL; first mention order, no duplicates, at most MAX_LINKS."""
    text = answer.casefold()
    links: list[dict[str, Any]] = []
    seen: set[tuple[str, int, str | None]] = set()
    for item in found:
        key = (item.kind, item.id, item.env_id)
        base = base_urls.get(item.env_id or "")
        if key in seen or not base or len(item.title) < _MIN_TITLE_CHARS:
            continue
        if item.title.casefold() not in text:
            continue
        seen.add(key)
        links.append({"kind": item.kind, "id": item.id, "title": item.title,
                      "env_id": item.env_id,
                      "url": base.rstrip("/") + _PATHS[item.kind].format(id=item.id)})
        if len(links) >= MAX_LINKS:
            break
    links.sort(key=lambda link: text.find(link["title"].casefold()))
    return links
