"""`SessionChannel`: fan-out of updates with cursors, questions to every client with
the first answer winning, questions waiting for a client to attach."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from pygls.exceptions import JsonRpcException

from acp_server.remote.channel import SessionChannel, only_to
from acp_server.transport import JsonRpcConnection


class Client:
    """A client's connection: what it was sent, and its requests left for the test."""

    def __init__(self) -> None:
        self.notes: list[tuple[str, Any]] = []
        self.asked: dict[str, asyncio.Future[Any]] = {}
        self.arrived = asyncio.Event()

    def notify(self, method: str, params: Any) -> None:
        self.notes.append((method, params))

    async def request(self, method: str, params: Any, msg_id: str | None = None) -> Any:
        assert msg_id is not None
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.asked[msg_id] = future
        self.arrived.set()
        return await future


def conn(client: Client) -> JsonRpcConnection:
    return cast(JsonRpcConnection, client)


def update(text: str) -> dict[str, Any]:
    return {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "text": text}}


async def test_updates_go_to_every_client_with_a_cursor_and_a_late_client_can_catch_up() -> None:
    channel = SessionChannel("s", permission_timeout_s=5)
    first, second = Client(), Client()
    channel.attach(conn(first))
    channel.notify("session/update", update("a"))
    channel.attach(conn(second))
    channel.notify("session/update", update("b"))
    cursors = [p["_meta"]["adkAcp"]["cursor"] for _, p in first.notes]
    assert channel.opened <= cursors[0] < cursors[1] == channel.cursor  # microseconds, increasing
    assert [p["update"]["text"] for _, p in second.notes] == ["b"]
    late = Client()
    assert channel.replay_since(conn(late), 0) == 2
    assert [p["update"]["text"] for _, p in late.notes] == ["a", "b"]
    assert channel.replay_since(conn(late), cursors[0]) == 1


async def test_only_to_sends_to_one_client_and_logs_nothing() -> None:
    channel = SessionChannel("s", permission_timeout_s=5)
    first, second = Client(), Client()
    channel.attach(conn(first))
    channel.attach(conn(second))
    with only_to(conn(second)):
        channel.notify("session/update", update("replayed"))
    assert first.notes == [] and len(second.notes) == 1
    assert channel.cursor == channel.opened - 1


async def test_the_first_answer_wins_and_the_others_are_cancelled() -> None:
    channel = SessionChannel("s", permission_timeout_s=5)
    first, second = Client(), Client()
    channel.attach(conn(first))
    channel.attach(conn(second))
    asking = asyncio.ensure_future(channel.request("session/request_permission", {"q": 1}))
    await first.arrived.wait()
    await second.arrived.wait()
    (second_id,) = second.asked
    second.asked[second_id].set_result({"outcome": "yes"})
    assert await asking == {"outcome": "yes"}
    (first_id,) = first.asked
    assert ("$/cancel_request", {"requestId": first_id}) in first.notes
    assert ("$/cancel_request", {"requestId": second_id}) not in second.notes


async def test_a_question_waits_for_a_client_and_is_asked_of_it_when_it_attaches() -> None:
    channel = SessionChannel("s", permission_timeout_s=30)
    gone = Client()
    channel.attach(conn(gone))
    asking = asyncio.ensure_future(channel.request("session/request_permission", {}))
    await gone.arrived.wait()
    channel.detach(conn(gone))
    back = Client()
    channel.attach(conn(back))
    await back.arrived.wait()
    (msg_id,) = back.asked
    back.asked[msg_id].set_result({"ok": True})
    assert await asking == {"ok": True}


async def test_a_question_with_no_client_fails_after_the_timeout() -> None:
    channel = SessionChannel("s", permission_timeout_s=0.05)
    with pytest.raises(JsonRpcException, match="no client was attached"):
        await channel.request("session/request_permission", {})


async def test_an_error_answer_is_an_answer() -> None:
    channel = SessionChannel("s", permission_timeout_s=5)
    client = Client()
    channel.attach(conn(client))
    asking = asyncio.ensure_future(channel.request("session/request_permission", {}))
    await client.arrived.wait()
    (msg_id,) = client.asked
    client.asked[msg_id].set_exception(JsonRpcException(code=-32603, message="no"))
    with pytest.raises(JsonRpcException):
        await asking


