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
