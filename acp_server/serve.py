"""The serving loop: lines from stdin → the JSON-RPC connection (pygls) → handlers, until
stdin closes."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp_server.early import EarlySession
from acp_server.handlers.initialize import choose_dialect
from acp_server.handlers.sessions import open_early
from acp_server.handoff import StdioHandoff
from acp_server.server import ServerOptions, serve_on
from acp_server.stdio import Output, StdinReader
from acp_server.transport import JsonRpcConnection
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
    conn = JsonRpcConnection(output)
    state = serve_on(conn, ServerOptions(flags=flags))
    if init_params is not None:
        state.mark_initialized(init_params)
        choose_dialect(state, init_params)
    if early is not None:  # answered already: build it before any later line is handled
        await open_early(state, early)
    eof = asyncio.Event()

    def on_line(line: bytes | None) -> None:
        if line is None:
            eof.set()
        else:
            conn.feed(line)

    # sessions other processes ask for (a store they share)
    handoff = loop.create_task(StdioHandoff(state).run(), name="lease handoff")
    reader.attach(loop, on_line)
    await eof.wait()
    logger.info("stdin closed; shutting down")
    handoff.cancel()
    try:
        await asyncio.wait_for(state.shutdown(), timeout=SHUTDOWN_TIMEOUT_S)
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
