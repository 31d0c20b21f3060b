"""The offline model scores its whole intent table on every model call (about 190 pattern
searches a request); each pattern is compiled once, not looked up in `re`'s cache per
search (that lookup and its flag checks were a sixth of the offline model's CPU per call,
on the model worker that serves every run's calls)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agent.offline.intents import Request, parse_request


def test_parsing_a_request_again_compiles_no_intent_pattern_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    request = Request(text="list the dashboards on staging", context={"envId": "ss-dev"},
                      known_envs=["ss-dev", "staging", "prod"])
    parse_request(request)  # the first parse compiles what it uses
    lookups: list[Any] = []
    real = re._compile  # type: ignore[attr-defined]

    def counted(pattern: Any, flags: Any) -> Any:
        lookups.append(pattern)
        return real(pattern, flags)

    monkeypatch.setattr(re, "_compile", counted)
    intent = parse_request(request)
    monkeypatch.undo()
    assert intent is not None and intent.tool == "list_dashboards"
    # Before: one lookup per search of the table (~190); what is left are a few patterns
    # built from the request's own words (an environment's name, a page number).
    assert len(lookups) < 30, len(lookups)
