"""AcpHost against a fake connection: what it asks the editor, and how it reads the answers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from acp_server.errors import RESOURCE_NOT_FOUND
from acp_server.host import AcpHost, capabilities_from
from runtime.errors import CapabilityNotOffered, HostRequestError
from runtime.host import PermissionOption, PermissionRequest, TerminalRequest
from tests.unit.acp_server.fake_conn import FakeConn

ALL = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
OPTIONS = (
    PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
)


def _host(conn: FakeConn, caps: dict[str, Any] | None = ALL) -> AcpHost:
    return AcpHost(conn, "s1", caps)  # type: ignore[arg-type]


def _ask() -> PermissionRequest:
    return PermissionRequest(tool_call_id="t1", title="Edit a.txt", kind="edit", options=OPTIONS)


def _selected(option: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option}}


def test_capabilities_come_from_what_the_client_advertised() -> None:
    caps = capabilities_from({"fs": {"readTextFile": True}, "elicitation": {}})
    assert (caps.read_text_file, caps.write_text_file, caps.terminal) == (True, False, False)
    assert caps.elicitation is False  # an empty object is not a yes
    assert capabilities_from(None) == capabilities_from({"fs": "nonsense"})


async def test_a_permission_request_carries_the_session_and_reads_the_choice() -> None:
    conn = FakeConn({"session/request_permission": [_selected("allow")]})
    outcome = await _host(conn).request_permission(_ask())
    assert outcome.option_id == "allow"
    (sent,) = conn.requests("session/request_permission")
    assert sent["sessionId"] == "s1"
    assert [o["optionId"] for o in sent["options"]] == ["allow", "reject"]


async def test_an_unknown_option_is_a_rejection_and_a_cancel_is_no_choice() -> None:
    conn = FakeConn(
        {
            "session/request_permission": [
                _selected("made-up"),
                {"outcome": {"outcome": "cancelled"}},
            ]
        }
    )
    host = _host(conn)
    assert (await host.request_permission(_ask())).option_id == "reject"
    assert (await host.request_permission(_ask())).option_id is None


async def test_an_error_answer_to_a_permission_request_is_a_host_error() -> None:
    conn = FakeConn({"session/request_permission": [JsonRpcException(code=-32603, message="x")]})
    with pytest.raises(HostRequestError, match="error -32603: x"):
        await _host(conn).request_permission(_ask())


async def test_reads_go_to_the_editor_with_line_and_limit(tmp_path: Path) -> None:
    conn = FakeConn({"fs/read_text_file": [{"content": "hello"}]})
    assert await _host(conn).read_text_file(tmp_path / "a.txt", line=3, limit=2) == "hello"
    (sent,) = conn.requests("fs/read_text_file")
    assert sent == {"sessionId": "s1", "path": str(tmp_path / "a.txt"), "line": 3, "limit": 2}


async def test_a_missing_file_is_file_not_found_and_other_errors_are_os_errors(
    tmp_path: Path,
) -> None:
    conn = FakeConn(
        {
            "fs/read_text_file": [
                JsonRpcException(code=RESOURCE_NOT_FOUND, message="gone"),
                JsonRpcException(code=-32603, message="ENOENT: no such file"),
                JsonRpcException(code=-32603, message="permission denied"),
            ]
        }
    )
    host = _host(conn)
    for _ in range(2):
        with pytest.raises(FileNotFoundError):
            await host.read_text_file(tmp_path / "a.txt")
    with pytest.raises(OSError, match="could not read"):
        await host.read_text_file(tmp_path / "a.txt")


async def test_without_the_capability_nothing_is_asked_of_the_editor(tmp_path: Path) -> None:
    conn = FakeConn()
    host = _host(conn, {})
    with pytest.raises(CapabilityNotOffered):
        await host.write_text_file(tmp_path / "a.txt", "local\n")
    with pytest.raises(CapabilityNotOffered):
        await host.read_text_file(tmp_path / "a.txt")
    with pytest.raises(CapabilityNotOffered):
        await host.create_terminal(TerminalRequest(command="ls"))
    assert conn.sent == []


async def test_writes_go_to_the_editor(tmp_path: Path) -> None:
    conn = FakeConn({"fs/write_text_file": [None, JsonRpcException(code=-32603, message="ro")]})
    host = _host(conn)
    await host.write_text_file(tmp_path / "a.txt", "new")
    assert conn.requests("fs/write_text_file") == [
        {"sessionId": "s1", "path": str(tmp_path / "a.txt"), "content": "new"}
    ]
    with pytest.raises(OSError, match="could not write"):
        await host.write_text_file(tmp_path / "a.txt", "again")


async def test_a_terminal_is_created_waited_for_read_killed_and_released(tmp_path: Path) -> None:
    conn = FakeConn(
        {
            "terminal/create": [{"terminalId": "term-1"}],
            "terminal/wait_for_exit": [{"exitCode": 3}],
            "terminal/output": [
                {"output": "out", "truncated": True, "exitStatus": {"exitCode": 3}}
            ],
            "terminal/kill": [None],
            "terminal/release": [None],
        }
    )
    request = TerminalRequest(
        command="ls", args=("-l",), cwd=tmp_path, env={"A": "1"}, output_byte_limit=10
    )
    terminal = await _host(conn).create_terminal(request)
    assert (await terminal.wait_for_exit()).exit_code == 3
    output = await terminal.output()
    assert (output.output, output.truncated, output.exit) == ("out", True, output.exit)
    assert output.exit is not None and output.exit.exit_code == 3
    await terminal.kill()
    await terminal.release()
    (created,) = conn.requests("terminal/create")
    assert created == {
        "sessionId": "s1",
        "command": "ls",
        "args": ["-l"],
        "env": [{"name": "A", "value": "1"}],
        "cwd": str(tmp_path),
        "outputByteLimit": 10,
    }
    ids = {p["terminalId"] for m, p in conn.sent if m != "terminal/create"}
    assert ids == {"term-1"}


async def test_a_terminal_created_after_a_cancel_is_killed_and_released() -> None:
    created: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    class Slow(FakeConn):
        async def request(self, method: str, params: Any) -> Any:
            if method == "terminal/create":
                self.sent.append((method, params))
                return await created
            return await super().request(method, params)

    conn = Slow({"terminal/kill": [None], "terminal/release": [None]})
    task = asyncio.ensure_future(_host(conn).create_terminal(TerminalRequest(command="sleep")))
    while not conn.requests("terminal/create"):
        await asyncio.sleep(0)
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()  # again (the turn's abort grace ran out): the cleanup is still waited for
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done()
    created.set_result({"terminalId": "late"})
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [m for m, _ in conn.sent] == ["terminal/create", "terminal/kill", "terminal/release"]
