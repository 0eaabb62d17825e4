"""The zygote's rehearsal: one scripted ACP conversation through the real handlers.

`runtime.warmup` runs an engine turn; what a child's first requests also need (pygls'
dispatch, our schema models built on first use, the session layer, the updates mapping,
a tool call's path, the recorder, a `session/load` replay) is built here once, in the
server, before it forks: `initialize`, `session/new`, a prompt whose model turn calls
`read_file` and then answers, a prompt answered with text; then, on a new connection, a
`session/load` of that session from its record and a prompt. In its own temporary HOME
and workspace, on a `--fake-responses` script, with no credentials; everything is closed
after, and no thread is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

REPLY_TIMEOUT_S = 120.0


def _turn(*parts: dict[str, Any]) -> str:
    candidate = {"content": {"role": "model", "parts": list(parts)}, "finishReason": "STOP"}
    return json.dumps(
        {"method": "generateContentStream", "response": [{"candidates": [candidate]}]}
    )


class _Client:
    """Feeds requests to the connection and reads its answers from the output buffer."""

    def __init__(self, conn: Any, buffer: io.BytesIO) -> None:
        self.conn = conn
        self.buffer = buffer
        self.ids = 0

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        request = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        self.conn.feed(json.dumps(request).encode())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + REPLY_TIMEOUT_S
        while loop.time() < deadline:
            for line in self.buffer.getvalue().splitlines():
                message = json.loads(line)
                if message.get("id") == self.ids and "method" not in message:
                    if "error" in message:
                        raise RuntimeError(f"{method}: {message['error']}")
                    result: dict[str, Any] = message["result"]
                    return result
            await asyncio.sleep(0.005)
        raise TimeoutError(f"{method} was not answered")

    async def prompt(self, session: str, text: str) -> None:
        prompt = [{"type": "text", "text": text}]
        await self.call("session/prompt", {"sessionId": session, "prompt": prompt})


async def _conversation(root: Path) -> None:
    """A session opened and prompted, closed; then, as a new editor would, loaded from
    the record (the replay's path) and prompted again."""
    home, workspace = root / "home", root / "workspace"
    home.mkdir()
    workspace.mkdir()
    (workspace / "README.md").write_text("# rehearsal\n", encoding="utf-8")
    script = root / "script.jsonl"
    read = {"functionCall": {"name": "read_file", "args": {"file_path": "README.md"}}}
    turns = [_turn(read), _turn({"text": "Read."}), _turn({"text": "Hello."})]
    script.write_text("\n".join(turns + [turns[-1]]) + "\n", encoding="utf-8")
    async with _connected(root, script, home) as client:
        opened = await client.call("session/new", {"cwd": str(workspace), "mcpServers": []})
        session = opened["sessionId"]
        for text in ("read the README", "hello"):
            await client.prompt(session, text)
    async with _connected(root, script, home) as client:
        params = {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        await client.call("session/load", params)
        await client.prompt(session, "and now?")


@contextlib.asynccontextmanager
async def _connected(root: Path, script: Path, home: Path) -> AsyncIterator[_Client]:
    """An initialized connection to a fresh server state; its sessions closed after."""
    from acp_server.server import ServerOptions, serve_on
    from acp_server.stdio import Output
    from acp_server.transport import JsonRpcConnection
    from runtime.config import AgentFlags
    from runtime.processes import kill_all

    buffer = io.BytesIO()
    conn = JsonRpcConnection(Output(buffer))
    flags = AgentFlags(fake_responses=script, sessions_dir=root / "sessions")
    state = serve_on(conn, ServerOptions(flags=flags, env={"HOME": str(home)}, home=home))
    client = _Client(conn, buffer)
    try:
        await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        yield client
    finally:
        await state.shutdown()
        kill_all()


def rehearse() -> None:
    """Run the conversation in a fresh event loop; a failure is logged, not raised (the
    zygote is then only less warm)."""
    with tempfile.TemporaryDirectory(prefix="adk-acp-rehearsal-") as tmp:
        try:
            asyncio.run(_conversation(Path(tmp)))
        except Exception:  # noqa: BLE001 - an optimisation: the server serves without it
            logger.exception("the warm server's rehearsal failed")
