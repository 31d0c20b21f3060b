"""Schemathesis fuzzing of the REST API from its own OpenAPI document, against a real app
server on SQLite and PostgreSQL: valid and invalid inputs never cause a 5xx anywhere under
/api, and side-question responses match their documented status codes, types and schemas.

Bounded: a fixed number of examples per operation and mode, no deadline, no example database.
Half the cases target a conversation the caller owns (with a snapshot), so the fuzzer reaches
past the ownership check into validation, submission, clear and cancel.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.web.conftest import LiveServer
from tests.web.side_support import auth, clone_parent, run_main_turn, seed_history

EXAMPLES = 40
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


@dataclass
class Target:
    server: LiveServer
    parent: str  # owned by the caller, with a snapshot
    request_id: str  # a completed side question of that parent
    token: str


@pytest.fixture(scope="module")
def fuzz_target(live_server: LiveServer) -> Iterator[Target]:
    user_id, token = live_server.token("viewer")
    run_main_turn(live_server, "fuzz-main", user_id, token)
    parent = clone_parent(live_server, "fuzz-main", user_id)
    seed_history(live_server, parent, 3)
    page = httpx.get(f"{live_server.url}/api/conversations/{parent}/side-questions",
                     headers=auth(token), timeout=30).json()
    yield Target(live_server, parent, page["items"][0]["id"], token)


def _operations(url: str) -> list[Any]:
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    # The events stream of the owned (completed) request ends after one event; unknown ids
    # answer 404 at once, so no generated case leaves a stream open.
    return [op for op in operations if op.path.startswith("/api")]


def _ours(path: str) -> bool:
    """Side-question routes document every status; the others are checked for 5xx only."""
    return "side-questions" in path


def _fuzz(operation: Any, mode: schemathesis.GenerationMode, target: Target) -> None:
    server = target.server
    @given(case=operation.as_strategy(generation_mode=mode), owned=st.booleans(),
           authed=st.booleans())
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def run(case: Any, owned: bool, authed: bool) -> None:
        parameters = case.path_parameters or {}
        if owned and "conv_id" in parameters:
            parameters["conv_id"] = target.parent
        if owned and "request_id" in parameters:
            parameters["request_id"] = target.request_id
        if authed:  # else whatever the fuzzer made up (often a bogus bearer token)
            case.headers = {**(case.headers or {}), **auth(target.token)}
        headers: dict[str, str] = {}
        if mode is schemathesis.GenerationMode.NEGATIVE or not _ours(operation.path):
            response = case.call(base_url=server.url, headers=headers, timeout=30)
            assert response.status_code < 500, (case.as_curl_command(), response.text)
        else:
            case.call_and_validate(base_url=server.url, headers=headers, checks=CHECKS,
                                   timeout=30)

    try:
        run()
    except Unsatisfiable:  # nothing to make invalid (e.g. GET /api/health)
        assert mode is schemathesis.GenerationMode.NEGATIVE and not _ours(operation.path)


@pytest.mark.parametrize("mode", [schemathesis.GenerationMode.POSITIVE,
                                  schemathesis.GenerationMode.NEGATIVE])
def test_rest_api_has_no_server_errors(fuzz_target: Target,
                                       mode: schemathesis.GenerationMode) -> None:
    operations = _operations(fuzz_target.server.url)
    paths = {op.path for op in operations}
    assert "/api/conversations/{conv_id}/side-questions" in paths
    assert "/api/side-questions/{request_id}/cancel" in paths
    assert "/api/side-questions/{request_id}/events" in paths
    for operation in operations:
        _fuzz(operation, mode, fuzz_target)
