"""The conversation list through `gradio_client`, as programs use it: list, rename, delete
and reopen; another person's conversations are never listed, renamed, deleted or opened
(issue 11, item 3)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gradio_client import Client

from tests.fakes.gradio_api import api_client
from tests.web.conftest import LiveServer, sqlite_server


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from sqlite_server(tmp_path_factory)


def _turn(client: Client, message: str, conv_id: str, user_id: str, token: str) -> str:
    _, events = client.predict(message, None, conv_id, user_id, token, "ss-dev", None,
                               api_name="/agent_handler")
    return events[0]["conv_id"]


def test_list_rename_reopen_and_delete(live_server: LiveServer) -> None:
    client = api_client(live_server.agent_url)
    me, my_token = live_server.token("editor")
    other, other_token = live_server.token("editor")  # another visitor: another person
    first = _turn(client, "what can you do?", "", me, my_token)
    second = _turn(client, "list the dashboards", "", me, my_token)
    theirs = _turn(client, "which environments are there?", "", other, other_token)

    page = client.predict(me, my_token, "", "", api_name="/list_conversations")
    assert [item["id"] for item in page["items"]] == [second, first]
    assert page["items"][0]["title"] == "list the dashboards"
    assert page["next_cursor"] is None
    assert theirs not in {item["id"] for item in page["items"]}

    renamed = client.predict(first, me, my_token, "Capabilities",
                             api_name="/rename_conversation")
    assert renamed["title"] == "Capabilities"
    found = client.predict(me, my_token, "capab", "", api_name="/list_conversations")
    assert [item["id"] for item in found["items"]] == [first]

    reopened = client.predict(first, me, my_token, api_name="/conversation_history")
    assert [m["role"] for m in reopened["messages"]][:1] == ["user"]
    assert reopened["messages"][0]["content"] == "what can you do?"

    assert client.predict(second, me, my_token, api_name="/delete_conversation") == {
        "deleted": second}
    page = client.predict(me, my_token, "", "", api_name="/list_conversations")
    assert [item["id"] for item in page["items"]] == [first]


@pytest.mark.parametrize("endpoint, args", [
    ("/conversation_history", ()),
    ("/rename_conversation", ("mine now",)),
    ("/delete_conversation", ()),
])
def test_another_persons_conversation_is_never_reachable(
        live_server: LiveServer, endpoint: str, args: tuple[str, ...]) -> None:
    client = api_client(live_server.agent_url)
    owner, owner_token = live_server.token("editor")
    intruder, intruder_token = live_server.token("admin")
    conv_id = _turn(client, "what can you do?", "", owner, owner_token)

    with pytest.raises(Exception, match="Conversation not found"):
        client.predict(conv_id, intruder, intruder_token, *args, api_name=endpoint)
    listed = client.predict(intruder, intruder_token, "", "", api_name="/list_conversations")
    assert conv_id not in {item["id"] for item in listed["items"]}
    still = client.predict(conv_id, owner, owner_token, api_name="/conversation_history")
    assert still["messages"][0]["content"] == "what can you do?"
    titles = client.predict(owner, owner_token, "", "", api_name="/list_conversations")
    assert "mine now" not in {item["title"] for item in titles["items"]}


def test_bad_input_is_a_clear_error(live_server: LiveServer) -> None:
    client = api_client(live_server.agent_url)
    me, token = live_server.token("viewer")
    with pytest.raises(Exception, match="cursor is not valid"):
        client.predict(me, token, "", "garbage", api_name="/list_conversations")
    conv_id = _turn(client, "what can you do?", "", me, token)
    with pytest.raises(Exception, match="A title needs"):
        client.predict(conv_id, me, token, "   ", api_name="/rename_conversation")
