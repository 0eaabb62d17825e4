"""`adk-acp connect` (issue 24): our e2e client speaks stdio to the bridge, which
talks to a real `adk-acp serve` on loopback over WebSocket."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.acp_client import AGENT_COMMAND
from tests.e2e.remote_client import TOKEN, Served, remote, serve_env, start_serve
from tests.e2e.spine import MakeAgent
from tests.fakes.gemini_server import FakeGeminiServer, text_response

# Each starts a real `adk-acp serve` (seconds on a busy machine) and drives turns through it.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


@pytest.fixture
async def served(tmp_path: Path, fake_gemini: FakeGeminiServer) -> AsyncIterator[Served]:
    server = await start_serve(tmp_path / "home", fake_gemini.base_url)
    yield server
    assert await server.stop() == 0, server.log()


def bridge_env(tmp_path: Path, token: str) -> dict[str, str | None]:
    """The bridge's environment: the token only (no model, no key: it runs nothing)."""
    env: dict[str, str | None] = dict(serve_env(tmp_path / "client-home", None))
    env["ADK_ACP_TOKEN"] = token
    return env


async def test_an_editor_on_stdio_reaches_the_served_agent_through_connect(
    served: Served, fake_gemini: FakeGeminiServer, make_agent: MakeAgent, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_gemini.add(text_response(["Over ", "the bridge"]), text_response("Seen twice"))
    editor = await make_agent(
        [*AGENT_COMMAND, "connect", served.ws_url], bridge_env(tmp_path, TOKEN), cwd=tmp_path
    )
    init = await editor.initialize()
    assert init["agentCapabilities"]["loadSession"] is True
    session_id = (await editor.new_session(str(ws)))["sessionId"]
    assert await editor.prompt(session_id, "hello") == {"stopReason": "end_turn"}
    assert editor.text_of(session_id) == "Over the bridge"
    # a second client straight on the WebSocket follows the same session
    async with remote("ws", served) as watcher:
        await watcher.request(
            "session/load", {"sessionId": session_id, "cwd": str(ws), "mcpServers": []}
        )
        assert "Over the bridge" in watcher.text_of(session_id)
        assert await editor.prompt(session_id, "again") == {"stopReason": "end_turn"}
        await watcher.wait_until(lambda: "Seen twice" in watcher.text_of(session_id))


async def test_connect_with_a_wrong_token_says_so_and_exits_1(
    served: Served, tmp_path: Path
) -> None:
    process = await asyncio.create_subprocess_exec(
        *AGENT_COMMAND,
        "connect",
        served.ws_url,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={k: v for k, v in bridge_env(tmp_path, "wrong-token-0123456789").items() if v},
    )
    out, err = await asyncio.wait_for(process.communicate(b""), 60)
    assert process.returncode == 1
    assert out == b""
    assert b"refused the connection: HTTP 401" in err


async def test_connect_over_wss_to_a_server_with_its_own_certificate(
    fake_gemini: FakeGeminiServer, make_agent: MakeAgent, tmp_path: Path
) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed: no certificate to serve TLS with")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = await asyncio.create_subprocess_exec(
        openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
        "-addext", "subjectAltName=IP:127.0.0.1",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert await made.wait() == 0
    served = await start_serve(
        tmp_path / "home", fake_gemini.base_url, "--tls-cert", str(cert), "--tls-key", str(key)
    )
    try:
        fake_gemini.add(text_response("Encrypted"))
        env = bridge_env(tmp_path, TOKEN) | {"SSL_CERT_FILE": str(cert)}
        url = served.ws_url.replace("ws://", "wss://")
        editor = await make_agent([*AGENT_COMMAND, "connect", url], env, cwd=tmp_path)
        await editor.initialize()
        ws = tmp_path / "ws"
        ws.mkdir()
        session_id = (await editor.new_session(str(ws)))["sessionId"]
        assert await editor.prompt(session_id, "hello") == {"stopReason": "end_turn"}
        assert editor.text_of(session_id) == "Encrypted"
        await editor.close()
    finally:
        assert await served.stop() == 0, served.log()
