"""The `serve` group: N concurrent remote sessions × P prompts against `adk-acp serve`
on loopback (issue 24), each session on its own WebSocket connection.

Prints the prompt latency (p50, p99), the errors, any cross-talk (a session seeing
another's updates, or text that is not its own) and the server's memory per idle
connection. Hermetic: a temporary HOME, a random token, free ports.

- one instance (default): the sessions in local files, a scripted model
  (`--fake-responses`);
- `--pair`: two instances sharing one PostgreSQL (`--store URL`, or a throwaway
  cluster started with the tests' `tests/pg_cluster.py`), the sessions spread over
  both, the model a fake Gemini server (`tests/fakes/gemini_server.py`, on its own
  thread) that echoes each prompt, so each session checks every answer is its own.

    .venv/bin/python -m bench.serve_bench --sessions 50 --prompts 10
    .venv/bin/python -m bench.serve_bench --pair --sessions 50 --prompts 10
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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    instances: int = 1

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    def render(self) -> str:
        per_connection = (self.rss_connected_mb - self.rss_idle_mb) / max(1, self.connections)
        return "\n".join(
            [
                f"instances: {self.instances}, "
                f"prompts: {len(self.latencies_ms)}, errors: {len(self.errors)}, "
                f"cross-talk: {self.cross_talk}",
                f"prompt latency p50 {self.percentile(0.5):.1f} ms, "
                f"p99 {self.percentile(0.99):.1f} ms, "
                f"mean {statistics.fmean(self.latencies_ms or [0]):.1f} ms",
                f"server RSS (one instance) {self.rss_idle_mb:.0f} MB idle, "
                f"{self.rss_connected_mb:.0f} MB with "
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
    url: str, token: str, cwd: Path, prompts: int, figures: ServeFigures, tag: str | None = None
) -> None:
    """One connection, one session, `prompts` turns; with `tag` (an echoing model) each
    answer must be `echo: <its own prompt>`."""
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        client = _Client(ws)
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = await client.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        sid = str(session["sessionId"])
        for n in range(prompts):
            started = time.perf_counter()
            said = f"{tag or 's'} prompt {n}"
            before = len(client.texts.get(sid, ""))
            try:
                block = {"type": "text", "text": said}
                await client.request("session/prompt", {"sessionId": sid, "prompt": [block]})
                figures.latencies_ms.append((time.perf_counter() - started) * 1000)
            except (RuntimeError, TimeoutError) as exc:
                figures.errors.append(str(exc))
                continue
            if tag is not None and client.texts.get(sid, "")[before:] != f"echo: {said}":
                figures.cross_talk += 1
        figures.cross_talk += sum(1 for other in client.texts if other != sid)
        client.reader.cancel()


async def _start(
    box: Sandbox, token: str, args: list[str], env: dict[str, str]
) -> tuple[asyncio.subprocess.Process, str]:
    """`adk-acp serve ARGS` on a free port: the process and its WebSocket URL."""
    home = Path(env.get("HOME", str(box.home)))
    home.mkdir(parents=True, exist_ok=True)
    process = await asyncio.create_subprocess_exec(
        *adk_acp_command(), "serve", "--port", "0", "--log-level", "WARNING", *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, env=box.env(ADK_ACP_TOKEN=token, **env),
        cwd=str(home),
    )  # fmt: skip
    assert process.stderr is not None
    first = await asyncio.wait_for(process.stderr.readline(), 120)
    match = READY.search(first)
    if match is None:
        process.kill()
        raise SystemExit(f"serve did not start: {first!r}")
    return process, f"ws://{match.group(1).decode()}:{int(match.group(2))}/acp"


async def _idle_connections(url: str, token: str, count: int, pid: int) -> float:
    """The server's RSS (MB) with `count` idle connections open."""
    held = [
        await connect(url, additional_headers={"Authorization": f"Bearer {token}"})
        for _ in range(count)
    ]
    rss = _rss_mb(pid)
    for ws in held:
        await ws.close()
    return rss


async def measure(
    box: Sandbox, sessions: int, prompts: int, store_url: str | None = None
) -> ServeFigures:
    """Start `adk-acp serve` (two sharing the database `store_url` if given), run the
    sessions at once (spread over the instances), stop them."""
    if store_url is not None:
        return await _measure_pair(box, sessions, prompts, store_url)
    token = secrets.token_hex(16)
    script = box.root / "serve.jsonl"
    script.write_text(fake_script(sessions * prompts, 0), encoding="utf-8")
    args = ["--fake-responses", str(script), "--max-connections", str(sessions + 8)]
    process, url = await _start(box, token, args, {})
    figures = ServeFigures(connections=sessions)
    try:
        figures.rss_idle_mb = _rss_mb(process.pid)
        figures.rss_connected_mb = await _idle_connections(url, token, sessions, process.pid)
        await asyncio.gather(
            *(_one_session(url, token, box.workspace, prompts, figures) for _ in range(sessions))
        )
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 60)
    return figures


async def _measure_pair(box: Sandbox, sessions: int, prompts: int, store_url: str) -> ServeFigures:
    from tests.fakes.gemini_server import FakeGeminiServer

    token = secrets.token_hex(16)
    figures = ServeFigures(connections=sessions, instances=2)
    with FakeGeminiServer(default=_echo) as model:
        env = {"GEMINI_API_KEY": "bench", "GOOGLE_GEMINI_BASE_URL": model.base_url}
        args = ["--store", store_url, "--max-connections", str(sessions + 8)]
        started = [
            await _start(box, token, args, {**env, "HOME": str(box.root / f"home{n}")})
            for n in range(2)
        ]
        try:
            pid, url = started[0][0].pid, started[0][1]
            figures.rss_idle_mb = _rss_mb(pid)
            figures.rss_connected_mb = await _idle_connections(url, token, sessions, pid)
            await asyncio.gather(
                *(
                    _one_session(started[n % 2][1], token, box.workspace, prompts, figures, f"s{n}")
                    for n in range(sessions)
                )
            )
        finally:
            for process, _ in started:
                process.terminate()
            for process, _ in started:
                await asyncio.wait_for(process.wait(), 60)
    return figures


_ASKED = re.compile(r"s\d+ prompt \d+")


def _echo(request: Any) -> Any:
    """The fake model's answer: `echo: ` and the prompt it was sent (the last one)."""
    from tests.fakes.gemini_server import text_response

    contents = (request.body or {}).get("contents") or []
    said = [
        found
        for content in contents
        if content.get("role") == "user"
        for part in content.get("parts", [])
        for found in _ASKED.findall(str(part.get("text", "")))
    ]
    return text_response(["echo: ", said[-1] if said else "?"])


@contextmanager
def throwaway_database() -> Iterator[str]:
    """A PostgreSQL cluster for one run (`tests/pg_cluster.py`): its database's URL."""
    from tests.pg_cluster import Cluster, ensure_installed

    cluster = Cluster.start(ensure_installed())
    try:
        yield cluster.url(cluster.create_database())
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--prompts", type=int, default=10)
    parser.add_argument(
        "--pair", action="store_true", help="two instances sharing one PostgreSQL database"
    )
    parser.add_argument("--store", help="the database of --pair (default: a throwaway cluster)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with sandbox() as box:
        if not args.pair:
            figures = asyncio.run(measure(box, args.sessions, args.prompts))
        elif args.store:
            figures = asyncio.run(measure(box, args.sessions, args.prompts, args.store))
        else:
            with throwaway_database() as url:
                figures = asyncio.run(measure(box, args.sessions, args.prompts, url))
    logger.info("%s", figures.render())


if __name__ == "__main__":
    main()
