"""The end-to-end client, checked against the stdlib echo agent (`bench/echo_agent.py`)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig

from tests.e2e.acp_client import (
    AcpError,
    AcpTestClient,
    AgentExited,
    AgentProtocolViolation,
    check_jsonrpc,
    reject_once,
)

ECHO = str(Path(__file__).resolve().parents[2] / "bench" / "echo_agent.py")
ECHO_ARGV = [sys.executable, ECHO]
MakeAgent = Callable[..., Awaitable[AcpTestClient]]


async def started(make_agent: MakeAgent, **options: Any) -> tuple[AcpTestClient, str]:
    """An initialized echo agent with one session."""
    env = options.pop("env", None)
    caps = options.pop("caps", None)
    client = await make_agent(ECHO_ARGV, env, **options)
    await client.initialize(caps)
    session = await client.new_session(Path.cwd())
    return client, session["sessionId"]


async def call(
    client: AcpTestClient, session_id: str, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    """Have the echo agent call a client method; returns its raw answer."""
    await client.prompt(session_id, f"/call {method} {json.dumps(params)}")
    return json.loads(client.updates(session_id, "agent_message_chunk")[-1]["content"]["text"])


# ---------------------------------------------------------------- requests and updates


async def test_prompt_turn_collects_updates(make_agent: MakeAgent) -> None:
    client = await make_agent(ECHO_ARGV, {"ECHO_AGENT_CHUNKS": "2"})
    init = await client.initialize()
    assert init["protocolVersion"] == 1 and init["agentInfo"]["name"] == "echo-agent"
    first = (await client.new_session(Path.cwd()))["sessionId"]
    second = (await client.new_session(Path.cwd(), additional_directories=[Path.cwd()]))[
        "sessionId"
    ]
    assert first != second

    assert await client.prompt(first, "hello") == {"stopReason": "end_turn"}
    assert client.text_of(first) == "hellohello"
    await client.prompt(second, [{"type": "text", "text": "x"}], meta={"echoChunks": 3})
    assert client.text_of(second) == "xxx"
    assert len(client.updates()) == 5 and len(client.updates(second, "agent_message_chunk")) == 3

    # every update of a turn arrives before its result
    kinds = [
        ("update" if m.get("method") == "session/update" else "result")
        for w, m in client.transcript
        if w == "agent"
    ]
    assert kinds[-4:] == ["update", "update", "update", "result"]
    found = await client.wait_for_update(lambda u: u["content"]["text"] == "x", session_id=second)
    assert found["sessionUpdate"] == "agent_message_chunk"


async def test_other_agent_methods(make_agent: MakeAgent) -> None:
    client, sid = await started(make_agent)
    assert await client.authenticate("none") == {}
    assert await client.set_mode(sid, "plan") == {}
    assert await client.set_config_option(sid, "model", "gemini-2.5-pro") == {"configOptions": []}
    assert await client.set_config_option(sid, "yolo", True) == {"configOptions": []}
    assert await client.set_model(sid, "gemini-2.5-flash") == {}
    with pytest.raises(AcpError) as info:
        await client.request("_unknown/method", {})
    assert info.value.code == -32601
    sent = [
        m
        for w, m in client.transcript
        if w == "client" and m.get("method") == "session/set_config_option"
    ]
    assert sent[-1]["params"] == {
        "sessionId": sid,
        "configId": "yolo",
        "value": True,
        "type": "boolean",
    }


async def test_malformed_input_gets_a_parse_error(make_agent: MakeAgent) -> None:
    client, _ = await started(make_agent)
    await client.send_raw_line(b"{not json")
    error = await client.wait_for_message(lambda m: m.get("id") is None and "error" in m)
    assert error["error"]["code"] == -32700
    assert client.orphan_errors == [error]


async def test_timeouts_and_abandoned_requests(make_agent: MakeAgent) -> None:
    client, sid = await started(make_agent, default_timeout=0.2)
    pending = client.start_prompt(sid, "/wait")
    with pytest.raises(TimeoutError, match="session/prompt"):
        await pending.result()
    with pytest.raises(TimeoutError):
        await client.wait_for_update(lambda u: False)
    await client.cancel(sid)  # the late answer to the abandoned prompt is no violation
    await client.prompt(sid, "after")
    assert client.text_of(sid) == "after"


# ---------------------------------------------------------------- cancellation


async def test_cancel_ends_the_turn_as_cancelled(make_agent: MakeAgent) -> None:
    client, sid = await started(make_agent)
    pending = client.start_prompt(sid, "/wait")
    await asyncio.sleep(0.05)
    assert not pending.done()
    await client.cancel(sid)
    assert await pending.result() == {"stopReason": "cancelled"}


async def test_cancel_request(make_agent: MakeAgent) -> None:
    client, sid = await started(make_agent)
    pending = client.start_prompt(sid, "/wait")
    await client.cancel_request(pending.id)
    with pytest.raises(AcpError) as info:
        await pending.result()
    assert info.value.code == -32800
    sent = [
        m for w, m in client.transcript if w == "client" and m.get("method") == "$/cancel_request"
    ]
    assert sent == [
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": pending.id}}
    ]


# ---------------------------------------------------------------- permissions


async def test_permission_policies(make_agent: MakeAgent) -> None:
    client, sid = await started(make_agent)
    assert await client.prompt(sid, "/ask Run ls?") == {"stopReason": "end_turn"}
    assert client.text_of(sid) == "permission: allow"
    client.permission_policy = reject_once
    await client.prompt(sid, "/ask Again?")
    assert client.text_of(sid).endswith("permission: reject")

    first, second = client.permission_requests
    assert first.tool_call["title"] == "Run ls?" and first.outcome == {
        "outcome": "selected",
        "optionId": "allow",
    }
    assert second.outcome == {"outcome": "selected", "optionId": "reject"}
    assert (
        client.max_open_permissions == 1
        and first.closed is not None
        and first.closed < second.opened
    )
    tool_calls = client.updates(sid, "tool_call")
    assert [t["toolCallId"] for t in tool_calls] == [
        first.tool_call["toolCallId"],
        second.tool_call["toolCallId"],
    ]


async def test_permission_queue_answered_by_the_test(make_agent: MakeAgent) -> None:
    client, sid = await started(make_agent, permission_policy="queue")
    pending = client.start_prompt(sid, "/ask")
    request = await client.next_permission_request()
    assert [o["kind"] for o in request.options] == ["allow_once", "reject_once"]
    assert client.open_permissions == 1 and not pending.done()
    with pytest.raises(ValueError):
        request.select("nope")
    request.select_kind("reject_once")
    assert await pending.result() == {"stopReason": "end_turn"}
    assert client.text_of(sid) == "permission: reject" and client.open_permissions == 0


async def test_cancel_answers_open_permission_requests(make_agent: MakeAgent) -> None:
    client, sid = await started(make_agent, permission_policy="queue")
    pending = client.start_prompt(sid, "/ask")
    request = await client.next_permission_request()
    await client.cancel(sid)
    assert await pending.result() == {"stopReason": "cancelled"}
    assert request.outcome == {"outcome": "cancelled"}
    assert client.text_of(sid) == "permission: cancelled"


# ---------------------------------------------------------------- fs and terminals


async def test_fs_read_and_write(make_agent: MakeAgent, tmp_path: Path) -> None:
    existing = tmp_path / "a.txt"
    existing.write_text("one\ntwo\nthree\n", encoding="utf-8")
    buffered = tmp_path / "b.txt"
    client, sid = await started(make_agent, unsaved_buffers={str(buffered): "unsaved"})

    assert await call(client, sid, "fs/read_text_file", {"path": str(existing)}) == {
        "result": {"content": "one\ntwo\nthree\n"}
    }
    sliced = await call(
        client, sid, "fs/read_text_file", {"path": str(existing), "line": 2, "limit": 1}
    )
    assert sliced == {"result": {"content": "two\n"}}
    assert (await call(client, sid, "fs/read_text_file", {"path": str(buffered)}))["result"] == {
        "content": "unsaved"
    }
    missing = await call(client, sid, "fs/read_text_file", {"path": str(tmp_path / "nope")})
    assert missing["error"]["code"] == -32002

    target = tmp_path / "new" / "c.txt"
    assert await call(
        client, sid, "fs/write_text_file", {"path": str(target), "content": "hi"}
    ) == {"result": {}}
    assert target.read_text(encoding="utf-8") == "hi"
    assert client.files.reads == [
        str(existing),
        str(existing),
        str(buffered),
        str(tmp_path / "nope"),
    ]
    assert client.files.writes == [str(target)]


async def test_fs_missing_file_empty_and_root(make_agent: MakeAgent, tmp_path: Path) -> None:
    client, sid = await started(make_agent, missing_file="empty", fs_root=tmp_path)
    assert await call(client, sid, "fs/read_text_file", {"path": str(tmp_path / "nope")}) == {
        "result": {"content": ""}
    }
    outside = await call(
        client, sid, "fs/write_text_file", {"path": "/etc/adk-acp-test", "content": "x"}
    )
    assert outside["error"]["code"] == -32602


async def test_terminal_lifecycle(make_agent: MakeAgent, tmp_path: Path) -> None:
    client, sid = await started(make_agent)
    created = await call(
        client,
        sid,
        "terminal/create",
        {
            "command": "printf",
            "args": ["%s-%s", "$HOME", "x y"],
            "cwd": str(tmp_path),
            "env": [{"name": "A", "value": "1"}],
        },
    )
    tid = created["result"]["terminalId"]
    assert (await call(client, sid, "terminal/wait_for_exit", {"terminalId": tid}))["result"] == {
        "exitCode": 0,
        "signal": None,
    }
    output = (await call(client, sid, "terminal/output", {"terminalId": tid}))["result"]
    assert output == {
        "output": "$HOME-x y",
        "truncated": False,
        "exitStatus": {"exitCode": 0, "signal": None},
    }
    assert (await call(client, sid, "terminal/release", {"terminalId": tid})) == {"result": {}}
    assert (await call(client, sid, "terminal/output", {"terminalId": tid}))["error"][
        "code"
    ] == -32602

    long_run = await call(client, sid, "terminal/create", {"command": "echo start; exec sleep 30"})
    tid = long_run["result"]["terminalId"]
    running = (await call(client, sid, "terminal/output", {"terminalId": tid}))["result"]
    assert "exitStatus" not in running
    assert (await call(client, sid, "terminal/kill", {"terminalId": tid})) == {"result": {}}
    assert (await call(client, sid, "terminal/wait_for_exit", {"terminalId": tid}))["result"] == {
        "exitCode": None,
        "signal": "SIGKILL",
    }
    assert [m for m, _ in client.terminals.calls] == [
        "create",
        "wait_for_exit",
        "output",
        "release",
        "output",
        "create",
        "output",
        "kill",
        "wait_for_exit",
    ]


async def test_terminal_output_limit_keeps_the_tail(make_agent: MakeAgent) -> None:
    client, sid = await started(make_agent)
    created = await call(
        client,
        sid,
        "terminal/create",
        {"command": "printf 'abcdé%.0s' 1 2 3", "outputByteLimit": 7},
    )
    tid = created["result"]["terminalId"]
    await call(client, sid, "terminal/wait_for_exit", {"terminalId": tid})
    output = (await call(client, sid, "terminal/output", {"terminalId": tid}))["result"]
    assert output["truncated"] and output["output"] == "abcdé"  # 'é' is 2 bytes: cut at a character


async def test_elicitation_and_unknown_client_methods(make_agent: MakeAgent) -> None:
    answers: list[dict[str, Any]] = []

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        answers.append(params)
        return {"action": "accept", "content": {"name": "x"}}

    client, sid = await started(make_agent, elicitation_policy=elicit)
    request = {
        "mode": "form",
        "message": "Name?",
        "requestedSchema": {"type": "object", "properties": {}},
    }
    assert await call(client, sid, "elicitation/create", request) == {
        "result": {"action": "accept", "content": {"name": "x"}}
    }
    assert answers and client.elicitations == answers
    assert (await call(client, sid, "_zed/unknown", {}))["error"]["code"] == -32601


# ---------------------------------------------------------------- violations and exits


async def test_unadvertised_client_method_is_a_violation(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    client, sid = await started(make_agent, caps={"fs": {"readTextFile": False}, "terminal": False})
    with pytest.raises(AgentProtocolViolation, match="did not advertise"):
        await call(client, sid, "fs/read_text_file", {"path": str(tmp_path / "x")})
    with pytest.raises(AssertionError, match="did not advertise"):
        await client.close()
    refusal = [m for w, m in client.transcript if w == "client" and m.get("id") == "echo-1"]
    assert refusal[0]["error"]["code"] == -32601  # and the agent was refused


@pytest.mark.parametrize(
    "line",
    [
        "this is not json",
        '{"id": 1, "result": {}}',
        '{"jsonrpc": "2.0", "method": "session/update",'
        ' "params": {"sessionId": "s", "update": {"sessionUpdate": "bogus"}}}',
        '{"jsonrpc": "2.0", "id": 999, "result": {}}',
    ],
    ids=["not-json", "no-jsonrpc", "invalid-update", "unknown-id"],
)
async def test_bad_stdout_fails_the_test(make_agent: MakeAgent, line: str) -> None:
    client, sid = await started(make_agent)
    with pytest.raises(AgentProtocolViolation):
        await client.prompt(sid, f"/raw {line}")
    with pytest.raises(AssertionError, match="protocol violation"):
        await client.close()


async def test_stderr_is_captured_and_exits_are_reported(make_agent: MakeAgent) -> None:
    client, sid = await started(make_agent)
    await client.prompt(sid, "/stderr something for the log")
    pending = client.start_prompt(sid, "/exit 3")
    with pytest.raises(AgentExited, match="code 3"):
        await pending.result()
    with pytest.raises(AgentExited):
        await client.prompt(sid, "too late")
    assert await client.close(expect_exit_code=3) == 3
    assert "something for the log" in client.stderr_text


async def test_an_agent_that_ignores_eof_is_killed_and_reported() -> None:
    client = await AcpTestClient.spawn([sys.executable, "-c", "import time; time.sleep(60)"])
    with pytest.raises(AssertionError, match="did not exit within 0.3s"):
        await client.close(exit_timeout=0.3)
    assert client.returncode is not None and client.returncode < 0


async def test_processes_left_behind_are_reported_and_killed() -> None:
    script = "import subprocess, sys; subprocess.Popen(['sleep', '30']); sys.stdin.read()"
    client = await AcpTestClient.spawn([sys.executable, "-c", script])
    assert await client.close() == 0
    assert client.left_processes


async def test_context_manager_keeps_the_original_error() -> None:
    with pytest.raises(KeyError) as info:
        async with await AcpTestClient.spawn(ECHO_ARGV) as client:
            await client.send_raw_line(
                b'{"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {}}'
            )
            with pytest.raises(AgentProtocolViolation):  # we never sent request 7
                await client.wait_for_message(lambda m: False)
            raise KeyError("boom")
    assert any("unknown request id" in note for note in info.value.__notes__)


def test_check_jsonrpc_shapes() -> None:
    assert check_jsonrpc({"jsonrpc": "2.0", "method": "x"}) is None
    assert (
        check_jsonrpc({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "m"}})
        is None
    )
    assert check_jsonrpc({"jsonrpc": "2.0", "id": 1, "result": None}) is None
    assert check_jsonrpc({"jsonrpc": "2.0", "id": 1, "result": 1, "error": {}})
    assert check_jsonrpc({"jsonrpc": "2.0", "id": True, "method": "x"})
    assert check_jsonrpc({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}})
    assert check_jsonrpc({"jsonrpc": "2.0", "method": "x", "params": 3})
    assert check_jsonrpc({"jsonrpc": "2.0", "method": "x", "extra": 1})
    assert check_jsonrpc([{"jsonrpc": "2.0", "method": "x"}])


# ---------------------------------------------------------------- pytest-lsp integration


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=ECHO_ARGV, client_factory=AcpTestClient)
)
async def lsp_echo(client: AcpTestClient) -> AsyncIterator[None]:
    await client.initialize()
    yield


async def test_pytest_lsp_fixture_drives_the_agent(lsp_echo: AcpTestClient) -> None:
    sid = (await lsp_echo.new_session(Path.cwd()))["sessionId"]
    await lsp_echo.prompt(sid, "via pytest-lsp")
    assert lsp_echo.text_of(sid) == "via pytest-lsp"


# ---------------------------------------------------------------- ids shared by both sides

# An agent that opens permission request 1 at once; on our request "again" it opens
# request 2 and cancels it; it answers every request and reports every response.
ID_CLASH_AGENT = r"""
import json, sys
def send(m): sys.stdout.write(json.dumps(dict(jsonrpc="2.0", **m)) + "\n"); sys.stdout.flush()
def ask(i): send(dict(id=i, method="session/request_permission", params=dict(sessionId="s",
    toolCall=dict(toolCallId=f"t{i}"),
    options=[dict(optionId="ok", name="OK", kind="allow_once")])))
