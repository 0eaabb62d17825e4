"""`adk-acp serve` answers only its own clients (issue 38): a request carrying a browser's
`Origin`, or a `Host` that does not name the server (what a DNS-rebinding page sends),
is refused before any upgrade or JSON-RPC handling, on WebSocket and HTTP, with a token
or without; clients that send no Origin (ours, the SDKs, `connect`) keep working.
Real Chromium pages are in `test_serve_browser.py`."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path

import httpx
import pytest

from tests.e2e.acp_client import AGENT_COMMAND
from tests.e2e.remote_client import TOKEN, Served, bearer, remote, serve_env, start_serve

# Each starts a real `adk-acp serve` (seconds on a busy machine).
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

NO_MODEL = "http://127.0.0.1:9"
"""A model address never called: opening sessions needs a key, not a model."""
EVIL = "http://evil.example"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


async def _ws_status(served: Served, token: str | None, **headers: str) -> int:
    """The status a WebSocket upgrade with these headers gets (101 when accepted), sent
    by hand: a client library adds a Host of its own."""
    fields = {
        "Host": f"{served.host}:{served.port}",
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
        "Sec-WebSocket-Version": "13",
        **bearer(token),
        **headers,
    }
    reader, writer = await asyncio.open_connection(served.host, served.port)
    try:
        head = "".join(f"{name}: {value}\r\n" for name, value in fields.items())
        writer.write(f"GET /acp HTTP/1.1\r\n{head}\r\n".encode())
        status_line = await asyncio.wait_for(reader.readline(), 30)
    finally:
        writer.close()
    return int(status_line.split()[1])


async def _post_status(served: Served, token: str | None, **headers: str) -> tuple[int, str]:
    async with httpx.AsyncClient() as http:
        answer = await http.post(
            served.http_url, headers={**bearer(token), **headers}, json=INITIALIZE
        )
    return answer.status_code, answer.text


async def _sessions(served: Served, token: str | None, cwd: Path) -> list[object]:
    async with remote("ws", served, token) as client:
        listed = await client.request("session/list", {"cwd": str(cwd)})
    sessions = listed["sessions"]
    assert isinstance(sessions, list)
    return sessions


@pytest.mark.parametrize("token", [None, TOKEN], ids=["insecure-loopback", "token"])
async def test_browser_origins_and_foreign_hosts_never_reach_the_agent(
    token: str | None, tmp_path: Path
) -> None:
    args = ("--insecure-loopback",) if token is None else ()
    served = await start_serve(tmp_path / "home", NO_MODEL, *args)
    port = served.port
    try:
        for headers in (
            {"Origin": EVIL},
            {"Origin": "null"},
            {"Origin": f"http://127.0.0.1:{port}"},  # even a page of the same address
            {"Origin": EVIL, "Host": "evil.example"},
        ):
            assert await _ws_status(served, token, **headers) == 403, headers
            status, body = await _post_status(served, token, **headers)
            assert status == 403 and "origin" in body, (status, body)
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}"):
            # DNS rebinding: the page's own name, resolved to 127.0.0.1
            assert await _ws_status(served, token, Host=host) == 421, host
            assert (await _post_status(served, token, Host=host))[0] == 421, host
        assert (await _post_status(served, token, **{"Sec-Fetch-Site": "cross-site"}))[0] == 403
        # the connection's other requests: its SSE stream and its end
        async with httpx.AsyncClient() as http:
            for method in ("GET", "DELETE", "OPTIONS"):
                answer = await http.request(
                    method, served.http_url,
                    headers={**bearer(token), "Origin": EVIL, "Accept": "text/event-stream",
                             "Acp-Connection-Id": "x"},
                )  # fmt: skip
                assert answer.status_code == 403, method
            health = await http.get(
                served.http_url.replace("/acp", "/healthz"),
                headers={"Origin": EVIL, "Host": "evil.example"},
            )
            assert (health.status_code, health.text) == (200, "ok")
        # the agent's own clients still get in, and nobody opened a session
        assert await _ws_status(served, token) == 101
        assert await _ws_status(served, token, Host=f"localhost:{port}") == 101
        assert await _ws_status(served, token, Host=f"[::1]:{port}") == 101
        assert (await _post_status(served, token))[0] == 200
        assert await _sessions(served, token, tmp_path) == []
    finally:
        assert await served.stop() == 0, served.log()
    assert f"refused a browser request from origin '{EVIL}'" in served.log()
    assert "does not name this server" in served.log()


async def test_allowed_origins_and_public_hosts_are_answered(tmp_path: Path) -> None:
    served = await start_serve(
        tmp_path / "home", NO_MODEL,
        "--allow-origin", "http://localhost:3000", "--public-host", "acp.team.example",
        ADK_ACP_PUBLIC_HOST="proxy.example:8443,other.example",
    )  # fmt: skip
    try:
        assert await _ws_status(served, TOKEN, Origin="http://localhost:3000") == 101
        assert await _ws_status(served, TOKEN, Origin="http://localhost:3001") == 403
        assert await _ws_status(served, TOKEN, Host="acp.team.example") == 101
        assert await _ws_status(served, TOKEN, Host="other.example:443") == 101
        assert (await _post_status(served, TOKEN, Host="proxy.example:8443"))[0] == 200
        assert (await _post_status(served, TOKEN, Host="proxy.example"))[0] == 421
        # an allowed origin still needs its token
        assert await _ws_status(served, None, Origin="http://localhost:3000") == 401
    finally:
        assert await served.stop() == 0, served.log()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--allow-origin", "http://a.example/path"), "not an origin"),
        (("--allow-origin", "*"), "not an origin"),
        (("--public-host", "a.example/x"), "not a host name"),
    ],
)
async def test_unusable_gate_options_stop_the_start(
    args: tuple[str, ...], says: str, tmp_path: Path
) -> None:
    process = await asyncio.create_subprocess_exec(
        *AGENT_COMMAND, "serve", "--port", "0", "--token", TOKEN, *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, env=serve_env(tmp_path, None),
    )  # fmt: skip
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2 and says in err.decode(), err.decode()
