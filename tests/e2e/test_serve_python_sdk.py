"""The official Python SDK's experimental remote transports (`agent-client-protocol`
0.12: `acp.ws.create_websocket_stream`, `acp.http.create_http_stream`) against
`adk-acp serve`, with the bearer token."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from acp import connect_to_agent, schema
from acp.http import create_http_stream
from acp.ws import create_websocket_stream

from tests.e2e.remote_client import TOKEN, bearer, start_serve
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

# Each starts a real `adk-acp serve` (seconds on a busy machine) and drives turns through it.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


class RemoteSdkClient:
    """A client as the SDK's users write it, with nothing local to offer."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.permissions = 0

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[schema.PermissionOption], **_: Any
    ) -> schema.RequestPermissionResponse:
        self.permissions += 1
        allow = next(o for o in options if o.kind == "allow_once")
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=allow.option_id)
        )

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if isinstance(update, schema.AgentMessageChunk) and isinstance(
            update.content, schema.TextContentBlock
        ):
            self.texts.append(update.content.text)


@pytest.mark.parametrize("kind", ["ws", "http"])
async def test_the_python_sdk_client_over_each_remote_transport(
    kind: str, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    fake_gemini.add(
        text_response(["Hello ", "Python"]),
        function_call_response("write_file", {"file_path": str(ws / "p.txt"), "content": "py\n"}),
        text_response("Wrote it."),
    )
    served = await start_serve(tmp_path / "home", fake_gemini.base_url)
    http = httpx.AsyncClient(timeout=httpx.Timeout(60, read=None))
    try:
        if kind == "ws":
            transport = await create_websocket_stream(served.ws_url, headers=bearer(TOKEN))
        else:
            transport = create_http_stream(served.http_url, client=http, headers=bearer(TOKEN))
        client = RemoteSdkClient()
        conn = connect_to_agent(client, transport)
        init = await conn.initialize(protocol_version=1)
        assert init.agent_capabilities is not None and init.agent_capabilities.load_session
        session = await conn.new_session(cwd=str(ws), mcp_servers=[])
        for text in ("say hello", "write a file"):
            block = schema.TextContentBlock(type="text", text=text)
            answer = await conn.prompt(session_id=session.session_id, prompt=[block])
            assert answer.stop_reason == "end_turn"
        assert "".join(client.texts) == "Hello PythonWrote it."
        assert client.permissions == 1
        assert (ws / "p.txt").read_text() == "py\n"
        await conn.close()
    finally:
        await http.aclose()
        assert await served.stop() == 0, served.log()
