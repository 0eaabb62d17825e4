"""`HttpClient`: a Streamable HTTP connection's output split over its SSE streams, as
the RFD and the official SDKs route it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp_server.remote.clients import HttpClient
from acp_server.remote.hub import SessionHub
from acp_server.remote.tokens import OPEN_GRANT
from acp_server.state import ServerOptions


def _drain(client: HttpClient, session_id: str | None) -> list[dict[str, Any]]:
    box = client.stream(session_id)
    out = []
    while not box._queue.empty():
        data = box._queue.get_nowait()
        assert data is not None
        out.append(json.loads(data))
    return out


async def test_answers_and_updates_go_to_the_stream_of_their_session(tmp_path: Path) -> None:
    hub = SessionHub(ServerOptions(env={}, home=tmp_path), permission_timeout_s=5)
    client = HttpClient(hub, OPEN_GRANT, buffer_bytes=1 << 20)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    answer = await client.initialize(init, timeout=30)
    assert answer["id"] == 1 and "result" in answer
    assert _drain(client, None) == []  # the initialize answer is the POST's body only
    # before a session's stream is opened (a resume on a new connection), its messages
    # go to the connection's stream, where the SDKs look for them
    client._route(b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1"}}')
    assert [m["params"]["sessionId"] for m in _drain(client, None)] == ["s1"]
    client.stream("s1")  # the client opened s1's and s2's streams (GET with Acp-Session-Id)
    client.stream("s2")
    # a request posted for session s1 (answered at once: -32601) is answered on s1's stream
    client.post({"jsonrpc": "2.0", "id": 2, "method": "session/unknown", "params": {}}, "s1")
    client._route(b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s2"}}')
    client._route(b'{"jsonrpc":"2.0","id":"x","result":{}}')  # an answer to nothing known
    assert [(m["id"], m["error"]["code"]) for m in _drain(client, "s1")] == [(2, -32601)]
    assert [m["method"] for m in _drain(client, "s2")] == ["session/update"]
    assert [m["id"] for m in _drain(client, None)] == ["x"]
    await client.close()
    assert client.client.closed
