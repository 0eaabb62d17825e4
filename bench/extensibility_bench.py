"""Extensibility figures (the `.gemini/` issue): hooks and MCP start-up.

- A BeforeTool + AfterTool command-hook pair around one call, in process
  (`CommandToolHooks`), against the bare cost of starting the same two processes
  (`/bin/sh -c true`, twice): the hooks' own overhead is the difference, target
  ≤ 30 ms per call.
- A subagent invocation (its own session, one model call answering `complete_task`)
  against one direct model turn of the parent, in process: the subagent's own
  overhead, target ≤ 50 ms.
- `session/new` in a warm agent whose settings declare three stdio MCP servers,
  against the same agent without them: the servers start in the background, so the
  target is ≤ 20 ms (as without servers).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

from bench.common import Metric, Sandbox, adk_spec, settle

ROOT = Path(__file__).resolve().parent.parent
HOOK = "cat >/dev/null; echo '{}'"


async def _hook_pairs(box: Sandbox, n: int) -> tuple[list[float], list[float]]:
    from runtime.tools.base import ToolResult
    from runtime.tools.scheduling.hooks import CommandToolHooks

    settings = {
        event: [{"matcher": "", "hooks": [{"type": "command", "command": HOOK}]}]
        for event in ("BeforeTool", "AfterTool")
    }
    hooks = CommandToolHooks(settings, cwd=box.workspace, session_id="bench")
    result = ToolResult(llm_content="file contents")
    pairs, bare = [], []
    for _ in range(n):
        t = time.perf_counter()
        await hooks.before_tool("read_file", {"file_path": "README.md"})
        await hooks.after_tool("read_file", {"file_path": "README.md"}, result)
        pairs.append(time.perf_counter() - t)
        t = time.perf_counter()
        for _ in range(2):
            process = await asyncio.create_subprocess_shell(
                "true", stdin=asyncio.subprocess.DEVNULL, start_new_session=True
            )
            await process.wait()
        bare.append(time.perf_counter() - t)
    return pairs, bare


def hook_pair_cost(box: Sandbox, n: int = 20) -> tuple[list[float], list[float]]:
    return asyncio.run(_hook_pairs(box, n))


def session_new_with_servers(box: Sandbox, n: int) -> tuple[list[float], list[float]]:
    """(with three stdio MCP servers in settings, without), one warm process each."""
    server = str(ROOT / "tests" / "fakes" / "mcp_server.py")
    figures: list[list[float]] = []
    for servers in (3, 0):
        workspace = box.root / f"ws-mcp-{servers}"
        (workspace / ".gemini").mkdir(parents=True, exist_ok=True)
        settings = {
            "mcpServers": {
                f"s{i}": {"command": sys.executable, "args": [server]} for i in range(servers)
            }
        }
        (workspace / ".gemini" / "settings.json").write_text(json.dumps(settings))
        spec = adk_spec(box, box.script(f"mcp-{servers}.jsonl", short_turns=1, stream_turns=0))
        times = []
        with spec.spawn() as agent:
            agent.initialize().result  # noqa: B018
            settle(agent, spec)
            for _ in range(n):
                agent.drain(3.0)  # the previous servers have started: no CPU contention
                t = time.perf_counter()
                created = agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
                created.result  # noqa: B018
                times.append(created.t - t)
            agent.close()
        figures.append(times)
    return figures[0], figures[1]


def measure_extensibility(box: Sandbox, procs: int) -> list[Metric]:
    pairs, bare = hook_pair_cost(box)
    overhead = [p - b for p, b in zip(pairs, bare, strict=True)]
    with_servers, without = session_new_with_servers(box, max(3, procs))
    invocations, turns = subagent_overhead(box)
    own = [i - t for i, t in zip(invocations, turns, strict=True)]
    return [
        Metric(
            "subagent_overhead",
            "a subagent invocation's own overhead (beyond its model call)",
            "ms",
            own,
            target=0.050,
            note=f"invocation {statistics.median(invocations) * 1000:.1f} ms vs one direct "
            f"model turn {statistics.median(turns) * 1000:.1f} ms, in process, scripted model",
        ),
        Metric(
            "hook_pair",
            "BeforeTool + AfterTool hook pair, per call",
            "ms",
            pairs,
            bare,
            note="baseline: starting the same two processes bare (sh -c true ×2)",
        ),
        Metric(
            "hook_overhead",
            "hook pair's own overhead beyond the process starts",
            "ms",
            overhead,
            target=0.030,
        ),
        Metric(
            "session_new_mcp",
            "session/new with 3 stdio MCP servers in settings",
            "ms",
            with_servers,
            without,
            target=0.020,
            note="baseline: session/new without servers; the servers start in the background",
        ),
    ]


async def _subagent_overhead(box: Sandbox, n: int) -> tuple[list[float], list[float]]:
    """(a subagent invocation whose model answers complete_task at once, one direct
    model turn of the parent): the difference is the subagent's own overhead."""
    import logging
    import uuid

    from runtime.agents.definitions import CODEBASE_INVESTIGATOR
    from runtime.agents.subagent import SubagentTool
    from runtime.config import AgentFlags, resolve_config
    from runtime.host import HeadlessHost
    from runtime.models.fake_generator import FakeContentGenerator
    from runtime.protocol import MessageSend, TextPart
    from runtime.session import SessionSpec, create_session
    from runtime.tools.base import ToolEnv

    logging.getLogger("google_adk").setLevel(logging.ERROR)

    def line(parts: list[dict[str, object]]) -> dict[str, object]:
        candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}
        return {"method": "generateContentStream", "response": [{"candidates": [candidate]}]}

    done = line([{"functionCall": {"name": "complete_task", "args": {"result": "found it"}}}])
    text = line([{"text": "an answer"}])
    script = [x for _ in range(n + 1) for x in (done, text)]
    config = resolve_config(box.workspace, AgentFlags(), env={}, home=box.home)
    parent = await create_session(
        SessionSpec(
            config=config,
            auth=None,
            host=HeadlessHost(),
            session_id=uuid.uuid4().hex,
            generator=FakeContentGenerator(script),
        )
    )
    tool = SubagentTool(CODEBASE_INVESTIGATOR, lambda: parent, create_session)
    env = ToolEnv(roots=(box.workspace,), host=HeadlessHost(), session_id="b", temp_dir=box.root)
    invocations, turns = [], []
    try:
        for i in range(n + 1):
            t = time.perf_counter()
            result = await tool.execute({"task": "where is main?"}, env)
            spent = time.perf_counter() - t
            assert result.llm_content == "found it", result.llm_content
            t = time.perf_counter()
            await parent.send(MessageSend(content=(TextPart(text="hi"),)))
            await parent.protocol.wait()
            if i:  # the first of each warms up
                invocations.append(spent)
                turns.append(time.perf_counter() - t)
    finally:
        await parent.close()
    return invocations, turns


def subagent_overhead(box: Sandbox, n: int = 10) -> tuple[list[float], list[float]]:
    return asyncio.run(_subagent_overhead(box, n))
