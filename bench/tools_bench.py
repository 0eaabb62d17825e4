"""Tool round trips (the tools issue): read, write with permission, cancel during a command.

Each figure is a whole prompt turn on a warm session driven by a `--fake-responses`
script: the model asks for a tool, the agent runs it (asking the client first for
a write; the bench client answers "Allow" at once), sends the result back to the
model, and the model's next line ends the turn. The floor is the echo agent's
nearest equivalent in the same run: a plain prompt for the read, a prompt that
asks one permission (`/ask`) for the write, a `/wait` prompt cancelled for the
command.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from bench.client import AgentProcess, Message
from bench.common import WARM_PAUSE_S, AgentSpec, Metric, Sandbox, adk_spec, echo_spec, settle
from bench.script import call, line

COMMAND_MARK = "bench-command-started"


def tools_script(turns: int) -> str:
    """Per measured turn: a tool call line and a closing text line (reads, writes); one line
    per cancelled command."""
    done = line({"text": "Done."})
    lines = [line({"text": "Ready."})]  # the warm-up prompt
    for _ in range(turns):
        lines += [line(call("read_file", {"file_path": "README.md"})), done]
    for i in range(turns):
        lines += [
            line(call("write_file", {"file_path": f"out/bench_{i}.txt", "content": f"line {i}\n"})),
            done,
        ]
    for _ in range(turns):  # cancelled during the command: the model is not called again
        command = f"echo {COMMAND_MARK}; sleep 30"
        lines.append(line(call("run_shell_command", {"command": command})))
    return "".join(lines)


def _started_command(msg: Message, session_id: str) -> bool:
    """A tool_call_update showing the command's output marker (the command is running)."""
    if msg.get("method") != "session/update":
        return False
    params = msg.get("params") or {}
    update = params.get("update") or {}
    return (
        params.get("sessionId") == session_id
        and update.get("sessionUpdate") == "tool_call_update"
        and COMMAND_MARK in json.dumps(update.get("content") or [])
    )


def _turns(agent: AgentProcess, session_id: str, text: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        agent.drain(WARM_PAUSE_S)
        turn = agent.prompt(session_id, text)
        if turn.stop_reason != "end_turn":
            raise RuntimeError(f"{text!r} ended with {turn.response}")
        out.append(turn.to_end)
    return out


def _echo(spec: AgentSpec) -> bool:
    """The floor (bench/echo_agent.py) is driven by its own commands; ours by the script."""
    return spec.cancel_text == "/wait"


def _cancels(agent: AgentProcess, spec: AgentSpec, session_id: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        agent.drain(WARM_PAUSE_S)
        turn = agent.start_prompt(session_id, "/wait" if _echo(spec) else "run it")
        if not _echo(spec):
            agent.wait_for(lambda m: _started_command(m, session_id), since=turn.mark)
        else:
            agent.drain(0.05)
        sent = agent.notify("session/cancel", {"sessionId": session_id})
        agent.finish_turn(turn)
        if turn.stop_reason != "cancelled" or turn.end is None:
            raise RuntimeError(f"{spec.name}: cancel answered {turn.response}")
        out.append(turn.end - sent)
    return out


def tool_run(spec: AgentSpec, turns: int) -> tuple[list[float], list[float], list[float]]:
    """One warm process: `turns` reads, `turns` approved writes, `turns` cancelled commands."""
    with spec.spawn() as agent:
        agent.initialize().result  # noqa: B018 - raises on an error response
        settle(agent, spec)
        session_id = str(agent.new_session(spec.cwd).result["sessionId"])
        agent.prompt(session_id, "warm up")
        reads = _turns(agent, session_id, "read it", turns)
        writes = _turns(agent, session_id, "/ask" if _echo(spec) else "write it", turns)
        cancels = _cancels(agent, spec, session_id, turns)
        agent.close()
    return reads, writes, cancels


def measure_tools(box: Sandbox, procs: int, turns: int = 5) -> list[Metric]:
    script = box.root / "tools.jsonl"
    script.write_text(tools_script(turns), encoding="utf-8")
    ours = [tool_run(adk_spec(box, script), turns) for _ in range(procs)]
    floor = [tool_run(echo_spec(box), turns) for _ in range(procs)]

    def flat(runs: list[tuple[list[float], list[float], list[float]]], k: int) -> list[float]:
        return [v for run in runs for v in run[k]]

    written = sorted((box.workspace / "out").glob("bench_*.txt"))
    return [
        Metric(
            "tool_read",
            "read_file round trip (prompt → response)",
            "ms",
            flat(ours, 0),
            flat(floor, 0),
            target=0.040,
            note="model → read_file → model → answer; floor: a plain echo prompt",
        ),
        Metric(
            "tool_write",
            "write_file with permission round trip",
            "ms",
            flat(ours, 1),
            flat(floor, 1),
            target=0.060,
            note=f"permission asked and allowed, diff shown, file written ({len(written)} files); "
            "floor: echo prompt asking one permission",
        ),
        Metric(
            "tool_cancel",
            "cancel during a running command",
            "ms",
            flat(ours, 2),
            flat(floor, 2),
            target=0.050,
            note="session/cancel → stopReason cancelled, process group killed; "
            "floor: echo /wait cancelled",
        ),
    ]


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


__all__ = ["measure_tools", "tools_script", "tool_run", "median_ms", "Path"]
