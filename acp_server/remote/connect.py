"""`adk-acp connect ws://…|wss://…`: a stdio bridge to a served agent.

For an editor that starts its agent as a child process (Zed, our VS Code extension):
each line on stdin goes to the WebSocket as one text frame, each frame comes back as
one line on stdout. The token comes from `--token-file`, `ADK_ACP_TOKEN` or `--token`.
It ends when stdin closes (exit 0) or the server goes (exit 1). Standard library and
`websockets` only: nothing of the agent is loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import IO

logger = logging.getLogger(__name__)

TOKEN_ENV = "ADK_ACP_TOKEN"
LINE_LIMIT = 1 << 30
OPEN_TIMEOUT_S = 30.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="adk-acp connect",
        description="Bridge stdio to an agent served by `adk-acp serve` (ACP over WebSocket).",
    )
    parser.add_argument("url", help="ws://host:port/acp or wss://host/acp")
    parser.add_argument("--token-file", type=Path, help="file whose first line is the token")
    parser.add_argument("--token", help=f"the token (visible in ps: prefer {TOKEN_ENV})")
    parser.add_argument(
        "--max-message-bytes", type=int, default=64 * 1024 * 1024, help="default 64 MiB"
    )
    return parser


def token_of(args: argparse.Namespace) -> str | None:
    if args.token_file is not None:
        words = args.token_file.read_text(encoding="utf-8").split()
        return words[0] if words else None
    return os.environ.get(TOKEN_ENV) or args.token


async def bridge(url: str, token: str | None, max_size: int, stdout: IO[bytes]) -> int:
    """Pump stdin lines to the socket and frames to stdout; the exit code."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

    headers = {"Authorization": f"Bearer {token}"} if token else None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    try:
        ws = await connect(
            url, additional_headers=headers, max_size=max_size, open_timeout=OPEN_TIMEOUT_S
        )
    except InvalidStatus as exc:
        why = exc.response.body.decode("utf-8", "replace").strip()[:300]
        logger.error(
            "the server refused the connection: HTTP %s%s",
            exc.response.status_code,
            f" ({why})" if why else "",
        )
        return 1
    except (OSError, InvalidHandshake, TimeoutError) as exc:
        logger.error("cannot connect to %s: %s", url, exc)
        return 1

    async def upstream() -> None:
        while line := await reader.readline():
            if line.strip():
                await ws.send(line.rstrip(b"\r\n").decode("utf-8", "replace"))

    async def downstream() -> None:
        async for frame in ws:
            data = frame.encode("utf-8") if isinstance(frame, str) else frame
            stdout.write(data + b"\n")
            stdout.flush()

    up = asyncio.ensure_future(upstream())
    down = asyncio.ensure_future(downstream())
    done, _ = await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
    code = 0 if up in done else 1
    if code:
        logger.error("the server closed the connection (%s)", ws.close_code)
    for task in (up, down):
        task.cancel()
    try:
        await ws.close()
    except ConnectionClosed:
        pass
    return code


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="adk-acp connect: %(message)s")
    if not args.url.startswith(("ws://", "wss://")):
        logger.error("the URL must start with ws:// or wss://")
        return 2
    try:
        token = token_of(args)
    except OSError as exc:
        logger.error("cannot read the token file: %s", exc)
        return 2
    try:
        return asyncio.run(bridge(args.url, token, args.max_message_bytes, sys.stdout.buffer))
    except KeyboardInterrupt:
        return 130
