"""MCP over HTTP with OAuth (issue 19.6), through the real agent, against a loopback
authorization server + protected MCP server (`tests/fakes/mcp_oauth_server.py`): the
server's 401 starts discovery and registration; the authorization link is shown to the
user (the agent has no browser: the test follows it with an HTTP client, as a browser
would); tokens are kept owner-only under the state dir; a revoked access token is
refreshed, a revoked refresh token leads to a new authorization; a restarted agent
uses the stored tokens without asking."""

from __future__ import annotations

import asyncio
import re
import stat
from pathlib import Path

import httpx
import pytest

from tests.e2e.acp_client import AcpTestClient
from tests.e2e.test_mcp import commands_offered
from tests.e2e.test_mcp_settings import start
from tests.e2e.tools_harness import MakeAgent, function_responses, response_text, wait_until
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response
from tests.fakes.mcp_oauth_server import oauth_server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]  # two agents, each waiting on the user

ASKED = "MCP server 'secure' needs authorization: open "


async def follow_link(client: AcpTestClient, sid: str, nth: int) -> None:
    """Waits for the `nth` authorization link shown to the user and follows it, as the
    user's browser would (the authorization server redirects to the agent's listener)."""
    await wait_until(
        lambda: client.text_of(sid).count(ASKED) >= nth, 60, f"authorization link {nth}"
    )
    url = re.findall(re.escape(ASKED) + r"(\S+)", client.text_of(sid))[nth - 1]
    answer = await asyncio.to_thread(httpx.get, url, follow_redirects=True, timeout=30)
    assert answer.status_code == 200 and "Authorized" in answer.text


def grants(base: str) -> dict[str, int]:
    return dict(httpx.get(f"{base}/control/log", timeout=10).json())


async def echo(client: AcpTestClient, fake: FakeGeminiServer, sid: str, text: str) -> str:
    fake.add(function_call_response("mcp_secure_echo", {"text": text}), text_response("ok"))
    pending = client.start_prompt(sid, f"echo {text}")
    return await _answered(pending, fake)


async def _answered(pending: object, fake: FakeGeminiServer) -> str:
    assert await pending.result(90) == {"stopReason": "end_turn"}  # type: ignore[attr-defined]
    return response_text(function_responses(fake.generate_requests[-1])[0])


async def test_oauth_authorization_tokens_refresh_and_recovery_from_401(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    with oauth_server() as base:
        settings = {
            "mcpServers": {
                "secure": {
                    "httpUrl": f"{base}/mcp",
                    "oauth": {"enabled": True, "scopes": ["mcp:tools"]},
                    "trust": True,
                }
            }
        }
        env = {"XDG_STATE_HOME": str(state)}
        client, sid, workspace = await start(
            make_agent, tmp_path, fake_gemini, settings=settings, env=env
        )
        await follow_link(client, sid, 1)
        await commands_offered(client, sid, "secure:review")
        assert grants(base) == {"register": 1, "authorize": 1, "authorization_code": 1}

        assert await echo(client, fake_gemini, sid, "one") == "one"
        [stored] = (state / "adk-acp" / "mcp-oauth").iterdir()
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
        assert workspace not in stored.parents
        assert '"access_token"' in stored.read_text()

        # the access token stops working: a 401, answered by a refresh
        httpx.post(f"{base}/control/revoke-access", timeout=10)
        assert await echo(client, fake_gemini, sid, "two") == "two"
        assert grants(base)["refresh_token"] == 1
        assert grants(base)["authorize"] == 1

        # the refresh token too: the user is asked again, mid-call
        httpx.post(f"{base}/control/revoke-all", timeout=10)
        fake_gemini.add(
            function_call_response("mcp_secure_echo", {"text": "three"}), text_response("ok")
        )
        pending = client.start_prompt(sid, "echo three")
        await follow_link(client, sid, 2)
        assert await _answered(pending, fake_gemini) == "three"
        assert grants(base)["authorize"] == 2
        assert grants(base)["register"] == 1  # the registered client is kept
        assert "could not be" not in client.text_of(sid)
        await client.close()

        # a new agent: the stored tokens are used, nobody is asked
        (tmp_path / "second").mkdir()
        again, sid2, _ = await start(
            make_agent, tmp_path / "second", fake_gemini, settings=settings, env=env
        )
        await commands_offered(again, sid2, "secure:review")
        assert await echo(again, fake_gemini, sid2, "four") == "four"
        assert ASKED not in again.text_of(sid2)
        assert grants(base)["authorize"] == 2
        await again.close()
