"""MCP OAuth pieces (issue 19.6): Gemini CLI's `oauth` settings, when a server uses OAuth,
the owner-only token file, the loopback redirect listener, the settings' endpoints."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import httpx
import pytest
from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import OAuthMetadata, OAuthToken

from runtime.tools.mcp.config import McpOAuth, servers_from_settings, uses_oauth
from runtime.tools.mcp.oauth import LoopbackRedirect, McpOAuthProvider, McpTokenStore, oauth_dir


def test_oauth_settings_are_read_as_gemini_cli_writes_them(tmp_path: Path) -> None:
    settings = {
        "mcpServers": {
            "s": {
                "httpUrl": "https://h/mcp",
                "oauth": {
                    "enabled": True,
                    "clientId": "cid",
                    "clientSecret": "sec",
                    "authorizationUrl": "https://a/authorize",
                    "tokenUrl": "https://a/token",
                    "scopes": ["read", "write"],
                    "redirectUri": "http://localhost:7777/cb",
                },
            },
            "bad": {"url": "https://h/sse", "type": "sse", "oauth": "yes"},
        }
    }
    servers = {s.name: s for s in servers_from_settings(settings, tmp_path)}
    assert servers["s"].oauth == McpOAuth(  # type: ignore[union-attr]
        enabled=True,
        client_id="cid",
        client_secret="sec",
        authorization_url="https://a/authorize",
        token_url="https://a/token",
        scopes=("read", "write"),
        redirect_uri="http://localhost:7777/cb",
    )
    assert servers["bad"].oauth is None  # type: ignore[union-attr]


def test_oauth_is_used_unless_disabled_or_the_settings_authorize_themselves() -> None:
    assert uses_oauth(None, ())
    assert not uses_oauth(None, (("Authorization", "Bearer x"),))
    assert uses_oauth(McpOAuth(enabled=True), (("authorization", "Bearer x"),))
    assert not uses_oauth(McpOAuth(enabled=False), ())


def test_tokens_live_in_an_owner_only_file_under_the_state_dir(tmp_path: Path) -> None:
    directory = oauth_dir({"HOME": "/ignored"}, tmp_path)
    assert directory == tmp_path / ".local" / "state" / "adk-acp" / "mcp-oauth"
    assert oauth_dir({"XDG_STATE_HOME": "/st"}, tmp_path) == Path("/st/adk-acp/mcp-oauth")
    store = McpTokenStore(directory / "s.json", None)
    assert asyncio.run(store.get_tokens()) is None
    token = OAuthToken(access_token="a", refresh_token="r", expires_in=60)
    asyncio.run(store.set_tokens(token))
    assert asyncio.run(store.get_tokens()) == token
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    store.load_extras()
    assert store.expires_at is not None
    store.path.write_text("not json")  # a damaged file: authorize again, no crash
    assert asyncio.run(store.get_tokens()) is None


async def test_the_loopback_listener_takes_the_code_or_the_refusal() -> None:
    redirect = LoopbackRedirect(None)
    assert redirect.uri.startswith("http://127.0.0.1:") and redirect.uri.endswith("/oauth/callback")
    await redirect.listen()
    async with httpx.AsyncClient() as http:
        assert (
            await http.get(redirect.uri.replace("/oauth/callback", "/other"))
        ).status_code == 404
        answer = await http.get(redirect.uri, params={"code": "c1", "state": "s1"})
    assert answer.status_code == 200
    result = await redirect.result()
    assert (result.code, result.state) == ("c1", "s1")

    refused = LoopbackRedirect(None)
    await refused.listen()
    async with httpx.AsyncClient() as http:
        answer = await http.get(refused.uri, params={"error": "access_denied"})
    assert answer.status_code == 400
    with pytest.raises(OAuthFlowError, match="access_denied"):
        await refused.result()


def test_the_settings_endpoints_fill_in_what_the_server_does_not_publish(tmp_path: Path) -> None:
    settings = McpOAuth(
        authorization_url="https://a.example/auth", token_url="https://a.example/tok"
    )
    provider = McpOAuthProvider(
        server="s",
        url="https://h/mcp",
        settings=settings,
        store_dir=tmp_path,
        show=lambda _t: None,
        on_authorizing=lambda _w: None,
    )
    made = provider._configured_metadata(None)
    assert made is not None
    assert str(made.authorization_endpoint) == "https://a.example/auth"
    found = OAuthMetadata.model_validate(
        {
            "issuer": "https://x",
            "authorization_endpoint": "https://x/a",
            "token_endpoint": "https://x/t",
        }
    )
    kept = provider._configured_metadata(found)
    assert kept is not None and str(kept.token_endpoint) == "https://a.example/tok"
    assert str(kept.authorization_endpoint) == "https://x/a"


def test_a_client_id_from_the_settings_is_used_without_registering(tmp_path: Path) -> None:
    provider = McpOAuthProvider(
        server="s",
        url="https://h/mcp",
        settings=McpOAuth(client_id="cid", client_secret="sec"),
        store_dir=tmp_path,
        show=lambda _t: None,
        on_authorizing=lambda _w: None,
    )
    info = asyncio.run(provider.store.get_client_info())
    assert info is not None and (info.client_id, info.client_secret) == ("cid", "sec")
    assert info.token_endpoint_auth_method == "client_secret_post"
