"""The scheduler's side of the hook contract: AfterTool tail calls (run through the whole
pipeline, shown as calls of their own, bounded) and `continue: false` through `on_stop`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.tools.base import ToolResult
from runtime.tools.scheduling.hooks import (
    NO_CONTEXT,
    AfterToolOutcome,
    BeforeToolOutcome,
    TailCallRequest,
    ToolHookContext,
)
from runtime.tools.scheduling.scheduler import MAX_TAIL_CALLS
from tests.unit.runtime.tools.scheduling.test_scheduler import FakeHost, FakeTool, make


class Router:
    """AfterTool tails `route[name]` after a call of `name`; records each hook's context."""

    def __init__(self, route: dict[str, TailCallRequest], before: BeforeToolOutcome) -> None:
        self.route = route
        self.before_outcome = before
        self.contexts: list[tuple[str, str, ToolHookContext]] = []

    async def before_tool(
        self, name: str, args: dict[str, Any], context: ToolHookContext = NO_CONTEXT
    ) -> BeforeToolOutcome:
        self.contexts.append(("before", name, context))
        return self.before_outcome

    async def after_tool(
        self,
        name: str,
        args: dict[str, Any],
        result: ToolResult,
        context: ToolHookContext = NO_CONTEXT,
    ) -> AfterToolOutcome:
        self.contexts.append(("after", name, context))
        return AfterToolOutcome(tail_call=self.route.get(name))


async def test_a_tail_call_runs_through_the_pipeline_and_answers_for_the_first(
    tmp_path: Path,
) -> None:
    first, tail = FakeTool("glob", output="a.py"), FakeTool("grep", output="found it")
    router = Router({"glob": TailCallRequest("grep", {"pattern": "x"})}, BeforeToolOutcome())
    h = make(tmp_path, first, tail, mode="yolo", hooks=router)

    assert await h.scheduler.schedule("c1", "glob", {}) == {"output": "found it"}
    assert first.executed == [{}] and tail.executed == [{"pattern": "x"}]
    assert h.sink.kinds("c1")[-1] == "completed"  # the first call is shown as done
    assert h.sink.kinds("c1-tail1")[-1] == "completed"  # the tail is a call of its own
    seen = [(stage, name, ctx.original_request_name) for stage, name, ctx in router.contexts]
    assert seen == [
        ("before", "glob", None),
        ("after", "glob", None),
        ("before", "grep", "glob"),
        ("after", "grep", "glob"),
    ]


async def test_a_tail_call_is_asked_for_like_any_call(tmp_path: Path) -> None:
    router = Router(
        {"glob": TailCallRequest("run_shell_command", {"command": "rm -rf /tmp/x"})},
        BeforeToolOutcome(),
    )
    shell = FakeTool("run_shell_command", kind="execute")
    h = make(tmp_path, FakeTool("glob"), shell, hooks=router, host=FakeHost("cancel"))

    response = await h.scheduler.schedule("c1", "glob", {})
    assert "error" in response and shell.executed == []
    assert [r.tool_call_id for r in h.host.requests] == ["c1-tail1"]


async def test_tail_calls_are_bounded_and_an_unknown_tail_tool_is_an_error(
    tmp_path: Path,
) -> None:
    loop = FakeTool("glob")
    router = Router({"glob": TailCallRequest("glob", {})}, BeforeToolOutcome())
    h = make(tmp_path, loop, mode="yolo", hooks=router)
    assert await h.scheduler.schedule("c1", "glob", {}) == {"output": "done"}
    assert len(loop.executed) == 1 + MAX_TAIL_CALLS
    assert any("too many" in n for n in h.host.notices)

    router = Router({"glob": TailCallRequest("nope", {})}, BeforeToolOutcome())
    h = make(tmp_path, FakeTool("glob"), mode="yolo", hooks=router)
    response = await h.scheduler.schedule("c1", "glob", {})
    assert response["error"].startswith('Tool "nope" not found.')


async def test_continue_false_calls_on_stop_and_ends_the_call(tmp_path: Path) -> None:
    stops: list[str] = []
    router = Router({}, BeforeToolOutcome(stop=True, stop_reason="budget spent"))
    tool = FakeTool("glob")
    h = make(tmp_path, tool, mode="yolo", hooks=router, on_stop=stops.append)
    response = await h.scheduler.schedule("c1", "glob", {})
    assert response == {"error": "Agent execution stopped by hook: budget spent"}
    assert stops == ["budget spent"] and tool.executed == []
    assert h.sink.kinds("c1")[-1] == "failed"