ask(1)
for line in sys.stdin:
    m = json.loads(line)
    if "method" not in m:
        text = json.dumps(m)
        send(dict(method="session/update", params=dict(sessionId="s", update=dict(
            sessionUpdate="agent_message_chunk", content=dict(type="text", text=text)))))
    elif "id" in m:
        if m["method"] == "again":
            ask(2)
            send(dict(method="$/cancel_request", params=dict(requestId=2)))
        send(dict(id=m["id"], result=dict(method=m["method"])))
"""


async def test_request_ids_of_both_sides_do_not_clash(make_agent: MakeAgent) -> None:
    client = await make_agent([sys.executable, "-c", ID_CLASH_AGENT], permission_policy="queue")
    first = await client.next_permission_request()
    assert first.tool_call["toolCallId"] == "t1"
    assert await client.request("ping") == {"method": "ping"}  # our id 1, theirs still open
    first.select("ok")
    reply = await client.wait_for_update(lambda u: '"id": 1' in u["content"]["text"])
    assert json.loads(reply["content"]["text"])["result"] == {
        "outcome": {"outcome": "selected", "optionId": "ok"}
    }

    assert await client.request("again") == {"method": "again"}
    cancelled = await client.wait_for_update(lambda u: '"id": 2' in u["content"]["text"])
    assert json.loads(cancelled["content"]["text"])["error"]["code"] == -32800
    assert client.cancel_requests_received == [{"requestId": 2}]
    assert client.max_open_permissions == 1
