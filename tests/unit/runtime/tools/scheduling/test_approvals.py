"""Approvals through the scheduler: the queue, answers, always-rules, mode switch, cancellation."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from runtime.host import HeadlessHost, Host, PermissionOutcome, PermissionRequest
from runtime.protocol import DisplayContent, DisplayDiff, ToolDisplay, ToolKind, ToolLocation
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.policy.engine import PolicyEngine
from runtime.tools.scheduling.approvals import REJECTED_MESSAGE, ApprovalCancelled, ApprovalQueue
from runtime.tools.scheduling.scheduler import CANCELLED_MESSAGE, Scheduler, ToolCallOutcome


class GatedHost(Host):
    """Each permission request waits until the test answers it; records how many are open."""

    def __init__(self) -> None:
        self.requests: list[PermissionRequest] = []
        self.pending: dict[str, asyncio.Future[str | None]] = {}
        self.open = 0
        self.max_open = 0
        self.arrived = asyncio.Condition()

    async def request_permission(self, request: PermissionRequest) -> PermissionOutcome:
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self.pending[request.tool_call_id] = future
        self.requests.append(request)
        self.open += 1
        self.max_open = max(self.max_open, self.open)
        async with self.arrived:
            self.arrived.notify_all()
        try:
            return PermissionOutcome(option_id=await future)
        finally:
            self.open -= 1

    async def wait_for(self, count: int) -> None:
        async with self.arrived:
            await asyncio.wait_for(self.arrived.wait_for(lambda: len(self.requests) >= count), 5)

    def answer(self, call_id: str, option_id: str | None) -> None:
        self.pending[call_id].set_result(option_id)


class AutoHost(Host):
    """Answers from a script, in order; records requests."""

    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.requests: list[PermissionRequest] = []

    async def request_permission(self, request: PermissionRequest) -> PermissionOutcome:
        self.requests.append(request)
        return PermissionOutcome(option_id=self.answers.pop(0))


class Tool(GcliTool):
    def __init__(self, name: str, kind: ToolKind = "other") -> None:
        self.name, self.kind, self.description = name, kind, name
        self.executed: list[dict[str, Any]] = []

    def parameters_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}}

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        path = args.get("file_path")
        return ToolDisplay(
            title=f"{self.name}: {path or args.get('command')}",
            kind=self.kind,
            locations=(ToolLocation(path=path, line=1),) if path else (),
        )

    async def preview(self, args: dict[str, Any], env: ToolEnv) -> tuple[DisplayContent, ...]:
        if self.kind == "edit":
            return (DisplayDiff(path=args["file_path"], before_text=None, after_text="new"),)
        return ()

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        self.executed.append(args)
        return ToolResult(llm_content=f"ran {args}")


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.waiting: list[tuple[str, bool]] = []

    async def tool_requested(
        self, call_id: str, name: str, args: dict[str, Any], display: ToolDisplay
    ) -> None:
        self.events.append((call_id, "requested"))

    async def tool_updated(self, call_id: str, status: str, display: ToolDisplay | None) -> None:
        self.events.append((call_id, status))

    async def tool_finished(self, call_id: str, name: str, outcome: ToolCallOutcome) -> None:
        self.events.append((call_id, outcome.status))

    async def tool_waiting(self, call_id: str, waiting: bool) -> None:
        self.waiting.append((call_id, waiting))

    def of(self, call_id: str) -> list[str]:
        return [kind for cid, kind in self.events if cid == call_id]


SHELL = "run_shell_command"


def scheduler(
    tmp_path: Path,
    host: Host,
    *,
    mode: str = "default",
    on_mode_change: Any = None,
    on_cancel: Any = None,
    sink: Sink | None = None,
    on_answer: Any = None,
) -> tuple[Scheduler, dict[str, Tool]]:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    kinds: list[tuple[str, ToolKind]] = [
        (SHELL, "execute"),
        ("write_file", "edit"),
        ("replace", "edit"),
    ]
    tools = {name: Tool(name, kind) for name, kind in kinds}
    env = ToolEnv(roots=(root,), host=host, session_id="s", temp_dir=tmp_path / "tmp")
    return (
        Scheduler(
            tools=tools,
            env=env,
            policy=PolicyEngine(workspace_root=root),
            mode_getter=lambda: mode,
            on_mode_change=on_mode_change,
            on_cancel=on_cancel,
            events=sink,
            on_answer=on_answer,
        ),
        tools,
    )


async def test_parallel_calls_ask_one_at_a_time_in_call_order(tmp_path: Path) -> None:
    host = GatedHost()
    sched, tools = scheduler(tmp_path, host)
    tasks = [
        asyncio.create_task(sched.schedule(f"c{i}", SHELL, {"command": f"make step{i}"}))
        for i in range(1, 4)
    ]
    for expected in range(1, 4):
        await host.wait_for(expected)
        await asyncio.sleep(0.01)  # give a wrongly queued call the chance to ask too
        assert host.open == 1
        assert [r.tool_call_id for r in host.requests] == [f"c{i}" for i in range(1, expected + 1)]
        host.answer(f"c{expected}", "proceed_once")
    results = await asyncio.gather(*tasks)
    assert all("output" in r for r in results)
    assert host.max_open == 1
    assert [a["command"] for a in tools[SHELL].executed] == [
        "make step1",
        "make step2",
        "make step3",
    ]


async def test_calls_that_need_no_approval_do_not_wait(tmp_path: Path) -> None:
    host = GatedHost()
    sched, tools = scheduler(tmp_path, host, mode="autoEdit")
    asking = asyncio.create_task(sched.schedule("c1", SHELL, {"command": "npm test"}))
    await host.wait_for(1)
    assert await sched.schedule("c2", SHELL, {"command": "ls"}) == {
        "output": "ran {'command': 'ls'}"
    }
    host.answer("c1", "proceed_once")
    assert "output" in await asking


async def test_cancel_while_waiting_frees_the_queue(tmp_path: Path) -> None:
    host = GatedHost()
    sink = Sink()
    sched, tools = scheduler(tmp_path, host, sink=sink)
    first = asyncio.create_task(sched.schedule("c1", SHELL, {"command": "make a"}))
    second = asyncio.create_task(sched.schedule("c2", SHELL, {"command": "make b"}))
    third = asyncio.create_task(sched.schedule("c3", SHELL, {"command": "make c"}))
    await host.wait_for(1)
    second.cancel()  # queued behind c1
    with pytest.raises(asyncio.CancelledError):
        await second
    first.cancel()  # being asked
    with pytest.raises(asyncio.CancelledError):
        await first
    await host.wait_for(2)
    assert [r.tool_call_id for r in host.requests] == ["c1", "c3"]
    host.answer("c3", "proceed_once")
    assert "output" in await third
    assert sink.of("c1") == ["requested", "cancelled"]
    assert sink.of("c2") == ["requested", "cancelled"]
    assert [a["command"] for a in tools[SHELL].executed] == ["make c"]


async def test_a_cancelled_request_cancels_the_call_and_the_turn(tmp_path: Path) -> None:
    sink = Sink()
    sched, tools = scheduler(tmp_path, AutoHost(None, "proceed_once"), sink=sink)
    with pytest.raises(ApprovalCancelled) as raised:
        await sched.schedule("c1", SHELL, {"command": "make"})
    assert raised.value.call_id == "c1"
    assert sink.of("c1") == ["requested", "cancelled"]
    assert tools[SHELL].executed == []
    assert "output" in await sched.schedule("c2", SHELL, {"command": "make"})  # the queue is free


async def test_a_cancelled_request_cancels_the_calls_waiting_behind_it(tmp_path: Path) -> None:
    host = GatedHost()
    sink = Sink()
    sched, tools = scheduler(tmp_path, host, sink=sink)
    first = asyncio.create_task(sched.schedule("c1", SHELL, {"command": "make a"}))
    second = asyncio.create_task(sched.schedule("c2", SHELL, {"command": "make b"}))
    await host.wait_for(1)
    host.answer("c1", None)
    for task in (first, second):
        with pytest.raises(ApprovalCancelled):
            await task
    assert [r.tool_call_id for r in host.requests] == ["c1"]  # c2 never asked
    assert sink.of("c2") == ["requested", "cancelled"]
    later = asyncio.create_task(sched.schedule("c3", SHELL, {"command": "make c"}))
    await host.wait_for(2)  # a later turn asks again
    host.answer("c3", "proceed_once")
    assert "output" in await later
    assert [a["command"] for a in tools[SHELL].executed] == ["make c"]


async def test_on_cancel_aborts_the_turn_instead_of_raising(tmp_path: Path) -> None:
    host = GatedHost()
    aborts: list[str] = []

    async def abort() -> None:
        aborts.append("abort")

    sched, tools = scheduler(tmp_path, host, on_cancel=abort)
    first = asyncio.create_task(sched.schedule("c1", SHELL, {"command": "make a"}))
    second = asyncio.create_task(sched.schedule("c2", SHELL, {"command": "make b"}))
    await host.wait_for(1)
    host.answer("c1", None)
    assert await first == {"error": CANCELLED_MESSAGE}
    assert await second == {"error": CANCELLED_MESSAGE}
    assert aborts == ["abort"] and len(host.requests) == 1 and tools[SHELL].executed == []


async def test_reject_tells_the_model_and_the_next_call_still_works(tmp_path: Path) -> None:
    host = AutoHost("cancel", "proceed_once")
    sink = Sink()
    sched, tools = scheduler(tmp_path, host, sink=sink)
    assert await sched.schedule("c1", SHELL, {"command": "make"}) == {"error": REJECTED_MESSAGE}
    assert sink.of("c1") == ["requested", "failed"]
    assert "output" in await sched.schedule("c2", SHELL, {"command": "make"})
    assert len(host.requests) == 2


async def test_reject_always_denies_the_same_command_without_asking(tmp_path: Path) -> None:
    host = AutoHost("reject_always", "proceed_once")
    sched, _ = scheduler(tmp_path, host)
    assert await sched.schedule("c1", SHELL, {"command": "npm publish"}) == {
        "error": REJECTED_MESSAGE
    }
    assert (await sched.schedule("c2", SHELL, {"command": "npm publish --dry-run"}))[
        "error"
    ].startswith("Tool execution denied by policy")
    assert "output" in await sched.schedule("c3", SHELL, {"command": "npm test"})
    assert len(host.requests) == 2


async def test_allow_for_session_on_an_edit_remembers_the_file_and_switches_to_auto_edit(
    tmp_path: Path,
) -> None:
    host = AutoHost("proceed_always", "proceed_once")
    changes: list[str] = []
    sched, tools = scheduler(
        tmp_path, host, on_mode_change=changes.append
    )  # mode stays "default" here
    await sched.schedule("c1", "write_file", {"file_path": "a.py"})
    assert changes == ["autoEdit"]
    await sched.schedule("c2", "write_file", {"file_path": "a.py"})
    assert len(host.requests) == 1  # same file: not asked again
    await sched.schedule("c3", "write_file", {"file_path": "b.py"})
    assert len(host.requests) == 2  # another file: asked
    assert len(tools["write_file"].executed) == 3


async def test_async_mode_change_callback_is_awaited(tmp_path: Path) -> None:
    changes: list[str] = []

    async def on_change(mode: str) -> None:
        changes.append(mode)

    sched, _ = scheduler(tmp_path, AutoHost("proceed_always"), on_mode_change=on_change)
    await sched.schedule("c1", "replace", {"file_path": "a.py"})
    assert changes == ["autoEdit"]


async def test_allow_for_session_on_a_command_does_not_change_the_mode(tmp_path: Path) -> None:
    changes: list[str] = []
    host = AutoHost("proceed_always")
    sched, _ = scheduler(tmp_path, host, on_mode_change=changes.append)
    await sched.schedule("c1", SHELL, {"command": "npm test"})
    await sched.schedule("c2", SHELL, {"command": "npm test -- -k x"})
    assert changes == [] and len(host.requests) == 1


async def test_an_always_answer_settles_calls_already_waiting(tmp_path: Path) -> None:
    host = GatedHost()
    sched, tools = scheduler(tmp_path, host)
    first = asyncio.create_task(sched.schedule("c1", SHELL, {"command": "npm test"}))
    second = asyncio.create_task(
        sched.schedule("c2", SHELL, {"command": "npm test -- --watch=false"})
    )
    await host.wait_for(1)
    host.answer("c1", "proceed_always")
    await asyncio.gather(first, second)
    assert len(host.requests) == 1 and len(tools[SHELL].executed) == 2


async def test_allow_and_save_persists_for_later_sessions(tmp_path: Path) -> None:
    sched, _ = scheduler(tmp_path, AutoHost("proceed_always_and_save"))
    await sched.schedule("c1", SHELL, {"command": "npm test"})
    assert (tmp_path / "ws" / ".gemini" / "policies" / "auto-saved.toml").exists()
    later_host = AutoHost()
    later, tools = scheduler(tmp_path, later_host)
    assert "output" in await later.schedule("c1", SHELL, {"command": "npm test"})
    assert later_host.requests == []


async def test_the_permission_request_describes_the_call(tmp_path: Path) -> None:
    host = AutoHost("proceed_once")
    sched, _ = scheduler(tmp_path, host)
    await sched.schedule("c9", "write_file", {"file_path": "src/a.py"})
    (request,) = host.requests
    assert request.tool_call_id == "c9"
    assert request.title == "write_file: src/a.py" and request.kind == "edit"
    assert request.locations == (ToolLocation(path="src/a.py", line=1),)
    assert request.raw_input == {"file_path": "src/a.py"}
    assert request.content == (DisplayDiff(path="src/a.py", before_text=None, after_text="new"),)
    assert [(o.option_id, o.name, o.kind) for o in request.options] == [
        ("proceed_once", "Allow", "allow_once"),
        ("proceed_always", "Allow for this session", "allow_always"),
        ("proceed_always_and_save", "Always allow — saved", "allow_always"),
        ("cancel", "Reject", "reject_once"),
        ("reject_always", "Reject always", "reject_always"),
    ]


async def test_headless_host_rejects(tmp_path: Path) -> None:
    sched, tools = scheduler(tmp_path, HeadlessHost())
    assert await sched.schedule("c1", SHELL, {"command": "make"}) == {"error": REJECTED_MESSAGE}
    assert tools[SHELL].executed == []


async def test_unknown_answer_counts_as_rejection(tmp_path: Path) -> None:
    sched, _ = scheduler(tmp_path, AutoHost("maybe"))
    assert await sched.schedule("c1", SHELL, {"command": "make"}) == {"error": REJECTED_MESSAGE}


async def test_queue_orders_tickets_and_tolerates_double_release() -> None:
    queue = ApprovalQueue()
    a, b, c = queue.take(), queue.take(), queue.take()
    order: list[int] = []

    async def turn(ticket: int) -> None:
        await queue.wait_turn(ticket)
        order.append(ticket)
        queue.release(ticket)
        queue.release(ticket)

    tasks = [asyncio.create_task(turn(t)) for t in (c, b)]
    await asyncio.sleep(0)
    assert order == []
    queue.release(a)
    await asyncio.gather(*tasks)
    assert order == [b, c]


async def test_edits_of_one_turn_are_written_in_call_order(tmp_path: Path) -> None:
    """Auto edit asks for neither, so both start at once; the second edit is written only
    after the first (it may build on it), while a command does not wait for them."""
    sched, tools = scheduler(tmp_path, GatedHost(), mode="autoEdit")
    gate = asyncio.Event()
    first_started = asyncio.Event()
    write = tools["write_file"]
    plain_execute = write.execute

    async def slow_first(args: dict[str, Any], env: ToolEnv) -> ToolResult:
        if args["file_path"].endswith("a.txt"):
            first_started.set()
            await gate.wait()
        return await plain_execute(args, env)

    write.execute = slow_first  # type: ignore[method-assign]
    root = tmp_path / "ws"
    first = asyncio.create_task(sched.schedule("c1", "write_file", {"file_path": f"{root}/a.txt"}))
    second = asyncio.create_task(sched.schedule("c2", "replace", {"file_path": f"{root}/b.txt"}))
    await asyncio.wait_for(first_started.wait(), 5)
    assert await sched.schedule("c3", SHELL, {"command": "ls"}) == {
        "output": "ran {'command': 'ls'}"
    }
    await asyncio.sleep(0.05)  # a wrongly ordered second edit would run now
    assert tools["replace"].executed == []
    gate.set()
    await asyncio.gather(first, second)
    assert [a["file_path"] for a in write.executed] == [f"{root}/a.txt"]
    assert [a["file_path"] for a in tools["replace"].executed] == [f"{root}/b.txt"]


async def test_on_answer_hears_every_answer_and_a_question_cancelled_with_its_task(
    tmp_path: Path,
) -> None:
    """The session record's hook (issue 21: replayed permission cards)."""
    host = GatedHost()
    heard: list[tuple[str, str | None]] = []
    sched, _ = scheduler(
        tmp_path, host, on_answer=lambda r, o: heard.append((r.tool_call_id, o.option_id))
    )
    first = asyncio.create_task(sched.schedule("c1", SHELL, {"command": "make a"}))
    await host.wait_for(1)
    host.answer("c1", "proceed_once")
    await first
    second = asyncio.create_task(sched.schedule("c2", SHELL, {"command": "make b"}))
    await host.wait_for(2)
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second
    assert heard == [("c1", "proceed_once"), ("c2", None)]


async def test_a_call_waiting_on_the_user_is_signalled_until_answered(tmp_path: Path) -> None:
    """The waiting-for-confirmation signal: on as the question goes out, off once answered;
    a call the policy allows never signals."""
    host = GatedHost()
    sink = Sink()
    sched, _ = scheduler(tmp_path, host, sink=sink)
    task = asyncio.create_task(sched.schedule("c1", SHELL, {"command": "make"}))
    await host.wait_for(1)
    assert sink.waiting == [("c1", True)]
    host.answer("c1", "proceed_once")
    assert "output" in await task
    assert sink.waiting == [("c1", True), ("c1", False)]
    await sched.schedule("c2", "read_file", {})  # unknown tool: fails, never waits
    assert [w for w in sink.waiting if w[0] == "c2"] == []
