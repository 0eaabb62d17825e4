"""The fuzz tier (issue #8): thousands of hostile lines to ONE real agent process.

Asserts: the process never dies; every stdout line is strict JSON-RPC 2.0; every
request with a valid id on a line that is still JSON is answered exactly once,
with a result or a spec-correct error code (never -32603 for the client's
garbage); memory grows by at most 30 MB and stderr stays under 1 MB; a normal
session works afterwards.

The default run sends 1 500 lines (it runs in `.ci/run`); `ADK_ACP_FUZZ_FULL=1`
sends 10 000 (or `ADK_ACP_FUZZ_MESSAGES=N`). Figures are printed.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_client import AGENT_COMMAND, CLEARED_ENV
from tests.fuzz.messages import VALID_CODES, Fuzzer

pytestmark = pytest.mark.e2e

FULL = os.environ.get("ADK_ACP_FUZZ_FULL") == "1"
COUNT = int(os.environ.get("ADK_ACP_FUZZ_MESSAGES") or (10_000 if FULL else 1_500))
SEED = int(os.environ.get("ADK_ACP_FUZZ_SEED") or 8)
AGENT_REQUESTS = frozenset(
    {"session/request_permission", "fs/read_text_file", "fs/write_text_file"}
)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _problem(line: bytes) -> str | None:
    """What is wrong with one stdout line as JSON-RPC 2.0 (None: nothing)."""
    try:
        message = json.loads(line, parse_constant=_reject_constant)
    except ValueError as exc:
        return f"not strict JSON ({exc})"
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return "not a JSON-RPC 2.0 object"
    if "method" in message:
        return None if isinstance(message["method"], str) else "method is not a string"
    if "id" not in message:
        return "response without an id field"
    msg_id = message["id"]
    if msg_id is not None and (isinstance(msg_id, bool) or not isinstance(msg_id, int | str)):
        return f"response id of a wrong type: {msg_id!r}"
    if ("result" in message) == ("error" in message):
        return "response needs exactly one of result and error"
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict) or not isinstance(error.get("code"), int):
            return "error without an integer code"
        if "Traceback" in json.dumps(error):
            return "a traceback in an error"
    return None


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


class Peer:
    """The raw client side: writes lines, reads and checks every answer."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.answers: dict[int | str | None, list[dict[str, Any]]] = {}
        self.problems: list[str] = []
        self.stderr_bytes = 0
        self.stderr_tail = b""
        self.tracebacks = 0
        self.first_traceback = b""
        self._waiters: dict[int | str, asyncio.Future[dict[str, Any]]] = {}

    async def read_stdout(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            problem = _problem(line.rstrip(b"\n"))
            if problem is not None:
                self.problems.append(f"{problem}: {line[:300]!r}")
                continue
            message = json.loads(line)
            if "method" in message:
                if message["method"] in AGENT_REQUESTS and "id" in message:
                    self.send(
                        {
                            "jsonrpc": "2.0",
                            "id": message["id"],
                            "result": {"outcome": {"outcome": "cancelled"}},
                        }
                    )
                continue
            self.answers.setdefault(message["id"], []).append(message)
            waiter = self._waiters.pop(message["id"], None)
            if waiter is not None and not waiter.done():
                waiter.set_result(message)

    async def read_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(65536):
            self.stderr_bytes += len(chunk)
            window = self.stderr_tail[-20:] + chunk
            found = window.count(b"Traceback")
            if found and not self.first_traceback:
                self.first_traceback = chunk[max(chunk.find(b"Traceback") - 300, 0) :][:3000]
            self.tracebacks += found
            self.stderr_tail = (self.stderr_tail + chunk)[-4000:]

    def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode())

    async def call(
        self, msg_id: int | str, method: str, params: Any, timeout: float = 60
    ) -> dict[str, Any]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters[msg_id] = future
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await asyncio.wait_for(future, timeout)


async def test_fuzzed_messages_never_break_the_agent(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", (tmp_path / "ws")
    home.mkdir()
    workspace.mkdir()
    script = tmp_path / "model.jsonl"
    reply = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
        ]
    }
    script.write_text(
        "".join(
            json.dumps({"method": "generateContentStream", "response": [reply]}) + "\n"
            for _ in range(300)
        )
    )
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    process = await asyncio.create_subprocess_exec(
        *AGENT_COMMAND,
        "--fake-responses",
        str(script),
        "--max-turns",
        "3",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=workspace,
        limit=2**26,
    )
    peer = Peer(process)
    readers = [asyncio.create_task(peer.read_stdout()), asyncio.create_task(peer.read_stderr())]
    try:
        init = await peer.call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["result"]["protocolVersion"] == 1
        new = await peer.call(2, "session/new", {"cwd": str(workspace.resolve()), "mcpServers": []})
        session_id = new["result"]["sessionId"]
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "warm up"}]}
        assert (await peer.call(3, "session/prompt", prompt))["result"]["stopReason"] == "end_turn"
        rss_before = _rss_kb(process.pid)

        fuzzer = Fuzzer(SEED, session_id, str(workspace.resolve()))
        expected: list[int | str] = []
        kinds: dict[str, int] = {}
        for index, line in enumerate(fuzzer.lines(COUNT)):
            peer.send_raw(line.data)
            kinds[line.kind] = kinds.get(line.kind, 0) + 1
            if line.answer_id is not None:
                expected.append(line.answer_id)
            if index % 50 == 0:
                assert process.stdin is not None
                await process.stdin.drain()
                await asyncio.sleep(0)
        assert process.stdin is not None
        await process.stdin.drain()

        async def all_answered() -> None:
            while any(msg_id not in peer.answers for msg_id in expected):
                assert process.returncode is None, "the agent died"
                await asyncio.sleep(0.2)

        await asyncio.wait_for(all_answered(), 240)
        await asyncio.sleep(1)  # late duplicates would show now
        rss_after = _rss_kb(process.pid)

        assert process.returncode is None
        assert peer.problems == [], peer.problems[:5]
        duplicates = [i for i in expected if len(peer.answers[i]) != 1]
        assert duplicates == []
        codes: dict[int, int] = {}
        for msg_id in expected:
            answer = peer.answers[msg_id][0]
            if "error" in answer:
                code = answer["error"]["code"]
                codes[code] = codes.get(code, 0) + 1
                assert code in VALID_CODES, answer
        growth_mb = (rss_after - rss_before) / 1024
        print(  # noqa: T201 - the figures of the run
            f"\nfuzz: {COUNT} lines {kinds}; {len(expected)} answered once; codes {codes}; "
            f"RSS {rss_before // 1024} -> {rss_after // 1024} MB; "
            f"stderr {peer.stderr_bytes} bytes, "
            f"{peer.tracebacks} tracebacks"
        )
        assert growth_mb <= 30, f"RSS grew {growth_mb:.1f} MB"
        assert peer.stderr_bytes <= 1_000_000, peer.stderr_tail[-2000:]
        assert peer.tracebacks == 0, peer.first_traceback.decode(errors="replace")

        after = await peer.call(
            "after-1", "session/new", {"cwd": str(workspace.resolve()), "mcpServers": []}
        )
        fresh = after["result"]["sessionId"]
        ok = await peer.call(
            "after-2",
            "session/prompt",
            {"sessionId": fresh, "prompt": [{"type": "text", "text": "hi"}]},
        )
        assert ok["result"]["stopReason"] == "end_turn"
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
