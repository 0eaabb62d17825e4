"""MCP over HTTP with OAuth (seam: MCP client auth), as Gemini CLI's `oauth` settings.

The `mcp` SDK's client auth (`mcp.client.auth.OAuthClientProvider`, an httpx auth) does
the protocol: discovery from the server's 401 (`WWW-Authenticate`, protected-resource
and authorization-server metadata), dynamic client registration, PKCE, refresh before
an expired token is used, and a new authorization after a 401. Ours, around it:
- `McpTokenStore`: tokens, the registered client and the authorization server's
  metadata in one owner-only file (0600, its folder 0700) under the state dir, outside
  any workspace (`oauth_dir`), so a restarted agent refreshes without asking again;
- `LoopbackRedirect`: the redirect URI (`oauth.redirectUri`, else a free 127.0.0.1
  port) and the one-shot listener that takes the code;
- the authorization URL is shown to the user (`show`): the agent has no browser;
- settings that Gemini CLI honours: `clientId` / `clientSecret` (no registration),
  `authorizationUrl` / `tokenUrl` (used when the server publishes no metadata, and
  the token URL always), `scopes` (asked for whatever the server suggests);
- a 401 on a token we hold is first answered by a refresh, then by authorizing again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)

from runtime.services.atomic_write import write_atomically
from runtime.tools.mcp.config import McpOAuth

logger = logging.getLogger(__name__)

AUTH_TIMEOUT_S = 300.0
"""How long the user has to follow the authorization link (Gemini CLI: 5 minutes)."""
CALLBACK_PATH = "/oauth/callback"


def oauth_dir(env: Mapping[str, str], home: Path) -> Path:
    """Where MCP OAuth tokens are kept: `$XDG_STATE_HOME/adk-acp/mcp-oauth`
    (`~/.local/state/...`), beside the session records, never in a workspace."""
    base = env.get("XDG_STATE_HOME") or str(home / ".local" / "state")
    return Path(base) / "adk-acp" / "mcp-oauth"


def token_file(directory: Path, server: str, url: str) -> Path:
    """One file per server name and URL (a renamed or moved server authorizes again)."""
    import hashlib

    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in server)[:40]
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    return directory / f"{safe}-{digest}.json"


class McpTokenStore:
    """The SDK's `TokenStorage` over one owner-only JSON file (see the module doc).
    `configured` is a client given in settings (`clientId`): it is used as is."""

    def __init__(self, path: Path, configured: OAuthClientInformationFull | None) -> None:
        self.path = path
        self._configured = configured
        self.metadata: OAuthMetadata | None = None  # the provider keeps it current
        self.expires_at: float | None = None

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            logger.warning("MCP OAuth: %s is unreadable (%s); authorizing again", self.path, exc)
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, **changes: Any) -> None:
        data = self._read() | changes
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.path.parent, 0o700)
        write_atomically(self.path, json.dumps(data).encode(), mode=0o600)

    def load_extras(self) -> None:
        """The expiry and the authorization server's metadata saved with the tokens."""
        data = self._read()
        expires = data.get("expires_at")
        self.expires_at = float(expires) if isinstance(expires, int | float) else None
        try:
            self.metadata = OAuthMetadata.model_validate(data["metadata"])
        except (KeyError, ValueError):
            self.metadata = None

    async def get_tokens(self) -> OAuthToken | None:
        try:
            return OAuthToken.model_validate(self._read()["tokens"])
        except (KeyError, ValueError):
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires = time.time() + tokens.expires_in if tokens.expires_in else None
        metadata = self.metadata.model_dump(mode="json") if self.metadata else None
        self._write(tokens=tokens.model_dump(mode="json"), expires_at=expires, metadata=metadata)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self._configured is not None:
            return self._configured
        try:
            return OAuthClientInformationFull.model_validate(self._read()["client"])
        except (KeyError, ValueError):
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self._configured is None:
            self._write(client=client_info.model_dump(mode="json", exclude_none=True))


