"""Command hooks (settings `hooks.BeforeTool` / `hooks.AfterTool`) in the scheduler's hook slots."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from runtime.host import HeadlessHost
from runtime.protocol import ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.policy.engine import PolicyEngine
from runtime.tools.scheduling.hooks import CommandToolHooks, parse_hook_groups
from runtime.tools.scheduling.scheduler import Scheduler


class Echo(GcliTool):
    name = "echo_tool"
    kind = "other"
    description = "echo"

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def parameters_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"text": {"type": "string"}}}

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        return ToolDisplay(title="echo")

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        self.seen.append(args)
        return ToolResult(llm_content=str(args.get("text")))


def hook_command(tmp_path: Path, name: str, body: str) -> str:
    """A Python hook script: `data` is the parsed stdin; it prints or exits as `body` says."""
    script = tmp_path / f"{name}.py"
    script.write_text(
        "import json, os, sys\ndata = json.load(sys.stdin)\n" + body, encoding="utf-8"
    )
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def hooks_for(tmp_path: Path, settings: dict[str, Any], **kw: Any) -> CommandToolHooks:
    return CommandToolHooks(settings, project_dir=tmp_path, cwd=tmp_path, session_id="sess-9", **kw)


async def run(
    tmp_path: Path, hooks: CommandToolHooks, args: dict[str, Any]
) -> tuple[dict[str, Any], Echo]:
    tool = Echo()
    env = ToolEnv(
        roots=(tmp_path,), host=HeadlessHost(), session_id="sess-9", temp_dir=tmp_path / "tmp"
    )
    scheduler = Scheduler(
        tools={tool.name: tool},
        env=env,
        policy=PolicyEngine(workspace_root=tmp_path),
        mode_getter=lambda: "yolo",
        hooks=hooks,
    )
    return await scheduler.schedule("c1", tool.name, args), tool


async def test_before_hook_gets_json_and_env_and_can_deny(tmp_path: Path) -> None:
    record = tmp_path / "seen.json"
    body = (
        f"open({str(record)!r}, 'w').write(json.dumps([data, os.environ['GEMINI_SESSION_ID']]))\n"
        "print(json.dumps({'decision': 'deny', 'reason': 'no echoes today'}))\n"
    )
    hooks = hooks_for(
        tmp_path,
        {
            "BeforeTool": [
                {"hooks": [{"type": "command", "command": hook_command(tmp_path, "h", body)}]}
            ]
        },
    )
    result, tool = await run(tmp_path, hooks, {"text": "hi"})
    assert result == {"error": "Tool execution blocked: no echoes today"}
    assert tool.seen == []
    data, session = json.loads(record.read_text(encoding="utf-8"))
    assert session == "sess-9"
    assert data["hook_event_name"] == "BeforeTool" and data["tool_name"] == "echo_tool"
    assert (
        data["tool_input"] == {"text": "hi"}
        and data["session_id"] == "sess-9"
        and data["cwd"] == str(tmp_path)
    )


async def test_exit_code_two_denies_with_the_text(tmp_path: Path) -> None:
    body = "sys.stderr.write('blocked by exit code')\nsys.exit(2)\n"
    hooks = hooks_for(
        tmp_path,
        {
            "BeforeTool": [
                {"matcher": "echo_.*", "hooks": [{"command": hook_command(tmp_path, "h", body)}]}
            ]
        },
    )
    result, _ = await run(tmp_path, hooks, {"text": "hi"})
    assert result == {"error": "Tool execution blocked: blocked by exit code"}


async def test_matcher_selects_tools(tmp_path: Path) -> None:
    body = "sys.exit(2)\n"
    hooks = hooks_for(
        tmp_path,
        {
            "BeforeTool": [
                {
                    "matcher": "run_shell_command",
                    "hooks": [{"command": hook_command(tmp_path, "h", body)}],
                }
            ]
        },
    )
    result, _ = await run(tmp_path, hooks, {"text": "hi"})
    assert result == {"output": "hi"}


async def test_hooks_can_rewrite_input_sequentially(tmp_path: Path) -> None:
    rewrite = "text = data['tool_input']['text'] + 'SUFFIX'\n" + (
        "print(json.dumps({'hookSpecificOutput': {'tool_input': {'text': text}}}))\n"
    )
    first, second = rewrite.replace("SUFFIX", "-1"), rewrite.replace("SUFFIX", "-2")
    settings = {
        "BeforeTool": [
            {
                "sequential": True,
                "hooks": [
                    {"command": hook_command(tmp_path, "a", first)},
                    {"command": hook_command(tmp_path, "b", second)},
                ],
            }
        ]
    }
    result, tool = await run(tmp_path, hooks_for(tmp_path, settings), {"text": "x"})
    assert tool.seen == [{"text": "x-1-2"}]
    assert result["output"].startswith("x-1-2\n\n(A hook changed these arguments")


async def test_a_timed_out_hook_is_not_a_decision(tmp_path: Path) -> None:
    body = "import time\ntime.sleep(5)\nsys.exit(2)\n"
    hooks = hooks_for(
        tmp_path,
        {
            "BeforeTool": [
                {"hooks": [{"command": hook_command(tmp_path, "h", body), "timeout": 200}]}
            ]
        },
    )
    result, _ = await run(tmp_path, hooks, {"text": "hi"})
    assert result == {"output": "hi"}


async def test_after_hook_adds_context_and_sees_the_response(tmp_path: Path) -> None:
    body = (
        "ctx = 'saw ' + data['tool_response']['llmContent']\n"
        "out = {'hookEventName': 'AfterTool', 'additionalContext': ctx}\n"
        "print(json.dumps({'hookSpecificOutput': out}))\n"
    )
    hooks = hooks_for(
        tmp_path, {"AfterTool": [{"hooks": [{"command": hook_command(tmp_path, "h", body)}]}]}
    )
    result, _ = await run(tmp_path, hooks, {"text": "hello"})
    assert result == {"output": "hello\n\n<hook_context>saw hello</hook_context>"}


async def test_disabled_and_non_command_hooks_are_skipped(tmp_path: Path) -> None:
    deny = hook_command(tmp_path, "h", "sys.exit(2)\n")
    settings = {
        "BeforeTool": [
            {"hooks": [{"command": deny, "name": "strict"}, {"type": "plugin", "command": deny}]},
            "not an object",
        ]
    }
    assert parse_hook_groups(settings, "BeforeTool", disabled=["strict"]) == ()
    result, _ = await run(
        tmp_path, hooks_for(tmp_path, settings, disabled=["strict"]), {"text": "hi"}
    )
    assert result == {"output": "hi"}
