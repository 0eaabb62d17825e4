"""`adk-acp serve` is secure by default (issue 24): no start without a token off
loopback, wrong, missing and replayed tokens refused, tokens limited to workspace
roots, size and connection limits, slow-loris connections cut."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.e2e.acp_client import AGENT_COMMAND
from tests.e2e.remote_client import (
    TOKEN,
    RemoteAcp,
    RemoteError,
    Served,
    bearer,
    remote,
    serve_env,
    start_serve,
)

# Each starts a real `adk-acp serve` (seconds on a busy machine) and drives turns through it.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

OTHER = "another-token-abcdefghijklmnop"
NO_MODEL = "http://127.0.0.1:9"
"""A model address never called: opening sessions needs a key, not a model."""


async def _exit_of(tmp_path: Path, *args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *AGENT_COMMAND,
        "serve",
        "--port",
        "0",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=serve_env(tmp_path, None),
    )
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, err.decode()


async def test_it_refuses_to_start_without_a_token(tmp_path: Path) -> None:
    code, err = await _exit_of(tmp_path)
    assert code == 2 and "refusing to serve without a token" in err
    code, err = await _exit_of(tmp_path, "--host", "0.0.0.0", "--insecure-loopback")
    assert code == 2 and "needs a loopback address" in err


async def test_the_token_is_never_logged(tmp_path: Path) -> None:
    served = await start_serve(tmp_path / "home", None, "--log-level", "DEBUG")
    try:
        with pytest.raises(InvalidStatus):
            await connect(served.ws_url, additional_headers=bearer(TOKEN[:-1] + "x"))
        async with remote("ws", served):
            pass
        async with httpx.AsyncClient() as http:  # the health check needs no token
            health = await http.get(served.http_url.replace("/acp", "/healthz"))
            assert (health.status_code, health.text) == (200, "ok")
    finally:
        await served.stop()
    assert TOKEN not in served.log() and TOKEN[:-1] not in served.log()


@pytest.fixture
async def token_file_server(tmp_path: Path) -> AsyncIterator[tuple[Served, Path]]:
    tokens = tmp_path / "tokens"
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    tokens.write_text(f"# team tokens\n{TOKEN}\n{OTHER} {allowed}\n")
    served = await start_serve(
        tmp_path / "home",
        NO_MODEL,
        "--token-file",
        str(tokens),
        "--max-message-bytes",
        "65536",
        "--max-connections",
        "3",
        "--header-timeout",
        "1",
    )
    yield served, tokens
    assert await served.stop() == 0, served.log()


async def test_wrong_missing_and_replayed_tokens_are_refused(
    token_file_server: tuple[Served, Path],
) -> None:
    served, tokens = token_file_server
    for token in (None, "wrong-token-0123456789abcdef", TOKEN + "x"):
        with pytest.raises(InvalidStatus) as refused:
            await connect(served.ws_url, additional_headers=bearer(token))
        assert refused.value.response.status_code == 401
        with pytest.raises(RemoteError) as http_refused:
            await RemoteAcp.http(served.http_url, token)
        assert http_refused.value.code == 401
    async with httpx.AsyncClient() as http:
        not_bearer = await http.post(
            served.http_url,
            headers={"Authorization": f"Basic {TOKEN}"},
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        )
        assert not_bearer.status_code == 401
    async with remote("http", served) as client:
        # the connection id replayed with another (valid) token is not this token's
        assert client.connection_id is not None
        async with httpx.AsyncClient() as http:
            stolen = await http.post(
                served.http_url,
                headers={**bearer(OTHER), "Acp-Connection-Id": client.connection_id},
                json={"jsonrpc": "2.0", "id": 9, "method": "session/list", "params": {}},
            )
            assert stolen.status_code == 404
    # a token taken out of the token file is refused from then on (replayed after rotation)
    tokens.write_text(f"{OTHER}\n")
    with pytest.raises(InvalidStatus) as rotated:
        await connect(served.ws_url, additional_headers=bearer(TOKEN))
    assert rotated.value.response.status_code == 401
    async with remote("ws", served, OTHER):
        pass


async def test_a_token_limited_to_roots_sees_only_sessions_inside_them(
    token_file_server: tuple[Served, Path], tmp_path: Path
) -> None:
    served, _ = token_file_server
    outside = tmp_path / "outside"
    outside.mkdir()
    inside = tmp_path / "allowed" / "project"
    inside.mkdir()
    async with remote("ws", served) as admin, remote("ws", served, OTHER) as limited:
        secret = await admin.new_session(outside)
        with pytest.raises(RemoteError) as refused:
            await limited.new_session(outside)
        assert refused.value.code == -32602 and "outside the workspace roots" in str(
            refused.value.message
        )
        with pytest.raises(RemoteError) as hidden:
            await limited.request(
                "session/resume", {"sessionId": secret, "cwd": str(outside), "mcpServers": []}
            )
        assert hidden.value.code == -32602
        with pytest.raises(RemoteError) as unseen:
            await limited.request("session/set_mode", {"sessionId": secret, "modeId": "plan"})
        assert unseen.value.code == -32002
        with pytest.raises(RemoteError) as not_its_record:
            await limited.request("session/delete", {"sessionId": secret})
        assert not_its_record.value.code == -32002
        with pytest.raises(RemoteError) as unlisted:
            await limited.request("session/list", {})
        assert unlisted.value.code == -32602
        with pytest.raises(RemoteError) as elsewhere:
            await limited.request("session/list", {"cwd": str(outside)})
        assert elsewhere.value.code == -32602
        own = await limited.new_session(inside)
        listed = await limited.request("session/list", {"cwd": str(inside)})
        assert [s["sessionId"] for s in listed["sessions"]] in ([], [own])


async def test_oversized_frames_and_bodies_are_refused(
    token_file_server: tuple[Served, Path],
) -> None:
    served, _ = token_file_server
    big = {"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {"x": "a" * 70000}}
    async with connect(served.ws_url, additional_headers=bearer(TOKEN), max_size=None) as ws:
        await ws.send(json.dumps(big))
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    async with httpx.AsyncClient() as http:
        response = await http.post(served.http_url, headers=bearer(TOKEN), json=big)
        assert response.status_code == 413
    async with remote("ws", served) as client:  # the server keeps serving
        assert (await client.request("session/list", {}))["sessions"] == []


async def test_connections_over_the_limit_get_503(
    token_file_server: tuple[Served, Path],
) -> None:
    served, _ = token_file_server
    async with remote("ws", served), remote("ws", served), remote("http", served):
        with pytest.raises(InvalidStatus) as full:
            await connect(served.ws_url, additional_headers=bearer(TOKEN))
        assert full.value.response.status_code == 503
    async with remote("ws", served):  # room again once they closed
        pass


async def test_a_slow_loris_connection_is_cut(token_file_server: tuple[Served, Path]) -> None:
    served, _ = token_file_server
    reader, writer = await asyncio.open_connection(served.host, served.port)
    writer.write(b"POST /acp HTTP/1.1\r\nHost: x\r\n")
    await writer.drain()
    closed = False
    for _ in range(60):  # one header line every half second, never finished
        try:
            writer.write(b"X-Trickle: 1\r\n")
            await writer.drain()
            data = await asyncio.wait_for(reader.read(1), 0.5)
        except TimeoutError:
            continue
        except ConnectionError:
            closed = True
            break
        if data == b"":
            closed = True
            break
    writer.close()
    assert closed, "the server kept a connection whose headers never ended"
    async with remote("ws", served):  # and keeps serving the others
        pass


async def test_help_names_the_serve_and_connect_options(tmp_path: Path) -> None:
    for command, flags in (
        ("serve", ("--token-file", "--insecure-loopback", "--permission-timeout",
                   "--max-connections", "--max-message-bytes", "--header-timeout", "--tls-cert",
                   "--allow-origin", "--public-host")),
        ("connect", ("--token-file", "--token", "ws://")),
    ):  # fmt: skip
        process = await asyncio.create_subprocess_exec(
            *AGENT_COMMAND, command, "--help",
            stdout=asyncio.subprocess.PIPE, env=serve_env(tmp_path, None),
        )  # fmt: skip
        out, _ = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0
        assert all(flag in out.decode() for flag in flags), out.decode()


async def test_repeated_stop_requests_do_not_cut_the_shutdown_short(tmp_path: Path) -> None:
    """An operator (or a supervisor) sending SIGTERM again while the server winds down
    gets a clean exit, not a kill that skips closing the sessions."""
    served = await start_serve(tmp_path / "home", NO_MODEL)
    async with remote("ws", served) as client:
        await client.new_session(tmp_path)
    for _ in range(100):  # one request every 50 ms until it has gone
        if served.process.returncode is not None:
            break
        served.process.send_signal(signal.SIGTERM)
        await asyncio.sleep(0.05)
    assert await asyncio.wait_for(served.process.wait(), 30) == 0, served.log()


async def test_a_revoked_token_closes_the_connections_it_opened(tmp_path: Path) -> None:
    """Taking a token out of the token file (or changing its roots) closes every open
    WebSocket and HTTP connection it opened, at once, not only new ones (issue 33.6);
    the other tokens' connections go on."""
    kept = "kept-token-0123456789abcdef"
    tokens = tmp_path / "tokens"
    roots = tmp_path / "roots"
    roots.mkdir()
    tokens.write_text(f"{TOKEN}\n{OTHER} {roots}\n{kept}\n")
    served = await start_serve(tmp_path / "home", NO_MODEL, "--token-file", str(tokens))
    try:
        async with (
            remote("ws", served, TOKEN) as revoked_ws,
            remote("http", served, TOKEN) as revoked_http,
            remote("ws", served, OTHER) as moved,
            remote("ws", served, kept) as other,
        ):
            session = await revoked_ws.new_session(tmp_path)
            tokens.write_text(f"{OTHER} {roots / 'elsewhere'}\n{kept}\n")
            for client in (revoked_ws, revoked_http, moved):
                await asyncio.wait_for(client.closed.wait(), 10)
            with pytest.raises((ConnectionError, ConnectionClosed)):
                await revoked_ws.request("session/list", {}, timeout=10)
            assert not other.closed.is_set()
            listed = await other.request("session/list", {"cwd": str(tmp_path)})
            assert [s["sessionId"] for s in listed["sessions"]] == [session]
    finally:
        assert await served.stop() == 0, served.log()
    assert "its token was revoked" in served.log()
    assert TOKEN not in served.log()
