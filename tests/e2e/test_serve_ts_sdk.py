"""The official TypeScript SDK's experimental remote transports (`@agentclientprotocol/sdk`
2.4: `experimental/ws-client`, `experimental/http-client`) against `adk-acp serve`.

Node's WebSocket cannot send headers, so the WebSocket run is on `--insecure-loopback`
(no token); the HTTP run sends the bearer token."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.node_clients import node_clients
from tests.e2e.remote_client import TOKEN, start_serve
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

# Each starts a real `adk-acp serve` (seconds on a busy machine) and drives turns through it.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

SCRIPT = Path(__file__).parent / "clients" / "ts_remote.mjs"


@pytest.mark.parametrize("kind", ["ws", "http"])
async def test_the_typescript_sdk_client_over_each_remote_transport(
    kind: str, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    clients = node_clients()
    script = clients.root / SCRIPT.name  # next to the SDK it imports
    shutil.copyfile(SCRIPT, script)
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    fake_gemini.add(
        text_response(["Hello ", "TypeScript"]),
        function_call_response("write_file", {"file_path": str(ws / "t.txt"), "content": "ts\n"}),
        text_response("Wrote it."),
    )
    token_args = ("--insecure-loopback",) if kind == "ws" else ("--token", TOKEN)
    served = await start_serve(tmp_path / "home", fake_gemini.base_url, *token_args)
    report = tmp_path / "report.json"
    try:
        url = served.ws_url if kind == "ws" else served.http_url
        process = await asyncio.create_subprocess_exec(
            str(clients.node),
            str(script),
            kind,
            url,
            "-" if kind == "ws" else TOKEN,
            str(ws),
            str(report),
            cwd=str(clients.root),
        )
        assert await asyncio.wait_for(process.wait(), 120) == 0
    finally:
        assert await served.stop() == 0, served.log()
    result = json.loads(report.read_text())
    assert "error" not in result, result["error"]
    assert result["loadSession"] is True
    assert result["stops"] == ["end_turn", "end_turn"]
    assert result["texts"] == ["Hello TypeScript", "Wrote it."]
    assert result["permissions"] == 1
    assert (ws / "t.txt").read_text() == "ts\n"
