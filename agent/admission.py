"""Admitting a turn: the database side of starting a run, before its task exists.

Each method is synchronous database work that the service runs in a worker thread
(`storage.off_loop`), so the event loop never waits on it: the conversation opened (or
created) for its owner, the run's lease claimed (one live run per conversation across
replicas), an approval the turn leaves behind closed, a decision taken. Each returns the
`RunRequest` to launch; a lease claimed for a request that is never made is released.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import SecretStr
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from agent.confirmations import Resume
from agent.environments import tier_of
from agent.errors import ConversationAccessError, InputError
from agent.identity import Identity
from agent.inputs import clean_text, refusal
from agent.loop import AgentDeps, RunRequest
from agent.prompt_window import StoredContext, new_context, read_context
from agent.run_leases import RunLeases
from agent.tools.registry import select_tools
from agent.uicontext import UIContext, parse_uicontext
from storage import confirmations as confirmations_repo
from storage import conversations as repo
from storage.models import Message

__all__ = ["CONV_ID", "Admission"]

CONV_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ENV_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_BAD_CONV_ID = "conv_id must be 1-64 letters, digits, '-' or '_'."
_log = logging.getLogger(__name__)


class _CreatedMeanwhile(Exception):
    """A conversation this admission was creating was created by someone a moment ago."""


class _HandedOut:
    """Conversation ids this process made up (random UUIDs) and has not seen used yet: no
    conversation can have one, so a turn on it needs no look for it before its claim.
    Bounded (the oldest forgotten first); a forgotten id costs only that read. A clash the
    look would have caught (a second tab's turn on the same id first) still fails the
    claim's INSERT, and the admission falls back to the owner's check (`_CreatedMeanwhile`)."""

    def __init__(self, limit: int = 10_000) -> None:
        self._ids: dict[str, None] = {}
        self._limit = limit
        self._lock = threading.Lock()

    def new(self) -> str:
        conv_id = str(uuid.uuid4())
        with self._lock:
            self._ids[conv_id] = None
            if len(self._ids) > self._limit:
                del self._ids[next(iter(self._ids))]
        return conv_id

    def take(self, conv_id: str) -> bool:
        """Whether `conv_id` was handed out and not used since (it is used now)."""
        with self._lock:
            return self._ids.pop(conv_id, False) is None


class Admission:
    def __init__(self, deps: AgentDeps, leases: RunLeases, *,
                 is_live: Callable[[str], bool],
                 credential: Callable[[str | None], SecretStr | None]) -> None:
        self.deps = deps
        self.leases = leases
        self.is_live = is_live  # asked from this worker thread: it must not touch the loop
        self.credential = credential
        self.handed_out = _HandedOut()

    def new_conversation_id(self) -> str:
        """An id for a conversation not created yet (a new chat, a turn without an id)."""
        return self.handed_out.new()

    # conversations ----------------------------------------------------------------------

    def open_conversation(self, identity: Identity, conv_id: str | None,
                          title: str | None = None) -> str:
        """Return the conversation id, creating it for `identity` if it is new."""
        conv_id, create = self.find_conversation(identity, conv_id, title)
        if create is not None:
            try:
                with self.deps.db.session() as session:
                    create(session)
            except _CreatedMeanwhile:
                self.check_owner(identity, conv_id)
        return conv_id

    def find_conversation(self, identity: Identity, conv_id: str | None,
                          title: str | None = None
                          ) -> tuple[str, Callable[[Session], None] | None]:
        """The conversation id (a new one when none is given) and, when it does not exist
        yet, its creation for `identity`, to run in a transaction of the caller's (a turn
        creates it in its claim's: one write transaction). The creation raises
        `_CreatedMeanwhile` when someone created the same id a moment ago (it is theirs
        unless it is ours: `check_owner`). An id this process made up and handed out
        (`new_conversation_id`) is not looked for first: nobody's conversation has it."""
        conv_id = (conv_id or "").strip() or self.new_conversation_id()
        if not CONV_ID.match(conv_id):
            raise InputError(_BAD_CONV_ID)
        if not self.handed_out.take(conv_id):
            with self.deps.db.read() as session:
                conversation = repo.get_conversation(session=session, conversation_id=conv_id)
            if conversation is not None:
                if conversation.owner_id != identity.user_id:
                    raise ConversationAccessError()
                return conv_id, None

        def create(session: Session) -> None:
            try:
                repo.create_conversation(session=session, owner_id=identity.user_id,
                                         conversation_id=conv_id, title=title)
            except IntegrityError as exc:
                raise _CreatedMeanwhile() from exc

        return conv_id, create

    def check_owner(self, identity: Identity, conv_id: str) -> None:
        with self.deps.db.read() as session:
            owned = repo.is_owner(session=session, conversation_id=conv_id,
                                  owner_id=identity.user_id)
        if not owned:
            raise ConversationAccessError()

    def own(self, identity: Identity, conv_id: str | None) -> str:
        """The conversation id, when it is well formed and the caller's."""
        conv_id = (conv_id or "").strip()
        if not CONV_ID.match(conv_id):
            raise InputError(_BAD_CONV_ID)
        self.check_owner(identity, conv_id)
        return conv_id

    # the three ways a run starts ----------------------------------------------------------

    def turn(self, identity: Identity, message: Any, conv_id: str, env_id: str | None,
             uicontext_str: Any, user_jwt: str | None) -> RunRequest:
        """A person's message: open the conversation, claim it, close an open approval.
        The run's row and the person's message are stored with the lease, in one
        transaction (the run then starts from them), and so is a new conversation (before:
        a transaction of its own first, one more wait for SQLite's writer and one more
        thread hand-off before a newcomer's first words); everything that may fail is done
        before it, so a claimed run is always launched."""
        text = clean_text(message) if isinstance(message, str) else ""
        # A message the loop will refuse (blank or over the limit) must not become the title.
        limit = self.deps.settings.max_message_chars
        fits = len(text) <= limit
        conv_id, create = self.find_conversation(
            identity, conv_id, title=(text.strip()[:80] if fits else "") or None)
        context, warnings = parse_uicontext(uicontext_str)
        env = (env_id or "").strip() if isinstance(env_id, str) else ""
        if env and not _ENV_ID.match(env):
            warnings.append("env_id ignored: it must be a short environment name.")
            env = ""
        request = self.request(identity, conv_id, env or (context.envId if context else None),
                               context, run_id=uuid.uuid4().hex, user_message=text,
                               warnings=warnings, superset_token=self.credential(user_jwt))
        stores_message = refusal(text, limit) is None
        stored: list[Message | None] = []  # the person's message, as the claim wrote it
        model = self.deps.settings.agent_model

        def claim_and_begin(create: Callable[[Session], None] | None) -> None:
            # A conversation created in this claim has no approval open: none is looked for.
            with self.claimed(identity, conv_id, request.run_id, first=create,
                              then=lambda session: stored.append(_begin(
                                  session, request, stores_message, model,
                                  created=create is not None))):
                if request.started_at is None:  # an approval was open: close it, then begin
                    # A turn that ignores a pending approval closes it, so the transcript
                    # stays valid; say so: the card vanishes, and nothing it asked for ran.
                    if self.deps.confirmations.close_open(identity=identity,
                                                          conversation_id=conv_id):
                        warnings.append("Your new message closed the open approval request; "
                                        "nothing it asked for was executed.")
                    with self.deps.db.session() as session:
                        _begin(session, request, stores_message, model, closed=True)

        try:
            claim_and_begin(create)  # a new conversation is created in the claim's transaction
        except _CreatedMeanwhile:
            self.check_owner(identity, conv_id)  # created a moment ago, and ours after all
            claim_and_begin(None)
        # The conversation's first message (numbered from its counter in the claim's
        # transaction, under the lease): nothing else is stored, so nothing is read back.
        first = stored[0] if stored else None
        request.first_read = new_context(first) if first is not None and first.seq == 1 \
            else self.first_read(request)
        return request

    def first_read(self, request: RunRequest) -> StoredContext | None:
        """The run's first prompt context, read here, in the admission's worker thread right
        after its commit: the run's first step then goes to the model without a trip of its
        own, and the read no longer waits for the GIL behind Gradio's work on the run's
        first update (traced: the read took 4-5 ms of a 51 ms one-tool turn, for ~1 ms of
        its own CPU). Nothing but this run writes the conversation from that commit on (it
        holds the lease); if the run writes before its first prompt, it reads again. A read
        that fails is left to the run, which meets the failure there: a claimed run is always
        launched."""
        if not request.user_stored:
            return None
        try:
            return read_context(self.deps.db, self.deps.settings, request.conversation_id,
                                request.run_id)
        except Exception:  # the run reads again and reports it
            _log.debug("first read at admission failed", exc_info=True)
            return None

    def decision(self, identity: Identity, conv_id: str, confirmation_id: str, choice: Any,
                 user_jwt: str | None, args: dict[str, Any] | None = None) -> RunRequest:
        """A decision on a paused call: claim the conversation, take it, run the rest.
        The continuation acts with the deciding request's token, not the asker's; `args`:
        the person's validated edit of the call's arguments."""
        with self.claimed(identity, conv_id) as run_id:
            resume = self.deps.confirmations.decide(
                identity=identity, conversation_id=conv_id, confirmation_id=confirmation_id,
                decision=choice, args=args)
            state = resume.confirmation.resume if resume.confirmation else {}
            return self.continuation(identity, conv_id, state, resume,
                                     self.credential(user_jwt), run_id)

    def retry(self, identity: Identity, conv_id: str, state: dict[str, Any], resume: Resume,
              user_jwt: str | None) -> RunRequest:
        """A manual retry of a read whose automatic retry failed too."""
        with self.claimed(identity, conv_id) as run_id:
            return self.continuation(identity, conv_id, state, resume,
                                     self.credential(user_jwt), run_id)

    # parts ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def claimed(self, identity: Identity, conv_id: str, run_id: str | None = None,
                then: Callable[[Session], Any] | None = None,
                first: Callable[[Session], Any] | None = None) -> Iterator[str]:
        """A new run's id, holding the conversation's lease in the database (any replica's
        second run gets `ConversationBusy`); released again if the request is not made.
        `first(session)` and `then(session)`: more work in the claim's transaction, before
        and after the lease. The service has checked the conversation idle in this process,
        on the loop."""
        run_id = run_id or uuid.uuid4().hex
        self.leases.claim(conversation_id=conv_id, run_id=run_id, user_id=identity.user_id,
                          live=self.is_live, then=then, first=first)
        try:
            yield run_id
        except BaseException:
            with contextlib.suppress(Exception):
                self.leases.release(run_id)
            raise

    def request(self, identity: Identity, conv_id: str, env_id: str | None,
                context: UIContext | None, *, run_id: str, **fields: Any) -> RunRequest:
        """A run with the tools this role may use on this page (selection pipeline, SPEC §4)."""
        return RunRequest(
            run_id=run_id, conversation_id=conv_id, identity=identity,
            env_id=env_id, env_tier=tier_of(env_id, self.deps.settings.environment_tiers),
            context=context,
            tools=select_tools(self.deps.registry, role=identity.role,
                               object_type=context.objectType if context else None),
            **fields)

    def continuation(self, identity: Identity, conv_id: str, state: dict[str, Any],
                     resume: Resume, superset_token: SecretStr | None,
                     run_id: str) -> RunRequest:
        raw = state.get("context")
        context = UIContext.model_validate(raw) if raw else None
        return self.request(identity, conv_id, state.get("env_id"), context, run_id=run_id,
                            user_message=None, resume=resume, superset_token=superset_token)


def _begin(session: Session, request: RunRequest, stores_message: bool, model: str, *,
           closed: bool = False, created: bool = False) -> Message | None:
    """Store the run and the person's message (unless the run will refuse it), in the
    caller's transaction; not while an approval is still open (`closed`: it was closed)
    since that approval's answer must come before the message in the transcript. The
    message's row as written, if one was. `created`: the conversation was created in this
    transaction (no approval, no earlier run to look for)."""
    conv_id = request.conversation_id
    if not (closed or created) and confirmations_repo.list_pending(session=session,
                                                                   conversation_id=conv_id):
        return None
    run = repo.start_run(session=session, run_id=request.run_id, conversation_id=conv_id,
                         user_id=request.identity.user_id, model=model, env_id=request.env_id,
                         first=created)
    message = repo.append_message(
        session=session, conversation_id=conv_id, run_id=request.run_id, role="user",
        content=request.user_message or "") if stores_message else None
    request.started_at = run.started_at.timestamp()
    request.user_stored = stores_message
    return message
