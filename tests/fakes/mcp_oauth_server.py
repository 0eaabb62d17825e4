"""An OAuth-protected MCP server for tests: one loopback process that is both the
authorization server and the protected resource (the fake MCP server's tools at `/mcp`).

    python tests/fakes/mcp_oauth_server.py --port N

- `/mcp` without a valid bearer token: 401 with `WWW-Authenticate: Bearer
  resource_metadata=".../.well-known/oauth-protected-resource"`;
- `/.well-known/oauth-protected-resource`, `/.well-known/oauth-authorization-server`;
- `/register` (dynamic registration), `/authorize` (redirects at once to the client's
  redirect URI with a code: the "user" always consents), `/token` (authorization code
  with PKCE S256, and refresh);
- test controls: `POST /control/revoke-access` (every access token stops working),
  `POST /control/revoke-all` (refresh tokens too), `GET /control/log` (the grants
  made: `{"authorize": n, "authorization_code": n, "refresh_token": n, "register": n}`).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import os
import secrets
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

from tests.fakes.mcp_server import free_port, wait_for_ports

SCRIPT = os.path.abspath(__file__)


def build_app(port: int) -> Any:  # noqa: C901 - one small handler per endpoint
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

    from tests.fakes.mcp_server import build_server

    base = f"http://127.0.0.1:{port}"
    log: Counter[str] = Counter()
    clients: dict[str, list[str]] = {}
    codes: dict[str, tuple[str, str]] = {}  # code -> (client, challenge)
    access: set[str] = set()
    refresh: set[str] = set()

    def issue() -> dict[str, Any]:
        token, again = "at-" + secrets.token_hex(8), "rt-" + secrets.token_hex(8)
        access.add(token)
        refresh.add(again)
        return {"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                "refresh_token": again, "scope": "mcp:tools"}  # fmt: skip

    async def resource_metadata(request: Request) -> Response:
        return JSONResponse(
            {
                "resource": f"{base}/mcp",
                "authorization_servers": [base],
                "scopes_supported": ["mcp:tools"],
            }  # fmt: skip
        )

    async def server_metadata(request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "registration_endpoint": f"{base}/register",
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_methods_supported": ["none"],
            }  # fmt: skip
        )

    async def register(request: Request) -> Response:
        body = await request.json()
        client_id = "client-" + secrets.token_hex(4)
        clients[client_id] = list(body.get("redirect_uris") or [])
        log["register"] += 1
        return JSONResponse({**body, "client_id": client_id, "token_endpoint_auth_method": "none"},
                            status_code=201)  # fmt: skip

    async def authorize(request: Request) -> Response:
        q = request.query_params
        redirect = q.get("redirect_uri", "")
        if redirect not in clients.get(q.get("client_id", ""), []):
            return Response("unknown client or redirect_uri", status_code=400)
        code = "code-" + secrets.token_hex(8)
        codes[code] = (q["client_id"], q.get("code_challenge", ""))
        log["authorize"] += 1
        return RedirectResponse(f"{redirect}?{urlencode({'code': code, 'state': q['state']})}")

    async def token(request: Request) -> Response:
        form = await request.form()
        grant = str(form.get("grant_type"))
        if grant == "authorization_code":
            client, challenge = codes.pop(str(form.get("code")), ("", ""))
            digest = hashlib.sha256(str(form.get("code_verifier")).encode()).digest()
            made = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if not client or made != challenge:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
        elif grant == "refresh_token":
            old = str(form.get("refresh_token"))
            if old not in refresh:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            refresh.discard(old)
        else:
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        log[grant] += 1
        return JSONResponse(issue())

    async def revoke_access(request: Request) -> Response:
        access.clear()
        return JSONResponse({})

    async def revoke_all(request: Request) -> Response:
        access.clear()
        refresh.clear()
        return JSONResponse({})

    async def show_log(request: Request) -> Response:
        return JSONResponse(dict(log))

    oauth = Starlette(
        routes=[
            Route("/.well-known/oauth-protected-resource", resource_metadata),
            Route("/.well-known/oauth-protected-resource/mcp", resource_metadata),
            Route("/.well-known/oauth-authorization-server", server_metadata),
            Route("/register", register, methods=["POST"]),
            Route("/authorize", authorize),
            Route("/token", token, methods=["POST"]),
            Route("/control/revoke-access", revoke_access, methods=["POST"]),
            Route("/control/revoke-all", revoke_all, methods=["POST"]),
            Route("/control/log", show_log),
        ]
    )
    mcp = build_server("secure").streamable_http_app()
    challenge = f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource"'

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan" or not scope["path"].startswith("/mcp"):
            target = mcp if scope["type"] == "lifespan" else oauth
            await target(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        given = headers.get(b"authorization", b"").decode()
        if not given.startswith("Bearer ") or given[7:] not in access:
            unauthorized = Response(
                "unauthorized", status_code=401, headers={"WWW-Authenticate": challenge}
            )
            await unauthorized(scope, receive, send)
            return
        await mcp(scope, receive, send)

    return app


@contextlib.contextmanager
def oauth_server() -> Iterator[str]:
    """Runs the server on a free 127.0.0.1 port; yields its base URL once it listens."""
    port = free_port()
    root = os.path.dirname(os.path.dirname(os.path.dirname(SCRIPT)))
    proc = subprocess.Popen(
        [sys.executable, SCRIPT, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": root},
    )
    try:
        wait_for_ports([port], "the OAuth MCP server")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    uvicorn.run(build_app(port), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