async def test_each_client_gets_the_form_it_opted_in_to_live_replayed_and_in_a_load() -> None:
    from acp_server.updates import ClientUpdates, notice_updates

    channel = SessionChannel("s", permission_timeout_s=5)
    opted, plain = Client(), Client()
    channel.attach(conn(opted), ClientUpdates.every())
    channel.attach(conn(plain), ClientUpdates())
    [notice] = notice_updates("info", "Retrying.", ClientUpdates.every())
    channel.notify("session/update", {"sessionId": "s", "update": notice})
    channel.notify("session/update", {"sessionId": "kid", "update": notice})  # a subagent's

    def kinds(client: Client) -> list[tuple[str, str]]:
        return [(p["sessionId"], p["update"]["sessionUpdate"]) for _, p in client.notes]

    assert kinds(opted) == [("s", "notice"), ("kid", "notice")]
    assert kinds(plain) == [("s", "agent_message_chunk")]
    assert plain.notes[0][1]["update"]["content"]["text"] == "\n\nRetrying.\n\n"
    cursor = opted.notes[0][1]["_meta"]["adkAcp"]["cursor"]
    assert plain.notes[0][1]["_meta"]["adkAcp"]["cursor"] == cursor  # one numbering
    back = Client()
    channel.attach(conn(back), ClientUpdates())
    assert channel.replay_since(conn(back), 0) == 1
    assert kinds(back) == [("s", "agent_message_chunk")]
    with only_to(conn(plain)):
        channel.notify("session/update", {"sessionId": "s", "update": notice})
    assert kinds(plain)[-1] == ("s", "agent_message_chunk") and len(opted.notes) == 2


async def test_a_subagents_question_is_asked_in_the_session_of_a_client_not_following_them() -> (
    None
):
    from acp_server.updates import ClientUpdates

    class Asked(Client):
        async def request(self, method: str, params: Any, msg_id: str | None = None) -> Any:
            self.notes.append((method, params))
            return await super().request(method, params, msg_id)

    channel = SessionChannel("s", permission_timeout_s=5)
    follows, plain = Asked(), Asked()
    channel.attach(conn(follows), ClientUpdates(subagents=True))
    channel.attach(conn(plain), ClientUpdates())
    asking = asyncio.ensure_future(
        channel.request("session/request_permission", {"sessionId": "kid", "options": []})
    )
    await follows.arrived.wait()
    await plain.arrived.wait()
    (follows_id,) = follows.asked
    follows.asked[follows_id].set_result({"ok": True})
    assert await asking == {"ok": True}
    assert follows.notes[0][1]["sessionId"] == "kid"
    assert plain.notes[0][1] == {"sessionId": "s", "options": []}


async def test_a_form_is_asked_only_when_every_client_takes_forms() -> None:
    """The fallback model's form (`elicitation/create`): refused at once when a follower
    can't answer it (the asker then asks a permission request, which all answer); a
    client without forms attaching while one is asked is not asked it."""
    from acp_server.updates import ClientUpdates

    channel = SessionChannel("s", permission_timeout_s=5)
    forms, plain = Client(), Client()
    channel.attach(conn(forms), ClientUpdates(forms=True))
    channel.attach(conn(plain), ClientUpdates())
    with pytest.raises(JsonRpcException, match="does not take forms") as refused:
        await channel.request("elicitation/create", {"sessionId": "s"})
    assert refused.value.code == -32601
    assert forms.asked == {} and plain.asked == {}

    channel.detach(conn(plain))
    asking = asyncio.ensure_future(channel.request("elicitation/create", {"sessionId": "s"}))
    await forms.arrived.wait()
    late = Client()
    channel.attach(conn(late), ClientUpdates())
    assert late.asked == {}
    (msg_id,) = forms.asked
    forms.asked[msg_id].set_result({"action": "accept", "content": {"choice": "retry_once"}})
    assert (await asking)["action"] == "accept"
