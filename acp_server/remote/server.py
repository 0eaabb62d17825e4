"""`adk-acp serve`: the hub and the `/acp` endpoint on uvicorn, with its options.

Secure by default: without a token (`--token`, `--token-file`, `ADK_ACP_TOKEN`) it
refuses to start unless bound to loopback with `--insecure-loopback`; with or without
one, browser origins and foreign Host names are refused (`gate.py`). Request headers
must arrive within `--header-timeout` (a slow-loris connection is closed);
`--max-connections`, `--max-message-bytes` bound the rest. TLS: `--tls-cert` and
`--tls-key`, or a reverse proxy in front (README, "Run it remotely").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import os
import signal
import socket
from pathlib import Path
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from acp_server.remote.gate import GateError, GatePolicy, RequestGate
from acp_server.remote.tokens import TokenBook, TokenError

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8765
STOP_TURNS_S = 15.0
"""At a stop: how long running turns get to be answered before the connections close."""
FLUSH_S = 2.0


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free)"
    )
    parser.add_argument(
        "--token", help="the bearer token clients must send (visible in ps: prefer the others)"
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        help="file of tokens, one a line: TOKEN [ROOT ...] limits a token to those workspace "
        "roots; read again when it changes",
    )
    parser.add_argument(
        "--insecure-loopback",
        action="store_true",
        help="allow starting without a token; only on a loopback address",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin (scheme://host[:port]) allowed to connect; repeatable. Any "
        "other request carrying an Origin header is refused (403)",
    )
    parser.add_argument(
        "--public-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help="a Host name clients (or a reverse proxy) use for this server, besides its "
        "address; repeatable, also ADK_ACP_PUBLIC_HOST (comma-separated). Any other Host "
        "is refused (421)",
    )
    parser.add_argument(
        "--permission-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how long a permission request waits for a client to attach (default 300)",
    )
    parser.add_argument(
        "--session-idle-timeout",
        type=float,
        default=900.0,
        metavar="SECONDS",
        help="a session with no client attached, no turn running and no question waiting "
        "is let go after this long (its lease too; it resumes from the store; default 900)",
    )
    parser.add_argument("--max-connections", type=int, default=64, help="default 64")
    parser.add_argument(
        "--max-message-bytes", type=int, default=16 * 1024 * 1024, help="default 16 MiB"
    )
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="request headers (and a POST body) must arrive within this (default 10)",
    )
    parser.add_argument("--tls-cert", type=Path, help="serve wss:// and https:// with this cert")
    parser.add_argument("--tls-key", type=Path, help="the private key of --tls-cert")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def tokens_of(args: argparse.Namespace, env: dict[str, str]) -> TokenBook | None:
    """The token book, or None for `--insecure-loopback` without tokens; raises
    TokenError when the server must not start."""
    book = TokenBook.from_sources(args.token, args.token_file, env)
    if not book.empty:
        return book
    if not args.insecure_loopback:
        raise TokenError(
            "refusing to serve without a token: give --token-file, --token or ADK_ACP_TOKEN "
            "(or --insecure-loopback on a loopback address)"
        )
    if not is_loopback(args.host):
        raise TokenError(f"--insecure-loopback needs a loopback address, not {args.host}")
    return None


def gate_of(args: argparse.Namespace, env: dict[str, str], port: int) -> GatePolicy:
    """The Origin and Host rules for a server bound to `args.host`:`port`; raises
    GateError for an unusable `--allow-origin` or `--public-host`."""
    from_env = [h for h in env.get("ADK_ACP_PUBLIC_HOST", "").split(",") if h.strip()]
    return GatePolicy.make(args.host, port, args.allow_origin, [*args.public_host, *from_env])


def header_deadline(timeout_s: float) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol, closing connections whose request headers do not
    arrive within `timeout_s` (slow loris), the first request's and each later one's."""

    class HeaderDeadline(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _seen: Any = None

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(timeout_s, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            logger.info("closed a connection whose request headers took over %g s", timeout_s)
            self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.scope is not None and self.scope is not self._seen:
                self._seen = self.scope
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

    return HeaderDeadline


async def serve_remote(args: argparse.Namespace, flags: Any, tokens: TokenBook | None) -> None:
    import uvicorn

    from acp_server.remote.endpoint import AcpEndpoint, Limits
    from acp_server.remote.hub import SessionHub
    from acp_server.remote.upkeep import HubUpkeep
    from acp_server.state import ServerOptions

    hub = SessionHub(ServerOptions(flags=flags), args.permission_timeout)
    upkeep = HubUpkeep(hub, args.session_idle_timeout)
    limits = Limits(
        max_connections=args.max_connections,
        max_message_bytes=args.max_message_bytes,
        body_timeout_s=args.header_timeout,
    )
    endpoint = AcpEndpoint(hub, tokens, limits)
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(2048)  # connections wait in the backlog until uvicorn serves
    port = sock.getsockname()[1]
    tls = args.tls_cert is not None
    app = RequestGate(endpoint.app, gate_of(args, dict(os.environ), port))
    config = uvicorn.Config(
        app,
        http=header_deadline(args.header_timeout),
        ws="websockets-sansio",
        ws_max_size=args.max_message_bytes,
        lifespan="off",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=5,  # open SSE streams would hold the stop forever
        ssl_certfile=str(args.tls_cert) if tls else None,
        ssl_keyfile=str(args.tls_key) if args.tls_key else None,
    )
    server = uvicorn.Server(config)
    # uvicorn would re-raise SIGTERM after its shutdown, killing the process before the
    # sessions close: the signals only ask it to stop here.
    server.capture_signals = contextlib.nullcontext  # type: ignore[assignment]
    loop = asyncio.get_running_loop()
    stopping: list[asyncio.Task[None]] = []

    async def stop() -> None:
        """Running turns answered (`cancelled`) while their clients are connected, then
        the server stops; bounded, and a failure still stops it."""
        try:
            await asyncio.wait_for(hub.stop_turns(), STOP_TURNS_S)
            await endpoint.flush(FLUSH_S)
        except Exception:  # noqa: BLE001 (logged; the stop goes on)
            logger.exception("stopping the running turns failed")
        finally:
            server.should_exit = True

    def on_signal() -> None:
        if not stopping:
            stopping.append(asyncio.ensure_future(stop()))

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal)
    scheme = ("wss", "https") if tls else ("ws", "http")
    logger.warning(
        "serving ACP on %s://%s:%d/acp and %s://%s:%d/acp (%s)",
        scheme[0], args.host, port, scheme[1], args.host, port,
        "token required" if tokens is not None else "no token: loopback only",
    )  # fmt: skip
    upkeep.start()
    endpoint.start()
    try:
        await server.serve(sockets=[sock])
    finally:
        await endpoint.stop()
        await upkeep.stop()
        await hub.shutdown()


def run(args: argparse.Namespace, flags: Any) -> int:
    """Run until SIGINT/SIGTERM; the exit code."""
    try:
        tokens = tokens_of(args, dict(os.environ))
    except TokenError as exc:
        logger.error("%s", exc)
        return 2
    try:
        gate_of(args, dict(os.environ), args.port)
    except GateError as exc:
        logger.error("%s", exc)
        return 2
    if (args.tls_cert is None) != (args.tls_key is None):
        logger.error("--tls-cert and --tls-key go together")
        return 2
    try:
        asyncio.run(serve_remote(args, flags, tokens))
    except OSError as exc:
        logger.error("cannot serve on %s:%s: %s", args.host, args.port, exc)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        # The loop's handlers are gone now: a repeated stop request must not cut the
        # clean-up (and the interpreter's exit) short.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
        from runtime.processes import kill_all

        kill_all()
    return 0
