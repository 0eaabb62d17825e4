"""Scheduler pipeline: lookup, validation, hooks, policy before I/O, execution,
truncation, events."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from runtime.errors import ToolError
from runtime.host import Host, PermissionOutcome, PermissionRequest
from runtime.protocol import (
    DisplayContent,
    DisplayDiff,
    DisplayText,
    ToolDisplay,
    ToolKind,
    ToolLocation,
)
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.policy.engine import PolicyDecision, PolicyEngine
from runtime.tools.policy.rules import Decision, PolicyRule
from runtime.tools.scheduling.hooks import AfterToolOutcome, BeforeToolOutcome, HookStopRequested
from runtime.tools.scheduling.scheduler import Scheduler, ToolCallOutcome

# ---------------------------------------------------------------- fakes


class FakeHost(Host):
    """Answers every permission request with `answer`, recording requests."""

    def __init__(self, answer: str | None = "proceed_once") -> None:
        self.answer = answer
        self.requests: list[PermissionRequest] = []
        self.notices: list[str] = []
        self.log: list[str] | None = None

    async def request_permission(self, request: PermissionRequest) -> PermissionOutcome:
        self.requests.append(request)
        if self.log is not None:
            self.log.append("approval")
        return PermissionOutcome(option_id=self.answer)


class FakeTool(GcliTool):
    """Records what happens to it; returns `output` (or raises `error`)."""

    def __init__(
        self,
        name: str,
        *,
        kind: ToolKind = "other",
        output: str = "done",
        error: Exception | None = None,
        required: tuple[str, ...] = (),
        progress: tuple[str, ...] = (),
        log: list[str] | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self.description = f"fake {name}"
        self.output = output
        self.error = error
        self.required = required
        self.progress = progress
        self.log = log
        self.executed: list[dict[str, Any]] = []
        self.previewed = 0

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "command": {"type": "string"},
                "n": {"type": "integer"},
            },
            "required": list(self.required),
        }

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        path = args.get("file_path")
        locations = (ToolLocation(path=str(path)),) if path else ()
        return ToolDisplay(
            title=f"{self.name} {path or args.get('command', '')}".strip(),
            kind=self.kind,
            locations=locations,
        )

    async def preview(self, args: dict[str, Any], env: ToolEnv) -> tuple[DisplayContent, ...]:
        self.previewed += 1
        if self.kind == "edit":
            return (
                DisplayDiff(path=str(args.get("file_path")), before_text="old", after_text="new"),
            )
        return ()

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        if self.log is not None:
            self.log.append("execute")
        self.executed.append(dict(args))
        for text in self.progress:
            assert env.on_progress is not None
            await env.on_progress((DisplayText(text=text),))
        if self.error is not None:
            raise self.error
        return ToolResult(llm_content=self.output, raw_output={"ok": True})


@dataclass
class RecordingSink:
    events: list[tuple[str, str, Any]] = field(default_factory=list)
    waiting: list[tuple[str, bool]] = field(default_factory=list)

    async def tool_requested(
        self, call_id: str, name: str, args: dict[str, Any], display: ToolDisplay
    ) -> None:
        self.events.append(("requested", call_id, display))

    async def tool_updated(
        self, call_id: str, status: Literal["pending", "in_progress"], display: ToolDisplay | None
    ) -> None:
        self.events.append((status, call_id, display))

    async def tool_finished(self, call_id: str, name: str, outcome: ToolCallOutcome) -> None:
        self.events.append((outcome.status, call_id, outcome))

    async def tool_waiting(self, call_id: str, waiting: bool) -> None:
        self.waiting.append((call_id, waiting))

    def kinds(self, call_id: str | None = None) -> list[str]:
        return [kind for kind, cid, _ in self.events if call_id is None or cid == call_id]


@dataclass
class Harness:
    scheduler: Scheduler
    host: FakeHost
    sink: RecordingSink
    policy: PolicyEngine
    root: Path
    temp: Path


def make(
    tmp_path: Path, *tools: GcliTool, mode: str = "default", interactive: bool = True, **kw: Any
) -> Harness:
    root = tmp_path / "ws"
    temp = tmp_path / "tmp"
    root.mkdir(exist_ok=True)
    host: FakeHost = kw.pop("host", None) or FakeHost()
    sink = RecordingSink()
    policy: PolicyEngine = kw.pop("policy", None) or PolicyEngine(workspace_root=root)
    env = ToolEnv(roots=(root,), host=host, session_id="s1", temp_dir=temp)
    scheduler = Scheduler(
        tools={t.name: t for t in tools},
        env=env,
        policy=kw.pop("policy_checker", policy),
        mode_getter=lambda: mode,
        events=sink,
        interactive=interactive,
        notify=host.notices.append,
        **kw,
    )
    return Harness(scheduler, host, sink, policy, root, temp)


# ---------------------------------------------------------------- basics


async def test_allowed_call_runs_and_reports_pending_in_progress_completed(tmp_path: Path) -> None:
    tool = FakeTool("read_file", kind="read", output="file text")
    h = make(tmp_path, tool)
    result = await h.scheduler.schedule("c1", "read_file", {"file_path": "a.txt"})
    assert result == {"output": "file text"}
    assert tool.executed == [{"file_path": "a.txt"}]
    assert h.host.requests == []
    assert h.sink.kinds() == ["requested", "in_progress", "completed"]
    outcome = h.sink.events[-1][2]
    assert outcome.raw_output == {"ok": True} and outcome.display.title == "read_file a.txt"


async def test_unknown_tool_is_an_error_result(tmp_path: Path) -> None:
    h = make(tmp_path, FakeTool("glob"))
    result = await h.scheduler.schedule("c1", "nope", {})
    assert result == {"error": 'Tool "nope" not found. Available tools: glob.'}
    assert h.sink.kinds() == ["requested", "failed"]


async def test_invalid_args_are_refused_before_anything_runs(tmp_path: Path) -> None:
    tool = FakeTool("glob", required=("file_path",))
    h = make(tmp_path, tool)
    missing = await h.scheduler.schedule("c1", "glob", {})
    wrong_type = await h.scheduler.schedule("c2", "glob", {"file_path": "x", "n": "seven"})
    assert "missing required parameter(s): file_path" in missing["error"]
    assert "'n' must be of type integer" in wrong_type["error"]
    assert tool.executed == [] and tool.previewed == 0


async def test_deny_rule_blocks_a_read_before_any_io(tmp_path: Path) -> None:
    tool = FakeTool("read_file", kind="read", output="SECRET=1")
    h = make(tmp_path, tool)
    policies = h.root / ".gemini" / "policies"
    policies.mkdir(parents=True)
    (policies / "secrets.toml").write_text(
        '[[rule]]\ntoolName = "read_file"\nargsPattern = \'\\.env\'\ndecision = "deny"\n'
        'priority = 900\ndenyMessage = "Secrets stay private."\n',
        encoding="utf-8",
    )
    h.policy.reload()
    result = await h.scheduler.schedule("c1", "read_file", {"file_path": ".env"})
    assert result == {"error": "Tool execution denied by policy: Secrets stay private."}
    assert tool.executed == [] and tool.previewed == 0 and h.host.requests == []
    assert h.sink.kinds() == ["requested", "failed"]
    assert (await h.scheduler.schedule("c2", "read_file", {"file_path": "README.md"})) == {
        "output": "SECRET=1"
    }


async def test_paths_outside_the_workspace_are_refused(tmp_path: Path) -> None:
    tool = FakeTool("read_file", kind="read")
    h = make(tmp_path, tool)
    result = await h.scheduler.schedule("c1", "read_file", {"file_path": "../outside.txt"})
    assert "outside the workspace" in result["error"]
    ok = await h.scheduler.schedule(
        "c2", "read_file", {"file_path": str(h.temp / "tool-outputs" / "x.txt")}
    )
    assert ok == {"output": "done"}  # the project temp dir is allowed
    assert tool.executed == [{"file_path": str(h.temp / "tool-outputs" / "x.txt")}]


class DoomedEdit(FakeTool):
    """An edit whose preview finds it cannot apply."""

    async def preview(self, args: dict[str, Any], env: ToolEnv) -> tuple[DisplayContent, ...]:
        self.previewed += 1
        raise ToolError("old_string occurs 2 times")


async def test_a_call_whose_preview_says_it_cannot_succeed_fails_without_asking(
    tmp_path: Path,
) -> None:
    tool = DoomedEdit("replace", kind="edit")
    h = make(tmp_path, tool)
    result = await h.scheduler.schedule("c1", "replace", {"file_path": "a.txt"})
    assert result == {"error": "old_string occurs 2 times"}
    assert h.host.requests == [] and tool.executed == [] and tool.previewed == 1
    assert h.sink.kinds() == ["requested", "failed"]


async def test_a_raising_tool_becomes_an_error_result(tmp_path: Path) -> None:
    h = make(tmp_path, FakeTool("glob", error=RuntimeError("disk on fire")))
    result = await h.scheduler.schedule("c1", "glob", {})
    assert result == {"error": "Error executing tool glob: disk on fire"}
    assert h.sink.kinds() == ["requested", "in_progress", "failed"]


async def test_progress_is_reported_as_updates(tmp_path: Path) -> None:
    h = make(
        tmp_path,
        FakeTool("run_shell_command", kind="execute", progress=("line 1", "line 2")),
        mode="yolo",
    )
    await h.scheduler.schedule("c1", "run_shell_command", {"command": "make"})
    assert h.sink.kinds() == ["requested", "in_progress", "in_progress", "in_progress", "completed"]
    updates = [d for kind, _, d in h.sink.events if kind == "in_progress" and d is not None]
    assert [u.content[0].text for u in updates] == ["line 1", "line 2"]


async def test_non_interactive_sessions_deny_what_would_be_asked(tmp_path: Path) -> None:
    tool = FakeTool("write_file", kind="edit")
    h = make(tmp_path, tool, interactive=False)
    result = await h.scheduler.schedule("c1", "write_file", {"file_path": "a.py"})
    assert result["error"].startswith("Tool execution denied by policy")
    assert tool.executed == [] and h.host.requests == []


async def test_edit_result_shows_the_diff(tmp_path: Path) -> None:
    h = make(tmp_path, FakeTool("write_file", kind="edit"), mode="autoEdit")
    await h.scheduler.schedule("c1", "write_file", {"file_path": "a.py"})
    requested, final = h.sink.events[0][2], h.sink.events[-1][2]
    assert isinstance(requested.content[0], DisplayDiff)
    assert final.status == "completed" and isinstance(final.display.content[0], DisplayDiff)


# ---------------------------------------------------------------- truncation


async def test_large_shell_output_is_truncated_and_saved(tmp_path: Path) -> None:
    output = "".join(chr(ord("a") + i % 26) for i in range(50_000))
    h = make(tmp_path, FakeTool("run_shell_command", kind="execute", output=output), mode="yolo")
    result = await h.scheduler.schedule("call/7", "run_shell_command", {"command": "cat big"})
    path = h.temp / "tool-outputs" / "session-s1" / "run_shell_command_call_7.txt"
    assert path.read_text(encoding="utf-8") == output
    expected = (
        "Output too large. Showing first 8,000 and last 32,000 characters. "
        f"For full output see: {path}\n"
        f"{output[:8000]}\n\n... [10,000 characters omitted] ...\n\n{output[-32000:]}"
    )
    assert result == {"output": expected}


async def test_small_output_and_other_tools_are_not_truncated(tmp_path: Path) -> None:
    big = "x" * 50_000
    h = make(
        tmp_path,
        FakeTool("read_file", kind="read", output=big),
        FakeTool("run_shell_command", output="short"),
    )
    assert (await h.scheduler.schedule("c1", "read_file", {"file_path": "a"})) == {"output": big}
    assert not (h.temp / "tool-outputs").exists()


async def test_threshold_is_configurable(tmp_path: Path) -> None:
    h = make(
        tmp_path, FakeTool("mcp_srv_dump", output="y" * 200), mode="yolo", truncate_threshold=100
    )
    result = await h.scheduler.schedule("c1", "mcp_srv_dump", {})
    assert result["output"].startswith("Output too large. Showing first 20 and last 80 characters.")
    assert "... [100 characters omitted] ..." in result["output"]


# ---------------------------------------------------------------- hooks


class RecordingPolicy:
    """Wraps a real engine and logs each evaluation."""

    def __init__(self, inner: PolicyEngine, log: list[str]) -> None:
        self.inner, self.log = inner, log

    def evaluate(self, tool_name: str, args: dict[str, Any], **kw: Any) -> PolicyDecision:
        self.log.append("policy")
        return self.inner.evaluate(tool_name, args, **kw)

    def add_session_rule(
        self, tool_name: str, args: dict[str, Any], *, mode: str, decision: Decision = "allow"
    ) -> PolicyRule:
        return self.inner.add_session_rule(tool_name, args, mode=mode, decision=decision)

    def save_rule(self, tool_name: str, args: dict[str, Any], *, mode: str) -> PolicyRule:
        return self.inner.save_rule(tool_name, args, mode=mode)


class ScriptedHooks:
    def __init__(
        self,
        log: list[str] | None = None,
        before: BeforeToolOutcome | None = None,
        after: AfterToolOutcome | None = None,
    ) -> None:
        self.log = log if log is not None else []
        self.before = before or BeforeToolOutcome()
        self.after = after or AfterToolOutcome()
        self.seen_results: list[ToolResult] = []

    async def before_tool(
        self, name: str, args: dict[str, Any], context: Any = None
    ) -> BeforeToolOutcome:
        self.log.append("before")
        return self.before

    async def after_tool(
        self, name: str, args: dict[str, Any], result: ToolResult, context: Any = None
    ) -> AfterToolOutcome:
        truncated = result.llm_content.startswith("Output too large.")
        self.log.append("after(truncated)" if truncated else "after")
        self.seen_results.append(result)
        return self.after


async def test_hook_slots_run_in_order(tmp_path: Path) -> None:
    log: list[str] = []
    tool = FakeTool("run_shell_command", kind="execute", output="z" * 41_000, log=log)
    host = FakeHost()
    host.log = log
    root = tmp_path / "ws"
    root.mkdir()
    engine = PolicyEngine(workspace_root=root)
    h = make(
        tmp_path,
        tool,
        host=host,
        policy=engine,
        policy_checker=RecordingPolicy(engine, log),
        hooks=ScriptedHooks(log),
    )
    await h.scheduler.schedule("c1", "run_shell_command", {"command": "npm test"})
    # the policy is consulted again when the call's turn to ask comes (an earlier
    # "always" answer may have settled it meanwhile)
    assert log == ["before", "policy", "policy", "approval", "execute", "after(truncated)"]


async def test_before_hook_can_block(tmp_path: Path) -> None:
    tool = FakeTool("glob")
    h = make(
        tmp_path,
        tool,
        hooks=ScriptedHooks(before=BeforeToolOutcome(decision="block", reason="not today")),
    )
    assert (await h.scheduler.schedule("c1", "glob", {})) == {
        "error": "Tool execution blocked: not today"
    }
    assert tool.executed == []


async def test_before_hook_can_rewrite_args_and_they_are_judged_again(tmp_path: Path) -> None:
    tool = FakeTool("read_file", kind="read")
    rewrite = BeforeToolOutcome(tool_input={"file_path": "safe.txt"})
    h = make(tmp_path, tool, hooks=ScriptedHooks(before=rewrite))
    await h.scheduler.schedule("c1", "read_file", {"file_path": "other.txt"})
    assert tool.executed == [{"file_path": "safe.txt"}]
    escape = BeforeToolOutcome(tool_input={"file_path": "/etc/passwd"})
    h2 = make(tmp_path, FakeTool("read_file"), hooks=ScriptedHooks(before=escape))
    assert (
        "outside the workspace"
        in (await h2.scheduler.schedule("c1", "read_file", {"file_path": "a"}))["error"]
    )


async def test_before_hook_can_force_a_question(tmp_path: Path) -> None:
    tool = FakeTool("read_file", kind="read")
    h = make(tmp_path, tool, hooks=ScriptedHooks(before=BeforeToolOutcome(decision="ask")))
    await h.scheduler.schedule("c1", "read_file", {"file_path": "a"})
    assert len(h.host.requests) == 1 and tool.executed


async def test_before_hook_can_stop_the_agent(tmp_path: Path) -> None:
    tool = FakeTool("glob")
    stop = BeforeToolOutcome(stop=True, stop_reason="budget spent", system_message="Stopping.")
    h = make(tmp_path, tool, hooks=ScriptedHooks(before=stop))
    with pytest.raises(HookStopRequested, match="budget spent"):
        await h.scheduler.schedule("c1", "glob", {})
    assert tool.executed == [] and h.host.notices == ["Stopping."]
    assert h.sink.kinds() == ["requested", "failed"]


async def test_after_hook_adds_context_or_blocks(tmp_path: Path) -> None:
    context = ScriptedHooks(after=AfterToolOutcome(additional_context="lint: 2 warnings"))
    h = make(tmp_path, FakeTool("glob", output="a.py"), hooks=context)
    assert (await h.scheduler.schedule("c1", "glob", {})) == {
        "output": "a.py\n\n<hook_context>lint: 2 warnings</hook_context>"
    }
    block = ScriptedHooks(after=AfterToolOutcome(decision="block", reason="contains a secret"))
    h2 = make(tmp_path, FakeTool("glob", output="KEY=1"), hooks=block)
    assert (await h2.scheduler.schedule("c1", "glob", {})) == {
        "error": "Tool result blocked: contains a secret"
    }
    assert h2.sink.kinds()[-1] == "failed"


async def test_a_failing_hook_is_not_a_decision(tmp_path: Path) -> None:
    class BrokenHooks(ScriptedHooks):
        async def before_tool(
            self, name: str, args: dict[str, Any], context: Any = None
        ) -> BeforeToolOutcome:
            raise ValueError("bad hook")

    h = make(tmp_path, FakeTool("glob"), hooks=BrokenHooks())
    assert (await h.scheduler.schedule("c1", "glob", {})) == {"output": "done"}


async def test_cancelled_execution_reports_cancelled_and_propagates(tmp_path: Path) -> None:
    started = asyncio.Event()

    class SlowTool(FakeTool):
        async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
            started.set()
            await asyncio.sleep(30)
            return ToolResult(llm_content="never")

    h = make(tmp_path, SlowTool("glob"))
    task = asyncio.create_task(h.scheduler.schedule("c1", "glob", {}))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert h.sink.kinds() == ["requested", "in_progress", "cancelled"]
