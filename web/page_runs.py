"""The page's side of main runs: a quick call starts (or queues) the work and shows it at
once, then a follower streams the conversation until nothing runs.

Why two steps instead of one streaming callback (as `/agent_handler` is for programs): the
run belongs to the server. A follower that goes away (a reload, a closed tab, a lost
connection, a switch to another conversation) only stops reading; the reloaded page
follows the same run again (issue 11). A message sent while a run streams is queued and
shown as "queued" at once, never dropped: the follower's Gradio event uses
`trigger_mode="always_last"`, so a send while it streams makes it run once more after.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import gradio as gr

from agent.errors import IdentityError
from agent.history_window import HistoryWindow
from agent.live_run import LiveRun
from agent.turn_queue import QueuedTurn
from storage import off_loop
from web.chat_window import ChatView, render_window, without_run
from web.edit_form import edited_args
from web.errors import gradio_error, to_gradio
from web.handlers import _FAILED, ChatUpdate, Handlers, has_role
from web.side_render import parse_btw
from web.signin import SIGN_IN_FIRST, SIGNED_OUT
from web.text_policy import escape_html, md_escape

__all__ = ["CONNECTING", "QUEUED_NOTE", "SWITCHING", "PageRuns"]

CONNECTING = "The page is still connecting; send again in a moment (your text is kept)."
QUEUED_NOTE = "⏳ Queued: starts when the current run ends."
SWITCHING = "Switching to the {role} user; send again in a moment (your text is kept)."


class PageRuns:
    """Submit, follow, decide, retry and stop, for the page (private Gradio events)."""

    def __init__(self, handlers: Handlers) -> None:
        self.handlers = handlers
        self.service = handlers.service
        self.policy = handlers.policy
        self.views = handlers.views  # which conversation each tab shows

    async def submit(self, message: Any, conv_id: str, user_id: str, user_jwt: str,
                     env_id: str | None, uicontext: str | None, role: Any = None,
                     request: gr.Request = None  # type: ignore[assignment]
                     ) -> tuple[Any, Any, Any]:
        """Send the input box: `[message box, chatbot, stop]`. The turn starts now, or waits
        behind the live run; either way the chat shows it before this returns."""
        text = message if isinstance(message, str) else ""
        if parse_btw(text)[0] or not text.strip():  # `/btw`: the side panel takes it
            return gr.skip(), gr.skip(), gr.skip()
        if not user_id:  # the page's identity has not arrived: never send as anonymous
            raise gradio_error(CONNECTING, title="Not sent yet")
        if _switching(role, user_id, demo=not self.handlers.signin.active):
            raise gradio_error(SWITCHING.format(role=role), title="Not sent yet")
        # The page sends into what it shows: the freshest word on that (two switch events
        # in flight can reach the server in either order).
        self.views.show(request, conv_id)
        try:
            await self.service.submit_turn(message=text, conv_id=conv_id, user_id=user_id,
                                           user_jwt=user_jwt, env_id=env_id,
                                           uicontext_str=uicontext)
        except IdentityError:
            raise gradio_error(SIGNED_OUT if user_jwt else SIGN_IN_FIRST,
                               title="401 unauthorized") from None
        except _FAILED as exc:
            raise to_gradio(exc) from None
        return "", await self._chat(conv_id, user_id, user_jwt, request), self._stop(conv_id)

    def _stop(self, conv_id: str) -> Any:
        """Stop, shown only while the conversation has a run live."""
        return gr.update(visible=self.service.runs.busy(conv_id or ""))

    async def reattach(self, conv_id: str, user_id: str, user_jwt: str,
                       request: gr.Request = None  # type: ignore[assignment]
                       ) -> AsyncIterator[ChatUpdate]:
        """After a load or opening a conversation: follow its run if one is live; else
        change nothing (the page already shows it as stored, and a late idle render could
        land after a sign-out or a switch and bring the old chat back)."""
        if not self.service.runs.busy(conv_id or ""):
            yield gr.skip(), gr.skip(), gr.skip()
            return
        async for update in self.follow(conv_id, user_id, user_jwt, request):
            yield update

    async def follow(self, conv_id: str, user_id: str, user_jwt: str,
                     request: gr.Request = None  # type: ignore[assignment]
                     ) -> AsyncIterator[ChatUpdate]:
        """Stream the conversation while a run is live, through each queued turn; when it
        is idle, show it as stored once. Going away never cancels the run; the tab showing
        another conversation ends the following with an update that changes nothing
        (Gradio applies a stream's last value again when it ends)."""
        try:
            identity = await self.service.authenticate(user_id, user_jwt)
            self.service.check_owner(identity, conv_id)
        except _FAILED:
            yield gr.skip(), gr.skip(), gr.update(visible=False)
            return
        view: ChatView | None = None
        read_for: tuple[str, int | None] | None = None
        looked_at = ("", 0)  # (run, how many of its events the page was told about)
        yielded = False
        async for live in self.service.runs.follow(conv_id):
            if not self.views.still_showing(request, conv_id):
                yield await self._now_shown(user_id, user_jwt, request)
                return
            # Read the window once per run (the run before it is stored now) and again
            # only when the person asked for earlier messages: each update renders the
            # live run alone on top of it.
            wanted = (live.run_id, self.views.shown_from(request, conv_id))
            if view is None or wanted != read_for:
                read_for = wanted
                view = self._view(await self._window(identity, conv_id, request), live)
                if not self.views.still_showing(request, conv_id):  # switched meanwhile
                    yield await self._now_shown(user_id, user_jwt, request)
                    return
            # The run's events (the page's "Events of the last run") go only when one other
            # than a token came. Gradio's own JSON postprocess had every update send them
            # whole (3.4 MB for one long answer); in wire form (`web.wire_updates`) they go
            # as appends, and a skip spares even the diff. The run's last event (`done`) is
            # never a token, so the page ends with all of them. Events only grow, so only
            # the new ones are looked at.
            run_id, start = looked_at
            new = live.events[start if run_id == live.run_id else 0:]
            events: Any = gr.skip()
            if run_id != live.run_id or any(e.get("type") != "token" for e in new):
                events = live.events
            looked_at = (live.run_id, len(live.events))
            yield self._render(view, live), events, self._stop(conv_id)
            yielded = True
        if yielded and not self.views.still_showing(request, conv_id):
            # Switched after the last update: Gradio applies a stream's last value again
            # when it ends, which would paint this conversation over the one shown now.
            yield await self._now_shown(user_id, user_jwt, request)
        elif not yielded and self.views.still_showing(request, conv_id):
            # it ended before this reader came (a quick continuation): show its end
            last = self.service.live_run(conv_id)
            yield (await self._chat(conv_id, user_id, user_jwt, request),
                   last.events if last is not None else gr.skip(), self._stop(conv_id))

    async def decide(self, conv_id: str, user_id: str, user_jwt: str,
                     confirmation_id: str, decision: str, args: str | None = None,
                     request: gr.Request = None  # type: ignore[assignment]
                     ) -> Any:
        """Approve or deny: start the continuation and show it; the follower streams it.
        `args`: the edit form's checked arguments (JSON), when the person edited the call."""
        self.views.show(request, conv_id)
        return await self._start(
            conv_id, user_id, user_jwt, request, lambda: self.service.confirm(
                conv_id=conv_id, user_id=user_id, user_jwt=user_jwt,
                confirmation_id=confirmation_id, decision=decision, args=args or None))

    async def retry(self, conv_id: str, user_id: str, user_jwt: str, call_id: str,
                    request: gr.Request = None  # type: ignore[assignment]
                    ) -> Any:
        self.views.show(request, conv_id)
        return await self._start(
            conv_id, user_id, user_jwt, request, lambda: self.service.retry(
                conv_id=conv_id, user_id=user_id, user_jwt=user_jwt, call_id=call_id))

    async def show_earlier(self, conv_id: str, user_id: str, user_jwt: str,
                           request: gr.Request = None  # type: ignore[assignment]
                           ) -> Any:
        """"Show earlier messages" (the chat's first row): the tab's chat reaches one more
        window back; a run streaming meanwhile renders the same stretch from its next
        update on (`follow` reads the tab's reach)."""
        try:
            identity = await self.service.authenticate(user_id, user_jwt)
            start = self.views.shown_from(request, conv_id)
            if start is None:
                start = (await self._window(identity, conv_id, request)).start_seq
            earlier = await off_loop(self.service.history_window, identity, conv_id,
                                     before_seq=start) if start is not None else None
        except _FAILED as exc:
            raise to_gradio(exc) from None
        if earlier is None or earlier.start_seq is None:
            return gr.skip()
        self.views.show(request, conv_id, from_seq=earlier.start_seq)
        return await self._chat(conv_id, user_id, user_jwt, request)

    async def check_edit(self, user_id: str, user_jwt: str, confirmation_id: str,
                         names: str, *values: Any) -> tuple[Any, str]:
        """The edit form's values, validated against the tool's schema: (the message shown
        in the form, the arguments as JSON; "" when refused). Decides nothing."""
        args = edited_args(self.handlers.runtime.registry, names, values)
        try:
            await self.service.authenticate(user_id, user_jwt)
            valid = await off_loop(self.service.validate_edit, confirmation_id, args)
        except _FAILED as exc:
            return gr.update(value=f"⚠️ {md_escape(str(exc))}", visible=True), ""
        return gr.update(value="", visible=False), json.dumps(valid or args)

    @staticmethod
    def require_checked(args: str) -> None:
        """Stops the chain after a refused edit (its message is already in the form)."""
        if not args:
            raise gr.Error("Not approved: fix the value the form names first.",
                           print_exception=False)

    async def undo(self, conv_id: str, user_id: str, user_jwt: str, audit_id: Any,
                   request: gr.Request = None  # type: ignore[assignment]
                   ) -> Any:
        """Undo a change (the chat's button or the audit log's): its run stops at the card.
        The page's conversation is stored first if it is still new (an undo from the audit
        log on a fresh page), as a first message would."""
        self.views.show(request, conv_id)
        number = int(audit_id) if isinstance(audit_id, float) else audit_id

        async def start() -> Any:
            identity = await self.service.authenticate(user_id, user_jwt)
            await off_loop(self.service.open_conversation, identity, conv_id,
                           f"Undo change #{number}")
            return await self.service.undo_change(conv_id=conv_id, user_id=user_id,
                                                  user_jwt=user_jwt, audit_id=number)

        return await self._start(conv_id, user_id, user_jwt, request, start)

    async def stop(self, conv_id: str, user_id: str, user_jwt: str, message: Any,
                   request: gr.Request = None  # type: ignore[assignment]
                   ) -> tuple[Any, Any, Any, Any]:
        """Stop the run; queued messages go back into the input box, nothing is lost."""
        waiting = [turn.text for turn in self.service.queued(conv_id or "")]
        chat, events = await self.handlers.stop(conv_id, user_id, user_jwt, request)
        hidden = gr.update(visible=False)
        if not waiting:
            return chat, events, gr.skip(), hidden
        typed = message.strip() if isinstance(message, str) else ""
        return chat, events, "\n\n".join([*waiting, typed] if typed else waiting), hidden

    # rendering -----------------------------------------------------------------------

    async def _start(self, conv_id: str, user_id: str, user_jwt: str, request: Any,
                     start: Any) -> Any:
        try:
            await start()
        except _FAILED as exc:
            raise to_gradio(exc) from None
        return await self._chat(conv_id, user_id, user_jwt, request), self._stop(conv_id)

    async def _window(self, identity: Any, conv_id: str, request: Any) -> HistoryWindow:
        """The stretch of stored messages the tab shows: the newest (a bounded read), or
        from where the person's "Show earlier messages" reached."""
        return await off_loop(self.service.history_window, identity, conv_id,
                              from_seq=self.views.shown_from(request, conv_id))

    async def _chat(self, conv_id: str, user_id: str, user_jwt: str, request: Any
                    ) -> list[dict[str, Any]]:
        """The chat as it stands: the window of history, the live run, the queue."""
        identity = await self.service.authenticate(user_id, user_jwt)
        window = await self._window(identity, conv_id, request)
        live = self.service.live_run(conv_id)
        if live is not None and not live.finished.is_set():
            return self._render(self._view(window, live), live)
        return render_window(window, self.policy)

    async def _now_shown(self, user_id: str, user_jwt: str, request: Any) -> ChatUpdate:
        """A follower's last update once its tab shows another conversation: that one's
        chat as it stands. An update of the old conversation already on its way (produced
        before the switch, delivered after the switch's own answer, as happens under load)
        would otherwise stay on screen; this one travels behind it on the same stream, so
        it lands last. Nothing changes when the tab's conversation is not this caller's."""
        shown = self.views.shown(request)
        if not shown:
            return gr.skip(), gr.skip(), gr.skip()
        try:
            return (await self._chat(shown, user_id, user_jwt, request), gr.skip(),
                    self._stop(shown))
        except _FAILED:
            return gr.skip(), gr.skip(), gr.skip()

    def _view(self, window: HistoryWindow, live: LiveRun) -> ChatView:
        return ChatView(without_run(window, live.run_id), self.policy, awaiting=False)

    def _render(self, view: ChatView, live: LiveRun) -> list[dict[str, Any]]:
        chat = view.render(live.events, live.request.user_message,
                           streaming=live.status is None)  # its last update: whole
        conv_id = live.conversation_id
        for turn, reason in self.service.runs.queue.take_refused(conv_id):
            # Toasts render as HTML: escaped (web/text_policy.py).
            gr.Warning(escape_html(f"Your queued message “{turn.text[:80]}” was not sent: "
                                   f"{reason}"))
        return chat + self.policy.chat([_queued(turn) for turn in
                                        self.service.queued(conv_id)])


def _queued(turn: QueuedTurn) -> dict[str, Any]:
    return {"role": "user", "content": f"{turn.text}\n\n*{QUEUED_NOTE}*"}


def _switching(role: Any, user_id: str, *, demo: bool) -> bool:
    """Demo mode: the role picked in the page is not yet the identity the page holds (the
    switch is on its way). Sending now would go in as the previous role."""
    if not demo or not isinstance(role, str) or not role:
        return False
    return not has_role(user_id, role)
