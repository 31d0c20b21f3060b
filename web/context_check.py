"""The page's object checked against Superset (issue 11, item 6): once the page has loaded,
the object the link names is looked up in its environment; the pill then shows Superset's
name for it (not the link's `objectName`, which anyone can write), and an id that is not
there gives a notice and is dropped from the context instead of failing when a tool runs.

Changing the environment keeps the object only when it can be matched there: ids differ
between Superset environments, so dashboard #3 in dev is not dashboard #3 in prod, but an
object imported (or migrated) keeps its uuid. The new environment is searched for the uuid
Superset gave when the object was found; the pill then names the twin there, with a notice
saying so ("#7 in prod, the same uuid"), and switching back restores the original. With no
twin, or no way to ask, the object is dropped with a notice.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import gradio as gr

from agent.errors import AgentError, ToolNotFound
from agent.uicontext import parse_uicontext
from web.render import context_pill
from web.text_policy import md_escape

__all__ = ["ContextCheck"]

_LOOKUP_S = 5.0
_NAMES = {"dashboard": "dashboard_title", "dataset": "table_name"}


class ContextCheck:
    def __init__(self, handlers: Any) -> None:
        self.handlers = handlers
        self.service = handlers.service
        self.clients = handlers.runtime.superset

    async def resolve(self, uicontext: str, env: str, origin: str, user_id: str,
                      user_jwt: str) -> tuple[Any, Any, Any, Any]:
        """After load and after an environment change: `[uicontext, pill, notice, origin]`.
        Wired with trigger mode "always_last": a change made while a lookup is in flight
        runs after it, on the state it left (Gradio's default, "once", dropped it, and the
        earlier answer won).
        `origin` (kept in the page) is `{"env", "context"}`: where the object was found,
        and its context as found there, to restore when the person switches back."""
        found = _origin(origin)
        if found and env == found["env"]:  # back where it came from: the object again
            return (found["context"], self.handlers.update_pill(found["context"], env),
                    gr.update(visible=False), origin)
        context, _ = parse_uicontext(uicontext or None)
        # Every answer writes the pill from the state it was given: this is the pill's one
        # writer after an environment change, so it always ends matching the context.
        pill = self.handlers.update_pill(uicontext, env)
        if context is None or context.objectType not in _NAMES or not context.objectId:
            return gr.skip(), pill, gr.skip(), gr.skip()
        kind, pk = context.objectType, context.objectId
        dropped = context.model_copy(update={"objectId": None, "objectName": None,
                                             "envId": None})
        if found:  # another environment: the id means something else there
            twin = await self._twin(kind, found.get("uuid"), env, user_id, user_jwt)
            name = f" “{context.objectName}”" if context.objectName else ""
            if isinstance(twin, dict):
                title = _title(kind, twin) or context.objectName
                matched = context.model_copy(update={"objectId": twin["id"],
                                                     "objectName": title, "envId": env})
                note = (f"ℹ️ {kind.capitalize()}{name} is #{twin['id']} in {env} (the same "
                        f"uuid as #{pk} in {found['env']}).")
                return (_json(matched), context_pill(matched.model_dump(), env),
                        gr.update(value=md_escape(note), visible=True), origin)
            why = (f"{env} has no {kind} with its uuid" if twin is False else
                   f"it could not be matched in {env} (ids differ between environments)")
            note = (f"⚠️ {kind.capitalize()} #{pk}{name} belongs to {found['env']}; {why}, so "
                    f"it is not carried to {env}. Switch back to {found['env']} to use it.")
            return (_json(dropped), context_pill(dropped.model_dump(), env),
                    gr.update(value=md_escape(note), visible=True), origin)
        record = await self._lookup(kind, pk, env, user_id, user_jwt)
        if record is None:  # could not ask (signed out, Superset down): leave it as it is
            return gr.skip(), pill, gr.skip(), gr.skip()
        if record is False:
            note = (f"⚠️ There is no {kind} #{pk} in {env} (or you may not see it), so the "
                    "page's object was not applied.")
            return (_json(dropped), context_pill(dropped.model_dump(), env),
                    gr.update(value=md_escape(note), visible=True), "")
        title = _title(kind, record) if isinstance(record, dict) else ""
        named = context.model_copy(update={"objectName": title or context.objectName,
                                           "envId": env})
        uuid = record.get("uuid") if isinstance(record, dict) else None
        return (_json(named), context_pill(named.model_dump(), env), gr.skip(),
                json.dumps({"env": env, "context": _json(named),
                            "uuid": uuid if isinstance(uuid, str) else None}))

    async def _lookup(self, kind: str, pk: int, env: str, user_id: str,
                      user_jwt: str) -> dict[str, Any] | bool | None:
        """The object as Superset has it; False when it is not there; None when unknown."""
        return await self._ask(env, user_id, user_jwt, lambda client: client.get(kind, pk))

    async def _twin(self, kind: str, uuid: Any, env: str, user_id: str, user_jwt: str
                    ) -> dict[str, Any] | bool | None:
        """The object with this uuid in `env` (a list row with its id); False when there is
        none; None when unknown (no uuid, or Superset could not be asked in time)."""
        if not isinstance(uuid, str) or not uuid:
            return None

        async def search(client: Any) -> dict[str, Any] | bool:
            rows = await client.list_all(kind)  # as migrations index a target (compare.py)
            twin = next((row for row in rows if str(row.get("uuid")) == uuid), None)
            return twin if isinstance(twin, dict) and isinstance(twin.get("id"), int) else False

        return await self._ask(env, user_id, user_jwt, search)

    async def _ask(self, env: str, user_id: str, user_jwt: str, call: Any) -> Any:
        if self.clients is None or not env:
            return None
        try:
            await self.service.authenticate(user_id, user_jwt)
            token = self.service.identities.passthrough_token(user_jwt or None)
            client = self.clients.get(env, user_token=token)
            return await asyncio.wait_for(call(client), timeout=_LOOKUP_S)
        except ToolNotFound:
            return False
        except (AgentError, TimeoutError, OSError):
            return None


def _title(kind: str, record: dict[str, Any]) -> str:
    return str(record.get(_NAMES[kind]) or "")[:200]


def _origin(raw: Any) -> dict[str, str] | None:
    try:
        found = json.loads(raw) if isinstance(raw, str) and raw else None
    except ValueError:
        return None
    ok = isinstance(found, dict) and isinstance(found.get("env"), str) and isinstance(
        found.get("context"), str)
    return found if ok else None


def _json(context: Any) -> str:
    return json.dumps(context.model_dump(exclude_none=True))
