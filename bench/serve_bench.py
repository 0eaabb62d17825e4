"""The `serve` group: N concurrent remote sessions × P prompts against one `adk-acp
serve` process on loopback (issue 24), each session on its own WebSocket connection.

Prints the prompt latency (p50, p99), the errors, any cross-talk (a session seeing
another's updates) and the server's memory per idle connection. Hermetic: a
temporary HOME, a scripted model (`--fake-responses`), a random token, a free port.

    .venv/bin/python -m bench.serve_bench --sessions 50 --prompts 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import secrets
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from websockets.asyncio.client import ClientConnection, connect

from bench.common import Sandbox, adk_acp_command, sandbox
from bench.script import fake_script

logger = logging.getLogger(__name__)

READY = re.compile(rb"serving ACP on ws://([\d.]+):(\d+)/acp")


@dataclass
class ServeFigures:
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cross_talk: int = 0
    rss_idle_mb: float = 0.0
    rss_connected_mb: float = 0.0
    connections: int = 0

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    def render(self) -> str:
        per_connection = (self.rss_connected_mb - self.rss_idle_mb) / max(1, self.connections)
        return "\n".join(
            [
                f"prompts: {len(self.latencies_ms)}, errors: {len(self.errors)}, "
                f"cross-talk: {self.cross_talk}",
                f"prompt latency p50 {self.percentile(0.5):.1f} ms, "
                f"p99 {self.percentile(0.99):.1f} ms, "
                f"mean {statistics.fmean(self.latencies_ms or [0]):.1f} ms",
                f"server RSS {self.rss_idle_mb:.0f} MB idle, {self.rss_connected_mb:.0f} MB with "
                f"{self.connections} idle connections ({per_connection * 1024:.0f} KB each)",
            ]
        )


class _Client:
    """One connection: requests by id, the session's text."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.ids = 0
        self.waiting: dict[int, asyncio.Future[dict[str, object]]] = {}
        self.texts: dict[str, str] = {}
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for frame in self.ws:
            message = json.loads(frame)
            if message.get("method") == "session/update":
                params = message["params"]
                content = params["update"].get("content") or {}
                if params["update"].get("sessionUpdate") == "agent_message_chunk":
                    sid = params["sessionId"]
                    self.texts[sid] = self.texts.get(sid, "") + content.get("text", "")
            elif "id" in message and "method" not in message:
                future = self.waiting.pop(message["id"], None)
                if future is not None:
                    future.set_result(message)

    async def request(self, method: str, params: dict[str, object]) -> dict[str, object]:
        self.ids += 1
        future: asyncio.Future[dict[str, object]] = asyncio.get_running_loop().create_future()
        self.waiting[self.ids] = future
        await self.ws.send(
            json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        )
        answer = await asyncio.wait_for(future, 120)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        result = answer["result"]
        assert isinstance(result, dict)
        return result


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _one_session(
    url: str, token: str, cwd: Path, prompts: int, figures: ServeFigures
) -> None:
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        client = _Client(ws)
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = await client.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        sid = str(session["sessionId"])
        for n in range(prompts):
            started = time.perf_counter()
            try:
                block = {"type": "text", "text": f"prompt {n}"}
                await client.request("session/prompt", {"sessionId": sid, "prompt": [block]})
                figures.latencies_ms.append((time.perf_counter() - started) * 1000)
            except (RuntimeError, TimeoutError) as exc:
                figures.errors.append(str(exc))
        figures.cross_talk += sum(1 for other in client.texts if other != sid)
        client.reader.cancel()


async def measure(box: Sandbox, sessions: int, prompts: int) -> ServeFigures:
    """Start `adk-acp serve`, run the sessions at once, stop it."""
    token = secrets.token_hex(16)
    script = box.root / "serve.jsonl"
    script.write_text(fake_script(sessions * prompts, 0), encoding="utf-8")
    process = await asyncio.create_subprocess_exec(
        *adk_acp_command(), "serve", "--port", "0", "--fake-responses", str(script),
        "--max-connections", str(sessions + 8), "--log-level", "WARNING",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, env=box.env(ADK_ACP_TOKEN=token), cwd=str(box.root),
    )  # fmt: skip
    assert process.stderr is not None
    first = await asyncio.wait_for(process.stderr.readline(), 120)
    match = READY.search(first)
    if match is None:
        process.kill()
        raise SystemExit(f"serve did not start: {first!r}")
    url = f"ws://{match.group(1).decode()}:{int(match.group(2))}/acp"
    figures = ServeFigures(connections=sessions)
    try:
        figures.rss_idle_mb = _rss_mb(process.pid)
        held = [
            await connect(url, additional_headers={"Authorization": f"Bearer {token}"})
            for _ in range(sessions)
        ]
        figures.rss_connected_mb = _rss_mb(process.pid)
        for ws in held:
            await ws.close()
        await asyncio.gather(
            *(_one_session(url, token, box.workspace, prompts, figures) for _ in range(sessions))
        )
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 60)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--prompts", type=int, default=10)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with sandbox() as box:
        figures = asyncio.run(measure(box, args.sessions, args.prompts))
    logger.info("%s", figures.render())


if __name__ == "__main__":
    main()
