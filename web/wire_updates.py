"""Streamed chat updates handed to Gradio already in their wire form, postprocessed on the
event loop instead of in a worker thread per output.

Why: Gradio runs each output's `postprocess` through `anyio.to_thread.run_sync`, for every
output of every update. For the agent's streams that is two hand-offs per update (the chat
and its events), and the hand-off costs the loop far more than the work it hands off:
py-spy of the server over 30 rounds of 10 concurrent streams found `run_sync` under
`postprocess_data` in 13.6 % of the event loop's busy samples (574 samples), the Chatbot's
and the JSON's own `postprocess`, in the worker threads, in 23. Each hand-off also has
the worker thread wait for the GIL behind whatever the loop runs meanwhile, and the update
waits with it.

Events wired with `postprocess=False` (`wired`, always through `listen_wired`) get their
values from here instead:
- a Chatbot's through the component's own `postprocess` and `model_dump`, called inline:
  the same wire form as Gradio's (tested against it), a few pydantic objects per message;
- a JSON output's (a run's events) as a new list of the same event dicts: they are
  JSON-ready already (Gradio's JSON `postprocess` round-trips them through orjson and
  validates every value). A new list because Gradio keeps the value in the session's state
  and a run's event list grows in place after it (the next update's diff base is a copy
  either way: Gradio's file scan, run on every output, rebuilds each list and dict).
- anything else (a `gr.update`, `gr.skip()`) as it is: Gradio handles updates itself.

It also changed what the events cost on the wire: Gradio diffed the JSON's postprocessed
value as a whole and replaced it at every update, so a program received every event again
with every word. As a plain list it diffs as appends: one turn's queue stream at 20 ms a
token, "list the dashboards" 324 -> 68 kB, "what can you do?" 4.19 -> 0.56 MB (the rest is
the answer's HTML, which programs get whole at every update, as documented). Side by side
(bench/concurrency.py, twice each way, alternating): 50 streams' gap p99 0.075 / 0.080 ->
0.054 / 0.043 s, 100 streams' 0.082 / 0.081 -> 0.065 / 0.064 s, all 100 done 1.10 -> 1.07x
the bare endpoint's time; 10 streams unchanged within their spread (their top gaps are
the model worker's, `agent/model_worker.py`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import gradio as gr

__all__ = ["listen_wired", "wire_form", "wired"]


def wire_form(component: Any) -> Callable[[Any], Any]:
    """The function that turns one value for `component` into what Gradio sends for it."""
    if isinstance(component, gr.Chatbot):
        def chat(value: Any) -> Any:
            if isinstance(value, list):
                return component.postprocess(value).model_dump()
            if isinstance(value, dict) and isinstance(value.get("value"), list):
                # gr.update(value=[...]): Gradio would not postprocess its value either
                return {**value, "value": component.postprocess(value["value"]).model_dump()}
            return value  # gr.skip(), another gr.update(...), None
        return chat
    if isinstance(component, gr.JSON):
        def events(value: Any) -> Any:
            return list(value) if isinstance(value, list) else value
        return events
    return _as_is


def wired(fn: Callable[..., AsyncIterator[Any]], outputs: Sequence[Any]
          ) -> Callable[..., AsyncIterator[Any]]:
    """`fn` (an async generator of one value per output) yielding the wire form: for an
    event with `postprocess=False`. Gradio reads the signature through `__wrapped__`."""
    forms = [wire_form(output) for output in outputs]

    @functools.wraps(fn)
    async def stream(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        # Closed with this stream: a handler's `finally` (a run cancelled when its caller
        # goes away) runs when Gradio closes this one, not when the garbage is collected.
        async with contextlib.aclosing(fn(*args, **kwargs)) as updates:
            async for update in updates:
                if len(forms) == 1:  # the value itself (a chat is a list)
                    yield forms[0](update)
                else:
                    yield tuple(form(value) for form, value in zip(forms, update,
                                                                    strict=True))

    return stream


def _as_is(value: Any) -> Any:
    return value


def listen_wired(listener: Callable[..., Any], fn: Callable[..., AsyncIterator[Any]],
                 inputs: Any, outputs: Sequence[Any], **options: Any) -> Any:
    """`listener(fn, inputs, outputs, **options)` (an event's `.click`, `.then`, ...) with
    `fn`'s updates in wire form. `wired` and `postprocess=False` go together or not at all:
    either alone sends a chat unprocessed or processes it twice."""
    return listener(wired(fn, outputs), inputs, outputs, postprocess=False, **options)
