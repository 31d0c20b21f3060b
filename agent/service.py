"""The agent service: identity, conversation ownership, and one live run per conversation.

Each run executes in its own asyncio task so that a client that stops listening (Stop in
the UI, `job.cancel()`, a dropped connection) cancels it cleanly and the run still ends
with `done(cancelled)` in its event list, which the Stop handler then shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from agent import events as ev
from agent.environments import tier_of
from agent.errors import ConversationAccessError, InputError
from agent.identity import Identity, TokenIssuer
from agent.loop import AgentDeps, RunRequest, run_agent
from agent.tools.registry import select_tools
from agent.uicontext import parse_uicontext
from storage import conversations as repo
from storage.models import Message

__all__ = ["AgentService", "LiveRun"]

_CONV_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ENV_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass
class LiveRun:
    """Events of one run as they happen; any number of readers can follow it."""

    run_id: str
    conversation_id: str
    owner_id: str
    request: RunRequest
    events: list[dict[str, Any]] = field(default_factory=list)
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def append(self, event: Any) -> None:
        self.events.append(event.model_dump(mode="json"))
        self.changed.set()

    @property
    def status(self) -> str | None:
        last = self.events[-1] if self.events else None
        return last.get("status") if last and last.get("type") == "done" else None

    async def follow(self) -> AsyncIterator[list[dict[str, Any]]]:
        """Yield the growing event list whenever it changes, until the run is done."""
        seen = 0
        while True:
            self.changed.clear()
            if len(self.events) > seen:
                seen = len(self.events)
                yield list(self.events)
            if self.finished.is_set() and len(self.events) == seen:
                return
            waiter = asyncio.ensure_future(self.changed.wait())
            done_waiter = asyncio.ensure_future(self.finished.wait())
            try:
                await asyncio.wait({waiter, done_waiter}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                done_waiter.cancel()

    def cancel(self) -> None:
        self.request.cancel_requested.set()
        if self.task is not None and not self.task.done():
            self.task.cancel()


class AgentService:
    """What the UI, the Gradio API and tests call to run the agent."""

    def __init__(self, deps: AgentDeps, issuer: TokenIssuer) -> None:
        self.deps = deps
        self.issuer = issuer
        self._live: dict[str, LiveRun] = {}

    # identity and conversations ---------------------------------------------------------

    def authenticate(self, user_id: str | None, token: str | None) -> Identity:
        return self.issuer.verify(user_id=(user_id or "").strip() or None,
                                  token=(token or "").strip() or None)

    def open_conversation(self, identity: Identity, conv_id: str | None,
                          title: str | None = None) -> str:
        """Return the conversation id, creating it for `identity` if it is new."""
        conv_id = (conv_id or "").strip() or str(uuid.uuid4())
        if not _CONV_ID.match(conv_id):
            raise InputError("conv_id must be 1-64 letters, digits, '-' or '_'.")
        with self.deps.db.session() as session:
            conversation = repo.get_conversation(session=session, conversation_id=conv_id)
            if conversation is None:
                repo.create_conversation(session=session, owner_id=identity.user_id,
                                         conversation_id=conv_id, title=title)
            elif conversation.owner_id != identity.user_id:
                raise ConversationAccessError("This conversation belongs to another user.")
        return conv_id

    def check_owner(self, identity: Identity, conv_id: str) -> None:
        with self.deps.db.session() as session:
            conversation = repo.get_conversation(session=session, conversation_id=conv_id)
        if conversation is None or conversation.owner_id != identity.user_id:
            raise ConversationAccessError("Conversation not found.")

    def history(self, identity: Identity, conv_id: str) -> list[Message]:
        """Stored messages of a conversation the caller owns (empty when it is new)."""
        if not conv_id or not _CONV_ID.match(conv_id):
            return []
        with self.deps.db.session() as session:
            conversation = repo.get_conversation(session=session, conversation_id=conv_id)
            if conversation is None:
                return []
            if conversation.owner_id != identity.user_id:
                raise ConversationAccessError("This conversation belongs to another user.")
            return list(repo.list_messages(session=session, conversation_id=conv_id))

    # runs ------------------------------------------------------------------------------

    def live_run(self, conv_id: str) -> LiveRun | None:
        return self._live.get(conv_id)

    async def start_turn(
        self, *, message: Any, conv_id: str | None, user_id: str | None,
        user_jwt: str | None, env_id: str | None, uicontext_str: Any,
    ) -> LiveRun:
        identity = self.authenticate(user_id, user_jwt)
        text = message if isinstance(message, str) else ""
        # A message the loop will refuse (blank or over the limit) must not become the title.
        fits = len(text) <= self.deps.settings.max_message_chars
        conv_id = self.open_conversation(identity, conv_id,
                                         title=(text.strip()[:80] if fits else "") or None)
        current = self._live.get(conv_id)
        if current is not None and not current.finished.is_set():
            raise InputError("A run is already in progress in this conversation; stop it first.")
        context, warnings = parse_uicontext(uicontext_str)
        env = (env_id or "").strip() if isinstance(env_id, str) else ""
        if env and not _ENV_ID.match(env):
            warnings.append("env_id ignored: it must be a short environment name.")
            env = ""
        resolved_env = env or (context.envId if context else None)
        configured = {e.name: e.tier for e in self.deps.settings.superset_environments}
        request = RunRequest(
            run_id=uuid.uuid4().hex, conversation_id=conv_id, identity=identity,
            user_message=text, env_id=resolved_env,
            env_tier=tier_of(resolved_env, configured), context=context,
            tools=select_tools(self.deps.registry, role=identity.role,
                               object_type=context.objectType if context else None),
            warnings=warnings,
        )
        live = LiveRun(run_id=request.run_id, conversation_id=conv_id,
                       owner_id=identity.user_id, request=request)
        self._live[conv_id] = live
        live.task = asyncio.create_task(self._drive(live), name=f"run-{request.run_id}")
        return live

    async def _drive(self, live: LiveRun) -> None:
        stamp_seq = 0
        try:
            async for event in run_agent(self.deps, live.request):
                stamp_seq = event.seq
                live.append(event)
        except asyncio.CancelledError:
            live.append(ev.EventStamper(live.run_id, stamp_seq)(ev.Done, status="cancelled"))
        finally:
            live.finished.set()
            live.changed.set()

    async def stop(self, *, conv_id: str, user_id: str | None, user_jwt: str | None,
                   wait_s: float = 10.0) -> LiveRun | None:
        """Cancel the conversation's live run (owner only) and wait until it has settled."""
        identity = self.authenticate(user_id, user_jwt)
        live = self._live.get(conv_id)
        if live is None:
            return None
        if live.owner_id != identity.user_id:
            raise ConversationAccessError("This conversation belongs to another user.")
        live.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(live.finished.wait(), timeout=wait_s)
        return live
