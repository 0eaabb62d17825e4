"""The serving loop: lines from stdin → pygls engine → handlers, until stdin closes."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp_server.early import EarlySession
from acp_server.server import AcpServer, ServerOptions
from acp_server.stdio import Output, StdinReader
from acp_server.transport import JsonRpcEngine
from runtime.config import AgentFlags

logger = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT_S = 0.8


async def _serve(
    reader: StdinReader,
    output: Output,
    init_params: dict[str, Any] | None,
    flags: AgentFlags,
    early: EarlySession | None = None,
) -> None:
    loop = asyncio.get_running_loop()
    engine = JsonRpcEngine(output)
    server = AcpServer(engine, ServerOptions(flags=flags))
    if init_params is not None:
        server.mark_initialized(init_params)
    if early is not None:  # answered already: build it before any later line is handled
        await server.open_early(early)
    eof = asyncio.Event()

    def on_line(line: bytes | None) -> None:
        if line is None:
            eof.set()
        else:
            engine.feed(line)

    reader.attach(loop, on_line)
    await eof.wait()
    logger.info("stdin closed; shutting down")
    try:
        await asyncio.wait_for(server.shutdown(), timeout=SHUTDOWN_TIMEOUT_S)
    except TimeoutError:
        logger.warning("sessions did not close within %.1f s", SHUTDOWN_TIMEOUT_S)
    from runtime.processes import kill_all

    kill_all()


def serve(
    reader: StdinReader,
    output: Output,
    init_params: dict[str, Any] | None,
    flags: AgentFlags,
    early: EarlySession | None = None,
) -> int:
    """Run until stdin closes. Returns the process exit code."""
    try:
        asyncio.run(_serve(reader, output, init_params, flags, early))
    except KeyboardInterrupt:
        return 130
    return 0
