"""MCP servers for real: `tests/fakes/mcp_server.py` over stdio, streamable HTTP and
SSE (127.0.0.1), through `McpServers`, the wrapped `GcliMcpTool`s and the scheduler."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from runtime.host import HeadlessHost, Host, PermissionOutcome, PermissionRequest
from runtime.processes import kill_all
from runtime.tools.base import ToolEnv
from runtime.tools.mcp.config import McpHttpServer, McpServerConfig, McpSseServer, McpStdioServer
from runtime.tools.mcp.servers import McpServers
from runtime.tools.mcp.toolset import GcliMcpTool, wrap_tools
from runtime.tools.policy.engine import PolicyEngine
from runtime.tools.scheduling.reporting import NullToolEventSink
from runtime.tools.scheduling.scheduler import Scheduler
from tests.fakes.mcp_server import SCRIPT as SERVER
from tests.fakes.mcp_server import http_servers as serve_over_http


def stdio(name: str, *args: str, env: dict[str, str] | None = None) -> McpStdioServer:
    return McpStdioServer(name, sys.executable, (SERVER, *args), tuple((env or {}).items()))


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.fixture
async def open_servers(tmp_path: Path) -> AsyncIterator[list[McpServers]]:
    """Closes every McpServers a test made."""
    made: list[McpServers] = []
    yield made
    for servers in made:
        await servers.close()


async def connect(
    made: list[McpServers], tmp_path: Path, *configs: McpServerConfig, timeout: float = 10.0
) -> tuple[McpServers, dict[str, GcliMcpTool]]:
    [(servers, tools)] = await connect_groups(made, tmp_path, [(configs, timeout)])
    return servers, tools


async def connect_groups(
    made: list[McpServers],
    tmp_path: Path,
    groups: list[tuple[tuple[McpServerConfig, ...], float]],
) -> list[tuple[McpServers, dict[str, GcliMcpTool]]]:
    """One McpServers per (configs, start-up timeout), all started at once (a server
    takes ~1.5 s to start)."""
    all_servers = [McpServers(group, cwd=tmp_path, start_timeout=t) for group, t in groups]
    made.extend(all_servers)
    for servers in all_servers:
        servers.start()
    await asyncio.gather(*(servers.wait_ready() for servers in all_servers))
    return [
        (servers, {tool.name: tool for tool in wrap_tools(servers.ready_connections())})
        for servers in all_servers
    ]


def env_for(tmp_path: Path, host: Host | None = None) -> ToolEnv:
    return ToolEnv(
        roots=(tmp_path,), host=host or HeadlessHost(), session_id="s1", temp_dir=tmp_path / "tmp"
    )


async def test_a_stdio_server_s_tools_are_wrapped_and_called(
    open_servers: list[McpServers], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "the agent's key")
    config = stdio("demo", env={"FROM_EDITOR": "given"})
    servers, tools = await connect(open_servers, tmp_path, config)
    assert servers.take_notices() == []
    assert set(tools) == {
        "mcp_demo_echo", "mcp_demo_fail", "mcp_demo_big", "mcp_demo_picture",
        "mcp_demo_crash", "mcp_demo_env_value", "mcp_demo_cwd", "mcp_demo_header",
        "mcp_demo_grow", "mcp_demo_steps",
    }  # fmt: skip
    echo = tools["mcp_demo_echo"]
    assert (echo.kind, echo.mcp_server, echo.server_tool_name) == ("read", "demo", "echo")
    assert echo.description == "Repeats the text."
    assert echo.parameters_schema()["required"] == ["text"]
    assert echo.display({}, env_for(tmp_path)).title == "demo: echo"
    env = env_for(tmp_path)

    result = await echo.execute({"text": "ab", "times": 3}, env)
    assert (result.llm_content, result.is_error) == ("ababab", False)
    failed = await tools["mcp_demo_fail"].execute({"reason": "because"}, env)
    assert failed.is_error and "failed on purpose: because" in failed.llm_content
    picture = await tools["mcp_demo_picture"].execute({}, env)
    assert picture.llm_content.startswith(
        "a caption\n[Tool 'picture' returned image data (image/png"
    )
    assert picture.llm_content.endswith("attached]")
    [image] = picture.media or []
    assert image["mimeType"] == "image/png" and image["data"]
    given = await tools["mcp_demo_env_value"].execute({"name": "FROM_EDITOR"}, env)
    hidden = await tools["mcp_demo_env_value"].execute({"name": "GEMINI_API_KEY"}, env)
    assert (given.llm_content, hidden.llm_content) == ("given", "<unset>")
    where = await tools["mcp_demo_cwd"].execute({}, env)
    assert where.llm_content == str(tmp_path)  # the session's workspace

    crashed = await tools["mcp_demo_crash"].execute({}, env)
    assert crashed.is_error and "Connection closed" in crashed.llm_content
    for _ in range(100):
        notices = servers.take_notices()
        if notices:
            break
        await asyncio.sleep(0.02)
    assert notices == ["MCP server 'demo' stopped (exited with code 7); restarting it."]
    after = await echo.execute({"text": "x"}, env)  # before the restart
    assert after.is_error and "is not available (exited with code 7)" in after.llm_content
    for _ in range(300):  # restarted once, after a pause
        notices = servers.take_notices()
        if notices:
            break
        await asyncio.sleep(0.05)
    assert notices == ["MCP server 'demo' was restarted."]
    again = await echo.execute({"text": "x"}, env)
    assert not again.is_error and again.llm_content == "x"
    crashed = await tools["mcp_demo_crash"].execute({}, env)  # a second crash: for good
    for _ in range(100):
        notices = servers.take_notices()
        if notices:
            break
        await asyncio.sleep(0.02)
    assert notices == [
        "MCP server 'demo' stopped (exited with code 7); "
        "its tools are unavailable for the rest of this session."
    ]


async def test_servers_that_cannot_start_are_reported_once_and_the_others_work(
    open_servers: list[McpServers], tmp_path: Path
) -> None:
    started = time.monotonic()
    # The sleeper has a start-up timeout of its own (1 s); the quitter gets time to say
    # why it exits even when a busy machine starts Python slowly.
    [(failing, _), (sleeping, _), (servers, tools)] = await connect_groups(
        open_servers,
        tmp_path,
        [
            (
                (
                    McpStdioServer("missing", str(tmp_path / "no-such-server")),
                    stdio("quitter", "--mode", "exit"),
                ),
                10.0,
            ),
            ((stdio("sleeper", "--mode", "hang"),), 1.0),
            ((stdio("good"), stdio("good", "--mode", "exit")), 10.0),
        ],
    )
    assert time.monotonic() - started < 9.0  # nobody waited for a 10 s timeout
    assert servers.take_notices() == ["MCP server 'good' is listed twice; only the first is used."]
    missing = tmp_path / "no-such-server"
    tail = "; continuing without its tools."
    assert sorted(failing.take_notices()) == [
        f"MCP server 'missing' could not be started (command not found: {missing}){tail}",
        "MCP server 'quitter' could not be started (exited with code 3: fake MCP server: "
        f"refusing to start){tail}",
    ]
    assert sleeping.take_notices() == [
        f"MCP server 'sleeper' could not be started (no answer within 1 s){tail}"
    ]
    assert servers.take_notices() == []
    assert {t.mcp_server for t in tools.values()} == {"good"}
    result = await tools["mcp_good_echo"].execute({"text": "still here"}, env_for(tmp_path))
    assert result.llm_content == "still here"
    sleeper = next(c for c in sleeping.connections if c.name == "sleeper")
    assert sleeper.state == "failed"


async def test_close_stops_even_a_stubborn_server_and_the_exit_kill_reaches_the_rest(
    open_servers: list[McpServers], tmp_path: Path
) -> None:
    pids = {name: tmp_path / f"{name}.pid" for name in ("stubborn", "plain")}
    stubborn_config = stdio(
        "stubborn", "--mode", "stubborn", env={"FAKE_MCP_PID_FILE": str(pids["stubborn"])}
    )
    plain_config = stdio("plain", env={"FAKE_MCP_PID_FILE": str(pids["plain"])})
    [(stubborn_servers, _), (plain_servers, _)] = await connect_groups(
        open_servers, tmp_path, [((stubborn_config,), 10.0), ((plain_config,), 10.0)]
    )
    stubborn, plain = (int(path.read_text()) for path in pids.values())
    assert alive(stubborn) and alive(plain)

    started = time.monotonic()
    await stubborn_servers.close()
    assert time.monotonic() - started < 2.0
    assert not alive(stubborn)

    kill_all()  # what the agent does at exit, whatever the sessions managed to close
    for _ in range(100):
        if not alive(plain):
            break
        await asyncio.sleep(0.02)
    assert not alive(plain)
    await plain_servers.close()


class AskingHost(Host):
    def __init__(self) -> None:
        self.requests: list[PermissionRequest] = []

    async def request_permission(self, request: PermissionRequest) -> PermissionOutcome:
        self.requests.append(request)
        return PermissionOutcome(option_id="proceed_once")


async def test_mcp_calls_go_through_policy_approval_and_truncation(
    open_servers: list[McpServers], tmp_path: Path
) -> None:
    _, tools = await connect(open_servers, tmp_path, stdio("demo"))
    policies = tmp_path / ".gemini" / "policies"
    policies.mkdir(parents=True)
    (policies / "mcp.toml").write_text(
        '[[rule]]\nmcpName = "demo"\ntoolName = "mcp_demo_fail"\ndecision = "deny"\npriority = 10\n'
        '[[rule]]\ntoolName = "mcp_demo_b*"\ndecision = "allow"\npriority = 10\n',
        encoding="utf-8",
    )
    host = AskingHost()
    scheduler = Scheduler(
        tools=tools,
        env=env_for(tmp_path, host),
        policy=PolicyEngine(workspace_root=tmp_path),
        mode_getter=lambda: "default",
        events=NullToolEventSink(),
        truncate_threshold=1_000,
    )
    asked = await scheduler.schedule("c1", "mcp_demo_echo", {"text": "hi"})
    assert asked == {"output": "hi"}
    [request] = host.requests
    assert (request.title, request.kind) == ("demo: echo", "read")

    denied = await scheduler.schedule("c2", "mcp_demo_fail", {"reason": "x"})
    assert denied == {"error": "Tool execution denied by policy."}
    big = await scheduler.schedule("c3", "mcp_demo_big", {"size": 5_000})
    assert big["output"].startswith("Output too large.")
    assert len(host.requests) == 1  # neither the denied nor the allowed call asked


async def test_http_and_sse_servers_get_their_headers_and_their_end_is_reported(
    open_servers: list[McpServers], tmp_path: Path
) -> None:
    with serve_over_http("http", "sse") as (http_port, sse_port):
        servers, tools = await connect(
            open_servers,
            tmp_path,
            McpHttpServer("web", f"http://127.0.0.1:{http_port}/mcp", (("X-Token", "for http"),)),
            McpSseServer("events", f"http://127.0.0.1:{sse_port}/sse", (("X-Token", "for sse"),)),
            McpHttpServer("down", f"http://127.0.0.1:{http_port}/nothing-here"),
        )
        env = env_for(tmp_path)
        web = await tools["mcp_web_header"].execute({"name": "X-Token"}, env)
        events = await tools["mcp_events_header"].execute({"name": "X-Token"}, env)
        assert (web.llm_content, events.llm_content) == ("for http", "for sse")
        echoed = await tools["mcp_events_echo"].execute({"text": "over sse"}, env)
        assert echoed.llm_content == "over sse"
        [notice] = servers.take_notices()
        assert notice.startswith("MCP server 'down' could not be reached (")

    # Both servers are gone: calls fail at once, and the user is told once per server.
    for name in ("mcp_web_echo", "mcp_events_echo"):
        gone = await tools[name].execute({"text": "anyone?"}, env)
        assert gone.is_error
    notices: list[str] = []
    for _ in range(100):
        notices += servers.take_notices()
        if len(notices) == 2:
            break
        await asyncio.sleep(0.02)
    assert sorted(n.split(" stopped (")[0] for n in notices) == [
        "MCP server 'events'",
        "MCP server 'web'",
    ]


@pytest.mark.timeout(180)
async def test_a_server_that_exits_leaving_a_child_on_its_stdout_is_reported_at_its_exit(
    open_servers: list[McpServers], tmp_path: Path
) -> None:
    """Its `sleep 120` keeps the server's stdout open: the start-up must not wait for it
    (90 s of start-up timeout), and what the server left behind is stopped."""
    started = time.monotonic()
    [(servers, tools)] = await connect_groups(
        open_servers, tmp_path, [((stdio("leaver", "--mode", "exit-leaving-child"),), 90.0)]
    )
    assert time.monotonic() - started < 45.0  # at the server's exit, not at the timeout
    assert tools == {}
    assert servers.take_notices() == [
        "MCP server 'leaver' could not be started (exited with code 3: fake MCP server: "
        "refusing to start); continuing without its tools."
    ]
