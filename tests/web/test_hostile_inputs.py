"""A property-based battery of hostile inputs against a real app server (SQLite and
PostgreSQL): lone surrogates, NUL, NaN and infinities, huge and deeply nested values, wrong
types, wrong content types and bodies that are not UTF-8, over the Gradio endpoints
(`/agent_handler`, `/confirm_tool`, the side-question ones) called over raw HTTP, the
side-question REST routes and `/api/demo/token`.

Fixed seed, 1 000+ cases per backend. Nothing may answer 5xx, no run may end in an
"Internal error", and nothing may print a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.web.conftest import LiveServer
from tests.web.side_support import auth, run_main_turn

# Every kind of text that broke something once: unpaired surrogates, NUL, controls, markup.
_SURROGATES = st.text(alphabet=st.characters(categories=["Cs"]), min_size=1, max_size=3)
_NASTY = _SURROGATES.map(lambda bad: f"hi {bad} there") | st.sampled_from([
    "\ud800", "a\udfffb", "\x00", "nul\x00in", "\u202e", "💥" * 10,
    "<img src=x onerror=alert(1)>", "' OR 1=1 --", "../../etc/passwd"])
_TEXT = _NASTY | st.text(max_size=40)
_SCALAR = (_TEXT | st.none() | st.booleans() | st.integers(-2**70, 2**70)
           | st.floats(allow_nan=True, allow_infinity=True)
           | st.sampled_from(["x" * 70_000, "y" * 300_000]))
# Half the values are plainly nasty text, so each endpoint sees plenty of it.
_VALUE = _NASTY | st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=4)
                               | st.dictionaries(_TEXT, inner, max_size=4), max_leaves=12)
_CONTENT_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded",
                  "multipart/form-data; boundary=x", "application/octet-stream"]
EXAMPLES = {"gradio": 600, "rest": 300, "demo": 120}


@dataclass
class Target:
    server: LiveServer
    conv_id: str
    user_id: str
    token: str
    http: httpx.Client


@pytest.fixture(scope="module")
def target(live_server: LiveServer) -> Iterator[Target]:
    user_id, token = live_server.token("editor")
    run_main_turn(live_server, "hostile-main", user_id, token)
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        yield Target(live_server, "hostile-main", user_id, token, http)


def _body(value: Any) -> bytes:
    """JSON as a careless client writes it: NaN and Infinity included, surrogates escaped."""
    return json.dumps(value, allow_nan=True).encode()


def _gradio(t: Target, api: str, data: Any, content_type: str, raw: bytes | None) -> str:
    """POST the call, then read its result stream; returns what the stream said."""
    body = raw if raw is not None else _body({"data": data})
    posted = t.http.post(f"/agent/gradio_api/call/{api}", content=body,
                         headers={"content-type": content_type})
    assert posted.status_code < 500, (api, posted.status_code, posted.text[:300])
    if posted.status_code != 200:
        return posted.text
    event_id = posted.json()["event_id"]
    result = t.http.get(f"/agent/gradio_api/call/{api}/{event_id}")
    assert result.status_code < 500, (api, result.text[:300])
    return result.text


def _identity(t: Target, choice: int, value: Any) -> list[Any]:
    """Mostly a real identity and conversation, so cases reach past the checks."""
    if choice == 0:
        return [t.conv_id, t.user_id, t.token]
    if choice == 1:
        return [value, t.user_id, t.token]
    return [t.conv_id, value, value]


_GRADIO_ARGS = {
    "agent_handler": lambda ident, v: [v[0], v[1], ident[0], ident[1], ident[2], v[2], v[3]],
    "confirm_tool": lambda ident, v: [*ident, v[0], v[1]],
    "retry_tool": lambda ident, v: [*ident, v[0]],
    "side_question_submit": lambda ident, v: [*ident, v[0], v[1]],
    "side_question_history": lambda ident, v: [*ident, v[0]],
    "side_question_cancel": lambda ident, v: [*ident, v[0]],
    "side_question_clear": lambda ident, v: ident,
}


@seed(20261201)
@settings(max_examples=EXAMPLES["gradio"], deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(api=st.sampled_from(sorted(_GRADIO_ARGS)), values=st.lists(_VALUE, min_size=4,
                                                                  max_size=4),
       who=st.integers(0, 2), shape=st.integers(0, 9),
       content_type=st.sampled_from(_CONTENT_TYPES))
def _gradio_battery(t: Target, api: str, values: list[Any], who: int, shape: int,
                    content_type: str) -> None:
    args = _GRADIO_ARGS[api](_identity(t, who, values[0]), values)
    raw = None
    if shape == 0:
        raw = b'{"data": ["\xff\xfe not utf-8"]}'
    elif shape == 1:
        raw = _body(values[0])  # not {"data": [...]} at all
    elif shape == 2:
        args = args[:1]  # too few values
    said = _gradio(t, api, args, content_type if shape < 5 else "application/json", raw)
    assert "Internal error" not in said and "codec" not in said, (api, said[-300:])


def test_gradio_endpoints_survive_hostile_values(target: Target,
                                                 capfd: pytest.CaptureFixture[str]) -> None:
    _gradio_battery(target)
    printed = "".join(capfd.readouterr())
    assert "Traceback" not in printed, printed[-3000:]


_REST = [("GET", "/api/conversations/{conv}/side-questions"),
         ("POST", "/api/conversations/{conv}/side-questions"),
         ("DELETE", "/api/conversations/{conv}/side-questions"),
         ("POST", "/api/side-questions/{req}/cancel"),
         ("GET", "/api/audit"), ("GET", "/api/me")]


@seed(20261202)
@settings(max_examples=EXAMPLES["rest"], deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(route=st.sampled_from(_REST), body=_VALUE, path=_TEXT, owned=st.booleans(),
       token=st.sampled_from(["own", "none", "garbage", "latin"]),
       content_type=st.sampled_from(_CONTENT_TYPES), query=_TEXT)
def _rest_battery(t: Target, route: tuple[str, str], body: Any, path: str, owned: bool,
                  token: str, content_type: str, query: str) -> None:
    method, template = route
    # Percent-encoded raw bytes: a surrogate arrives as invalid UTF-8, as a hostile client
    # would send it.
    part = t.conv_id if owned else (quote(path.encode("utf-8", "surrogatepass"), safe="")
                                    or "x")
    raw = quote(query.encode("utf-8", "surrogatepass"), safe="")
    url = template.format(conv=part, req=part) + f"?before={raw}&limit={raw}"
    headers = {"content-type": content_type,
               **{"own": auth(t.token), "none": {}, "garbage": auth("a.b.c"),
                  "latin": {"authorization": "Bearer \u00ff\u00e9"}}[token]}
    encoded = {k: v.encode("latin-1", "replace") for k, v in headers.items()}
    response = t.http.request(method, url, content=_body(body) if method != "GET" else None,
                              headers=encoded)
    assert response.status_code < 500, (method, url, response.text[:300])


def test_rest_routes_survive_hostile_values(target: Target,
                                            capfd: pytest.CaptureFixture[str]) -> None:
    _rest_battery(target)
    assert "Traceback" not in "".join(capfd.readouterr())


@seed(20261203)
@settings(max_examples=EXAMPLES["demo"], deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(body=_VALUE, content_type=st.sampled_from(_CONTENT_TYPES))
def _demo_battery(t: Target, body: Any, content_type: str) -> None:
    response = t.http.post("/api/demo/token", content=_body({"user": body}),
                           headers={"content-type": content_type})
    assert response.status_code < 500, response.text[:300]
    assert len(response.content) < 4096  # errors never echo what was sent


def test_demo_tokens_survive_hostile_values(target: Target) -> None:
    _demo_battery(target)
    assert sum(EXAMPLES.values()) >= 1000