class LoopbackRedirect:
    """The redirect URI and its one-shot listener on the loopback interface."""

    def __init__(self, redirect_uri: str | None) -> None:
        if redirect_uri:
            parsed = urlparse(redirect_uri)
            self.host = parsed.hostname or "127.0.0.1"
            self.port = parsed.port or 80
            self.path = parsed.path or "/"
            self.uri = redirect_uri
        else:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                self.port = sock.getsockname()[1]
            self.host, self.path = "127.0.0.1", CALLBACK_PATH
            self.uri = f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None

    async def listen(self) -> None:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, self.host, self.port)

    async def result(self) -> AuthorizationCodeResult:
        """The code the browser brings back (at most `AUTH_TIMEOUT_S`); the listener closes."""
        assert self._result is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), AUTH_TIMEOUT_S)
        except TimeoutError:
            raise OAuthFlowError("the authorization link was not followed in time") from None
        finally:
            if self._server is not None:
                self._server.close()
                self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            target = (await reader.readline()).decode("latin-1").split(" ")
            while (await reader.readline()).strip():
                pass  # the headers
            url = urlparse(target[1] if len(target) > 1 else "/")
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path != self.path:
                await _answer(writer, 404, "Not found.")
                return
            if "code" not in query or self._result is None or self._result.done():
                await _answer(writer, 400, f"Authorization failed: {query.get('error', '?')}.")
                if self._result is not None and not self._result.done():
                    reason = query.get("error_description") or query.get("error") or "no code"
                    self._result.set_exception(OAuthFlowError(f"authorization refused: {reason}"))
                return
            self._result.set_result(
                AuthorizationCodeResult(
                    code=query["code"], state=query.get("state"), iss=query.get("iss")
                )
            )
            await _answer(writer, 200, "Authorized. You can close this window.")
        except (OSError, UnicodeError, IndexError) as exc:
            logger.warning("MCP OAuth: a bad request on the redirect listener: %s", exc)
        finally:
            writer.close()


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    body = text.encode()
    head = f"HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
    writer.write(head.encode() + b"Connection: close\r\n\r\n" + body)
    await writer.drain()


class McpOAuthProvider(OAuthClientProvider):
    """The SDK's provider with Gemini CLI's settings and our storage (module doc).
    `on_authorizing(True/False)` brackets the wait for the user."""

    def __init__(
        self,
        *,
        server: str,
        url: str,
        settings: McpOAuth,
        store_dir: Path,
        show: Callable[[str], None],
        on_authorizing: Callable[[bool], None],
    ) -> None:
        self._settings = settings
        self._redirect = LoopbackRedirect(settings.redirect_uri)
        self._server_name, self._show, self._on_authorizing = server, show, on_authorizing
        method: Literal["client_secret_post", "none"] = (
            "client_secret_post" if settings.client_secret else "none"
        )
        configured = None
        if settings.client_id:
            configured = OAuthClientInformationFull(
                client_id=settings.client_id,
                client_secret=settings.client_secret,
                redirect_uris=[self._redirect.uri],  # type: ignore[list-item]
                token_endpoint_auth_method=method,
            )
        self.store = McpTokenStore(token_file(store_dir, server, url), configured)
        super().__init__(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                client_name="adk-acp",
                redirect_uris=[self._redirect.uri],  # type: ignore[list-item]
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                scope=" ".join(settings.scopes) or None,
                token_endpoint_auth_method=method,
            ),
            storage=self.store,
            redirect_handler=self._open_link,
            callback_handler=self._take_code,
        )

    def _configured_metadata(self, found: OAuthMetadata | None) -> OAuthMetadata | None:
        """The server's metadata with the settings' endpoints filled in where it has none."""
        auth_url, token_url = self._settings.authorization_url, self._settings.token_url
        if found is None:
            if not (auth_url and token_url):
                return None
            issuer = f"{urlparse(auth_url).scheme}://{urlparse(auth_url).netloc}"
            return OAuthMetadata.model_validate(
                {"issuer": issuer, "authorization_endpoint": auth_url, "token_endpoint": token_url}
            )
        if token_url:
            return found.model_copy(update={"token_endpoint": token_url})
        return found

    async def _initialize(self) -> None:
        await super()._initialize()
        self.store.load_extras()
        self.context.oauth_metadata = self._configured_metadata(
            self.context.oauth_metadata or self.store.metadata
        )
        self.context.token_expiry_time = self.store.expires_at

    async def _perform_authorization(self) -> httpx2.Request:
        self.context.oauth_metadata = self._configured_metadata(self.context.oauth_metadata)
        self.store.metadata = self.context.oauth_metadata
        if self._settings.scopes:
            self.context.client_metadata.scope = " ".join(self._settings.scopes)
        return await super()._perform_authorization()

    async def _open_link(self, url: str) -> None:
        await self._redirect.listen()
        self._on_authorizing(True)
        self._show(
            f"MCP server '{self._server_name}' needs authorization: open {url} "
            f"(it comes back to {self._redirect.uri}; waiting {AUTH_TIMEOUT_S / 60:g} minutes)"
        )

    async def _take_code(self) -> AuthorizationCodeResult:
        try:
            return await self._redirect.result()
        finally:
            self._on_authorizing(False)

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow, but a 401 on a token we hold is answered by a refresh first
        (then the request again); only when that fails does the SDK authorize anew."""
        flow = super()._auth_flow(request)
        refreshed = False
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if (
                    outgoing is request
                    and response.status_code == 401
                    and not refreshed
                    and self.context.can_refresh_token()
                ):
                    refreshed = True
                    answer = yield await self._refresh_token()
                    if await self._handle_refresh_response(answer):
                        logger.info("MCP server %s: token refreshed after a 401", self._server_name)
                        self._add_auth_header(request)
                        response = yield request
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
