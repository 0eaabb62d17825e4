"""The gate in front of `adk-acp serve`'s endpoint: only the server's own clients get in.

A web page the user has open can reach a loopback port: browsers apply no CORS to
WebSockets, a `fetch` POST leaves before any CORS check, and a DNS-rebinding page
talks to `127.0.0.1` under its own name. So, for every path but `/healthz`, before any
token check, upgrade or JSON-RPC handling:

- a request from a browser (one with an `Origin` header, or with `Sec-Fetch-Site`
  saying it comes from another site) is refused with 403 unless its origin is allowed
  with `--allow-origin`; the SDK clients, `adk-acp connect` and acpx send no Origin;
- the `Host` header must name the server: a loopback name (`127.0.0.1`, `localhost`,
  `[::1]`) on a loopback bind, the bound address itself, any IP address on a wildcard
  bind (`0.0.0.0`, `::`), or a name given with `--public-host` (what a reverse proxy
  forwards); a port, when the Host names one, must be the bound port (a public host's
  own port, when it gives one). Anything else is refused with 421 (Misdirected
  Request): a rebinding page's Host is its own domain.

Both checks hold with a token as well (defence in depth). An allowed origin's page is
answered as a web client: its CORS preflight, and CORS headers on every answer (the
token is still required).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket

logger = logging.getLogger(__name__)

OPEN_PATHS = frozenset({"/healthz"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
CROSS_SITE = frozenset({"cross-site", "same-site"})
"""`Sec-Fetch-Site` values of a request a page of another origin made."""
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


class GateError(ValueError):
    """An `--allow-origin` or `--public-host` value that cannot be used."""


def normalize_origin(origin: str) -> str:
    """`scheme://host[:port]` in lowercase, without the scheme's default port; raises
    GateError for anything else (a path, a wildcard, no host)."""
    text = origin.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise GateError(f"not an origin: {origin!r} ({exc})") from None
    if parts.scheme.lower() not in DEFAULT_PORTS or not parts.hostname:
        raise GateError(f"not an origin: {origin!r} (expected scheme://host[:port])")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise GateError(f"not an origin: {origin!r} (an origin has no path, query or user)")
    scheme, host = parts.scheme.lower(), parts.hostname.lower()
    shown = f"[{host}]" if ":" in host else host
    if port is None or port == DEFAULT_PORTS[scheme]:
        return f"{scheme}://{shown}"
    return f"{scheme}://{shown}:{port}"


@dataclass(frozen=True)
class HostName:
    """A Host header's parts: the name (lowercase, no brackets, no trailing dot) and
    its port, if it gives one."""

    name: str
    port: int | None

    @classmethod
    def parse(cls, value: str) -> HostName | None:
        """None for a value that is no host name."""
        text = value.strip().lower()
        port_text = ""
        if text.startswith("["):
            name, bracket, rest = text[1:].partition("]")
            if not bracket or (rest and not rest.startswith(":")):
                return None
            port_text = rest[1:]
            if not _ip(name):
                return None
        elif text.count(":") == 1:
            name, _, port_text = text.partition(":")
        elif ":" in text:
            return None  # an IPv6 address must be bracketed in a Host
        else:
            name = text
        name = name.rstrip(".")
        if not name or any(c.isspace() or c in "/\\@?#" for c in name):
            return None
        if text.endswith(":"):
            return None
        if port_text and not (port_text.isdigit() and 0 < int(port_text) < 65536):
            return None
        return cls(name, int(port_text) if port_text else None)


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


@dataclass(frozen=True)
class GatePolicy:
    """Which origins and Host names the server answers (see the module's text)."""

    bind_host: str
    port: int
    allowed_origins: frozenset[str] = frozenset()
    public_hosts: tuple[HostName, ...] = ()

    @classmethod
    def make(
        cls, bind_host: str, port: int, origins: Iterable[str], public_hosts: Iterable[str]
    ) -> GatePolicy:
        """Raises GateError for a value that cannot be used."""
        hosts: list[HostName] = []
        for value in public_hosts:
            parsed = HostName.parse(value)
            if parsed is None:
                raise GateError(f"not a host name: {value!r} (expected NAME or NAME:PORT)")
            hosts.append(parsed)
        allowed = frozenset(normalize_origin(origin) for origin in origins)
        return cls(bind_host.strip("[]").lower(), port, allowed, tuple(hosts))

    def origin_refusal(self, origin: str | None, fetch_site: str | None) -> str | None:
        """Why a request with these headers is refused as a browser's, or None."""
        if origin is None:
            if fetch_site is not None and fetch_site.strip().lower() in CROSS_SITE:
                return f"a browser request from another site (Sec-Fetch-Site: {fetch_site})"
            return None
        try:
            if normalize_origin(origin) in self.allowed_origins:
                return None
        except GateError:
            pass
        return f"a browser request from origin {origin!r} (allow it with --allow-origin)"

    def host_refusal(self, host: str | None) -> str | None:
        """Why a request with this Host header is refused, or None."""
        if host is None:
            return "a request without a Host header"
        parsed = HostName.parse(host)
        if parsed is None:
            return f"a request with a malformed Host header {host!r}"
        for public in self.public_hosts:
            if parsed.name == public.name and public.port in (None, parsed.port):
                return None
        if parsed.port not in (None, self.port):
            return f"a request whose Host {host!r} names another port than {self.port}"
        if self._names_the_server(parsed.name):
            return None
        return f"a request whose Host {host!r} does not name this server (see --public-host)"

    def _names_the_server(self, name: str) -> bool:
        bound = _ip(self.bind_host)
        if bound is None:  # bound by name: that name, or a loopback name for localhost
            return name == self.bind_host or (
                self.bind_host == "localhost" and name in LOOPBACK_NAMES
            )
        if bound.is_loopback:
            address = _ip(name)
            return name in LOOPBACK_NAMES or (address is not None and address.is_loopback)
        if bound.is_unspecified:  # every address of the machine; a name must be given
            return name in LOOPBACK_NAMES or _ip(name) is not None
        return _ip(name) == bound


CORS_HEADERS = "authorization, content-type, accept, acp-connection-id, acp-session-id"
CORS_EXPOSED = "Acp-Connection-Id, Acp-Session-Id"


def _preflight(origin: str) -> Response:
    """The answer to an allowed origin's CORS preflight: what a web client may send."""
    return Response(
        status_code=204,
        headers={
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Methods": "GET, POST, DELETE",
            "Access-Control-Allow-Headers": CORS_HEADERS,
            "Access-Control-Max-Age": "600",
            "Vary": "Origin",
        },
    )


def _with_cors(send: Send, origin: str) -> Send:
    """`send`, with an allowed origin's CORS headers added to the response's start."""

    async def cors_send(message: Message) -> None:
        if message["type"] == "http.response.start":
            extra = [
                (b"access-control-allow-origin", origin.encode("latin-1")),
                (b"access-control-expose-headers", CORS_EXPOSED.encode()),
                (b"vary", b"Origin"),
            ]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return cors_send


class RequestGate:
    """ASGI middleware that checks Origin and Host (`GatePolicy`) before `app` sees a
    request; a refused WebSocket gets its status before any upgrade."""

    def __init__(self, app: ASGIApp, policy: GatePolicy) -> None:
        self.app = app
        self.policy = policy
        self._told: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self.policy.origin_refusal(headers.get("origin"), headers.get("sec-fetch-site"))
        status = 403
        if refusal is None:
            refusal = self.policy.host_refusal(headers.get("host"))
            status = 421
        if refusal is None:
            origin = headers.get("origin")
            if origin is None or scope["type"] != "http":
                await self.app(scope, receive, send)
            elif scope.get("method") == "OPTIONS":
                await _preflight(origin)(scope, receive, send)
            else:
                await self.app(scope, receive, _with_cors(send, origin))
            return
        self._tell(refusal)
        reply = PlainTextResponse(f"Refused: {refusal}", status_code=status)
        if scope["type"] == "websocket":
            await WebSocket(scope, receive, send).send_denial_response(reply)
        else:
            await reply(scope, receive, send)

    def _tell(self, refusal: str) -> None:
        """Each kind of refusal once as a warning (a page may retry in a loop), then
        at debug level."""
        if refusal in self._told or len(self._told) >= 256:
            logger.debug("refused %s", refusal)
            return
        self._told.add(refusal)
        logger.warning("refused %s", refusal)
