"""ACP v2 (preview) beside v1 (issue 24.4): the official TypeScript SDK's experimental v2
client (`tests/e2e/clients/ts_v2.mjs`) drives a real `adk-acp` over stdio and over
`adk-acp serve` (WebSocket), every message both ways checked against the official
`schema/v2` (by the client, and on stdio by `official_schema.trace_problems` on the
agent's protocol trace); on `serve`, a v1 client attached to the same session at once
sees the same turns in v1's shapes, checked against `schema/v1`.

Long because each test is a whole v2 session (four turns, a cancel, two replays, a close)
through one agent process and one node client: the cheapest way through every v2 part.
On stdio, and on `serve` over WebSocket and Streamable HTTP, the session goes on with the
parts v2 takes from v1's features: a compression, the fallback-model form, a subagent's
child session, Plan mode's plan file, a fork with a system prompt (`check_more_on_stdio`)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.model_script import call, text
from tests.e2e.node_clients import client_script, node_clients
from tests.e2e.official_schema import official_schema, trace_problems, traffic_problems
from tests.e2e.remote_client import RemoteAcp, start_serve
from tests.e2e.test_plan_mode import PLAN, plans_dir
from tests.e2e.test_real_clients_node import _setting, run_ts_client
from tests.e2e.test_subagent_sessions import REVIEW_FILES
from tests.fakes.gemini_errors import per_day_quota_body
from tests.fakes.gemini_server import FakeGeminiServer, reply_from_fake_response

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

TODOS = [{"description": "Read the code", "status": "in_progress"}]


def model_lines(workspace: Path, *after: str) -> list[str]:
    """The model's side of the v2 client's turns (`ts_v2.mjs`), then `after`."""
    return [
        text("Hello v2"),
        call("write_file", {"file_path": str(workspace / "t.txt"), "content": "v2\n"}),
        text("Wrote it."),
        call("write_todos", {"todos": TODOS}),
        text("Planned."),
        call("run_shell_command", {"command": "sleep 60"}),
        *after,
    ]


SUMMARY = "<state_snapshot>a file written, a plan made</state_snapshot>"


def more_on_stdio(tmp_path: Path) -> list[str]:
    """The model's side of `ts_v2.mjs`'s `moreOnStdio`: a compression, a day's quota used
    up, the reviewer subagent (`REVIEW_FILES`) reading a.py and writing its review (asked),
    a plan file in Plan mode."""
    plan_file = plans_dir(tmp_path) / "fix.md"
    return [
        *MORE_ON_STDIO,
        call("write_file", {"file_path": str(plan_file), "content": PLAN}),
        text("Planned it."),
    ]


MORE_ON_STDIO = [
    text(SUMMARY),
    text(SUMMARY),  # compression's verification pass confirms the summary
    json.dumps(per_day_quota_body("gemini-2.5-pro")),
    text("On flash."),
    call("reviewer", {"task": "review a.py"}),
    call("read_file", {"file_path": "a.py"}),
    call("write_file", {"file_path": "review.md", "content": "ok\n"}),
    call("complete_task", {"result": "a.py looks fine"}),
    text("The reviewer says a.py looks fine."),
]


def with_a_bad_setting(workspace: Path) -> None:
    """A wrongly typed setting: told as a notice at the first prompt."""
    (workspace / ".gemini").mkdir()
    settings = {"model": {"maxSessionTurns": "x"}}
    (workspace / ".gemini" / "settings.json").write_text(json.dumps(settings))


def kinds(updates: list[dict[str, Any]]) -> set[str]:
    return {u["sessionUpdate"] for u in updates}


def check_v2_client(report: dict[str, Any], workspace: Path) -> None:
    """What the v2 client saw, the same over every transport."""
    assert report.get("error") is None, report.get("error")
    assert report["invalid"] == []  # every message, both ways, valid against schema/v2
    assert report["lines"]["agent"] > 20 and report["lines"]["client"] > 8
    schema = official_schema("v2")
    assert schema is not None
    count, problems = traffic_problems(report["wire"], schema)  # each by its method and side
    assert problems == [] and count == report["lines"]["agent"] + report["lines"]["client"]
    assert report["init"]["protocolVersion"] == 2
    assert report["init"]["capabilities"]["session"]["delete"] == {}
    methods = {m["methodId"]: m["type"] for m in report["init"]["authMethods"]}
    assert methods == {"gemini-api-key": "agent", "vertex-ai": "agent", "login": "terminal"}
    assert report["stops"][:4] == ["end_turn", "end_turn", "end_turn", "cancelled"]
    assert report["texts"][:3] == ["Hello v2", "Wrote it.", "Planned."]  # no notice text in it
    notices = [u for u in report["updates"] if u["sessionUpdate"] == "notice"]
    assert notices[0]["title"].startswith("Some settings were ignored")
    # the prompt's answer is the inserted message's id, echoed as a user_message
    inserted = [u for u in report["updates"] if u["sessionUpdate"] == "user_message"]
    assert [u["messageId"] for u in inserted][:3] == report["messageIds"]
    assert inserted[0]["content"] == [{"type": "text", "text": "say hello"}]
    states = [u["state"] for u in report["updates"] if u["sessionUpdate"] == "state_update"]
    assert states[:2] == ["running", "idle"] and "requires_action" in states
    # upserts only: no v1 create or plain plan; chunks carry their message's id
    assert kinds(report["updates"]) >= {"tool_call_update", "plan_update", "agent_message_chunk"}
    assert not kinds(report["updates"]) & {"tool_call", "plan", "current_mode_update"}
    chunks = [u for u in report["updates"] if u["sessionUpdate"] == "agent_message_chunk"]
    assert all(u["messageId"] for u in chunks)
    plan = next(u["plan"] for u in report["updates"] if u["sessionUpdate"] == "plan_update")
    assert plan["planId"] == "todos" and plan["entries"][0]["content"] == "Read the code"
    # permission requests: a title and the tool call as their subject, its diff as changes
    write, command = report["permissions"][:2]
    assert write["title"] and write["subject"]["type"] == "tool_call"
    (diff,) = write["subject"]["toolCall"]["content"]
    assert diff["changes"] == [{"operation": "add", "path": str(workspace / "t.txt")}]
    assert diff["patch"]["format"] == "git_patch" and "+v2" in diff["patch"]["text"]
    assert command["subject"]["toolCall"]["kind"] == "execute"
    assert (workspace / "t.txt").read_text() == "v2\n"  # the agent's own write, no client fs
    assert report["sessionId"] in report["listed"]
    # replayFrom start: the record, then the state snapshot before the answer
    replayed = report["replayed"]
    assert {"user_message_chunk", "agent_message_chunk", "tool_call_update"} <= kinds(replayed)
    snapshot = replayed.index({"sessionUpdate": "state_update", "state": "idle"})
    assert snapshot > max(
        i
        for i, u in enumerate(replayed)
        if u["sessionUpdate"] != "state_update"
        and u["sessionUpdate"] != "available_commands_update"
    )
    assert report["close"] == {"ok": True}
    # auth: the terminal method is run by the client, not passed to auth/login
    assert report["terminalLogin"]["code"] == -32602
    assert report["login"] == {} and report["logout"] == {}


def test_the_typescript_v2_client_over_stdio(tmp_path: Path) -> None:
    clients = node_clients()
    _, workspace, env = _setting(tmp_path)
    with_a_bad_setting(workspace)
    for name, content in REVIEW_FILES.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(content)
    script = tmp_path / "model.jsonl"
    script.write_text("\n".join(model_lines(workspace, *more_on_stdio(tmp_path))) + "\n")
    trace = tmp_path / "trace.jsonl"
    env["ADK_ACP_TRACE_FILE"] = str(trace)
    v2 = client_script(clients, "ts_v2.mjs")
    report = run_ts_client(clients, v2, script, workspace, env, tmp_path)
    check_v2_client(report, workspace)
    # no hub on stdio: its cursors are refused, not ignored
    assert report["cursor"]["code"] == -32602
    check_more_on_stdio(report, tmp_path / "home")
    schema = official_schema("v2")
    assert schema is not None
    count, problems = trace_problems(trace, schema)
    assert problems == [] and count > 30


def check_more_on_stdio(report: dict[str, Any], home: Path) -> None:
    """`ts_v2.mjs`'s `moreOnStdio` (on stdio, and on serve with ADK_ACP_V2_MORE):
    compaction, the fallback's form, a subagent, Plan mode's plan, a fork."""
    assert report["stops"][4:] == ["end_turn"] * 4
    replays = len(report["replayed"]) + len(report.get("cursorReplayed") or [])
    live = report["updates"][: len(report["updates"]) - replays]
    (compaction,) = [u for u in live if u["sessionUpdate"] == "compaction_update"]
    assert compaction["status"] == "completed" and compaction["compactionId"]
    assert "a file written" in compaction["summary"][0]["text"]
    assert compaction in report["replayed"]  # the record keeps it
    # the day's quota: asked as a form in the session (requires_action), retried on flash
    (form,) = report["elicitations"]
    assert form["mode"] == "form" and form["sessionId"] == report["sessionId"]
    assert "choice" in form["requestedSchema"]["properties"]
    assert report["texts"][5] == "On flash."
    states = [u["state"] for u in report["updates"] if u["sessionUpdate"] == "state_update"]
    assert states.count("requires_action") >= 4  # two permissions, the form, the reviewer's
    # the subagent: a child session, announced running, its read under its id, then idle
    subagents = [u for u in live if u["sessionUpdate"] == "subagent_update"]
    assert [u["state"] for u in subagents] == [
        {"state": "running"},
        {"state": "idle", "stopReason": "end_turn"},
    ]
    child = subagents[0]["sessionId"]
    assert subagents[0]["title"] == "Reviewer" and child != report["sessionId"]
    assert any(u.get("title", "").startswith("Read") for u in report["children"][child])
    (asked,) = report["permissions"][2:]  # the reviewer's write, in its own session
    assert asked["sessionId"] == child and asked["subject"]["toolCall"]["kind"] == "edit"
    assert "subagent_update" in kinds(report["replayed"])
    assert report["texts"][6] == "The reviewer says a.py looks fine."
    # Plan mode's plan file: a plan of its own id beside the todo list
    plans = {u["plan"]["planId"]: u["plan"] for u in live if u["sessionUpdate"] == "plan_update"}
    assert set(plans) == {"todos", "plan:fix.md"}
    assert plans["plan:fix.md"]["entries"][0]["content"] == "Add a failing test"
    # a fork with the client's system prompt: a new session whose record keeps it
    forked = report["fork"]["sessionId"]
    assert forked != report["sessionId"] and report["fork"]["configOptions"][0]["configId"]
    records = [p for p in home.rglob(f"{forked}*") if p.is_file()]
    assert any("Answer in haiku." in p.read_text() for p in records), records
    assert report["badPrompt"]["code"] == -32602


async def test_a_v1_and_a_v2_client_on_one_serve_instance(
    fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    """The v2 client (WebSocket) and a v1 client (Streamable HTTP) on one `serve`, the v1
    client attached to the v2 client's session while it runs its turns, then a turn of
    its own on its own session: each sees its own version's shapes. Then the v2 client
    again, over Streamable HTTP."""
    clients = node_clients()
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    with_a_bad_setting(ws)
    for line in model_lines(ws, text("v1 hello")):
        fake_gemini.add(reply_from_fake_response(json.loads(line)))
    served = await start_serve(tmp_path / "home", fake_gemini.base_url, "--insecure-loopback")
    v1 = await RemoteAcp.http(served.http_url, None)
    try:
        own = await v1.new_session(ws)
        report = await _v2_beside(v1, clients, served.ws_url, ws, tmp_path)
        answer = await v1.request("session/prompt", v1.prompt_params(own, "hi"))
        over_http = (tmp_path / "over-http").resolve()
        over_http.mkdir()
        with_a_bad_setting(over_http)
        for line in model_lines(over_http):
            fake_gemini.add(reply_from_fake_response(json.loads(line)))
        report_http = await _v2_beside(
            v1, clients, served.http_url, over_http, tmp_path / "http", kind="http"
        )
    finally:
        await v1.close()
        code = await served.stop()
    assert code == 0, served.log()
    check_v2_client(report, ws)
    check_v2_client(report_http, over_http)
    assert report["cursor"] == {"ok": True}  # the hub's numbered updates, replayed
    assert "tool_call_update" in kinds(report["cursorReplayed"])
    assert answer["stopReason"] == "end_turn" and v1.text_of(own).endswith("v1 hello")
    assert v1.violations == []  # every message to the v1 client valid against schema/v1
    shared = v1.updates(report["sessionId"])
    assert {"tool_call", "plan", "agent_message_chunk"} <= kinds(shared)
    assert not kinds(shared) & {"state_update", "user_message", "plan_update"}
    assert "Hello v2" in "".join(
        u["content"].get("text", "") for u in shared if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert v1.cancelled  # asked too; the v2 client answered first


async def _v2_beside(
    v1: RemoteAcp, clients: Any, url: str, workspace: Path, tmp_path: Path, kind: str = "ws"
) -> dict[str, Any]:
    """Run the v2 client on `url` (`kind`: ws or http); `v1` attaches to its session
    before its turns."""
    tmp_path.mkdir(exist_ok=True)
    session_file, attached, report_path = (
        tmp_path / "session-id",
        tmp_path / "attached",
        tmp_path / "report.json",
    )
    script = client_script(clients, "ts_v2.mjs")
    process = await asyncio.create_subprocess_exec(
        str(clients.node),
        str(script),
        url,
        str(workspace),
        str(report_path),
        kind,
        "-",
        str(session_file),
        str(attached),
        cwd=str(clients.root),
        env={**os.environ},
    )
    try:
        for _ in range(2400):
            if session_file.exists() and session_file.read_text():
                break
            await asyncio.sleep(0.05)
        session_id = session_file.read_text()
        await v1.request("session/resume", {"sessionId": session_id, "cwd": str(workspace)})
        attached.write_text("yes")
        assert await asyncio.wait_for(process.wait(), 150) == 0
    finally:
        if process.returncode is None:
            process.kill()
    report: dict[str, Any] = json.loads(report_path.read_text())
    return report


@pytest.mark.parametrize("kind", ["ws", "http"])
async def test_the_typescript_v2_client_whole_over_serve(kind: str, tmp_path: Path) -> None:
    """ACP v2 whole over `adk-acp serve` (issue 33.3): the v2 client's whole session,
    then the parts v2 takes from v1's features (a compression, the fallback's form, a
    subagent's child session, Plan mode's plan file, a fork with a system prompt), over
    WebSocket and Streamable HTTP, every message checked against `schema/v2`."""
    clients = node_clients()
    home, workspace, env = _setting(tmp_path)
    with_a_bad_setting(workspace)
    for name, content in REVIEW_FILES.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(content)
    script = tmp_path / "model.jsonl"
    script.write_text("\n".join(model_lines(workspace, *more_on_stdio(tmp_path))) + "\n")
    served = await start_serve(
        home, None, "--insecure-loopback", "--fake-responses", str(script),
        HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
    )  # fmt: skip
    report_path = tmp_path / "report.json"
    try:
        process = await asyncio.create_subprocess_exec(
            str(clients.node), str(client_script(clients, "ts_v2.mjs")),
            served.ws_url if kind == "ws" else served.http_url,
            str(workspace), str(report_path), kind, "-",
            cwd=str(clients.root), env={**env, "ADK_ACP_V2_MORE": "1"},
        )  # fmt: skip
        assert await asyncio.wait_for(process.wait(), 170) == 0
    finally:
        code = await served.stop()
    assert code == 0, served.log()
    report: dict[str, Any] = json.loads(report_path.read_text())
    check_v2_client(report, workspace)
    assert report["cursor"] == {"ok": True}  # the hub's numbered updates
    check_more_on_stdio(report, home)
