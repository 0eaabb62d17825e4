"""The official ACP TypeScript SDK client and acpx driving the real `adk-acp`
(issue #8). Both answer a missing file with -32603, as users' clients do; the
TypeScript harness validates every line on the wire, both ways, against the
SDK's JSON schema. Installed on first use (`tests/e2e/node_clients.py`)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_client import CLEARED_ENV
from tests.e2e.model_script import call, text
from tests.e2e.node_clients import NodeClients, client_script, node_clients
from tests.e2e.test_subagent_sessions import REVIEW_FILES, review_replies
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e


def _setting(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    home, workspace = tmp_path / "home", (tmp_path / "ws").resolve()
    home.mkdir()
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    return home, workspace, env


def run_ts_client(
    clients: NodeClients,
    client: Path,
    script: Path | None,
    workspace: Path,
    env: dict[str, str],
    tmp_path: Path,
    *extra: str,
) -> dict[str, Any]:
    """Run a TypeScript client script on the agent (scripted by `script`, or, when None,
    by the model `env` points at); its report."""
    agent = [sys.executable, "-m", "acp_server.cli"]
    if script is not None:
        agent += ["--fake-responses", str(script)]
    report_path = tmp_path / "report.json"
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]), env.get("PYTHONPATH", "")])
    subprocess.run(
        [
            str(clients.node),
            str(client),
            json.dumps(agent),
            str(workspace),
            str(report_path),
            *extra,
        ],
        env=env,
        cwd=clients.root,
        timeout=180,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    report: dict[str, Any] = json.loads(report_path.read_text())
    return report


def test_the_official_typescript_client(tmp_path: Path) -> None:
    clients = node_clients()
    _, workspace, env = _setting(tmp_path)
    (workspace / "a.txt").write_text("alpha\n")
    script = tmp_path / "model.jsonl"
    edit = {"file_path": "a.txt", "instruction": "b", "old_string": "alpha", "new_string": "beta"}
    script.write_text(
        "\n".join(
            [
                call("read_file", {"file_path": "a.txt"}),
                text("read it"),
                call("write_file", {"file_path": "new.txt", "content": "fresh\n"}),
                text("created"),
                call("replace", edit),
                text("edited"),
                call("run_shell_command", {"command": "echo from-ts-terminal"}),
                text("ran"),
                call("run_shell_command", {"command": "sleep 60"}),
                text("never"),
            ]
        )
        + "\n"
    )
    report = run_ts_client(clients, clients.ts_client, script, workspace, env, tmp_path)
    assert report.get("error") is None, report.get("error")
    assert report["invalid"] == []  # every message, both ways, valid against the schema
    assert report["lines"]["agent"] > 10 and report["lines"]["client"] > 5
    assert report["loadSession"] is True
    assert report["stops"] == ["end_turn", "end_turn", "end_turn", "end_turn", "cancelled"]
    assert report["texts"][:4] == ["read it", "created", "edited", "ran"]
    new_diff = report["permissions"][0]["toolCall"]["content"][0]
    assert new_diff["type"] == "diff" and new_diff.get("oldText") is None
    assert (workspace / "new.txt").read_text() == "fresh\n"
    assert (workspace / "a.txt").read_text() == "beta\n"
    # the read tool, then the edit's diff, then the edit again at execution (issue 18)
    assert report["reads"] == [str(workspace / "a.txt")] * 3
    assert report["writes"] == [str(workspace / "new.txt"), str(workspace / "a.txt")]
    assert report["terminalsLeft"] == 0  # the cancelled command was killed


def test_acpx_creates_a_file_and_reads_one(tmp_path: Path) -> None:
    clients = node_clients()
    _, workspace, env = _setting(tmp_path)
    (workspace / "notes.txt").write_text("remember the milk\n")
    script = tmp_path / "model.jsonl"
    script.write_text(
        "\n".join(
            [
                call("read_file", {"file_path": "notes.txt"}),
                call("write_file", {"file_path": "todo.txt", "content": "buy milk\n"}),
                text("All done."),
            ]
        )
        + "\n"
    )
    agent = shlex.join([sys.executable, "-m", "acp_server.cli", "--fake-responses", str(script)])
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]), env.get("PYTHONPATH", "")])
    env["PATH"] = os.pathsep.join([str(clients.node.parent), env.get("PATH", "")])
    done = subprocess.run(
        [
            str(clients.node),
            str(clients.acpx),
            "--approve-all",
            "--format",
            "json",
            "--agent",
            agent,
            "exec",
            "read notes.txt and write todo.txt",
        ],
        env=env,
        cwd=workspace,
        timeout=180,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    assert (workspace / "todo.txt").read_text() == "buy milk\n"
    messages = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    wire = json.dumps(messages)
    assert "All done." in wire and "remember the milk" in wire
    (asked,) = [m for m in messages if m.get("method") == "session/request_permission"]
    (diff,) = asked["params"]["toolCall"]["content"]
    assert diff["type"] == "diff" and diff["path"] == str(workspace / "todo.txt")
    assert diff.get("oldText") is None and diff["newText"] == "buy milk\n"


def features_script(tmp_path: Path, home: Path) -> tuple[Path, Path, Path]:
    """Settings and a model script for today's ACP features: a BeforeTool hook whose
    message is a notice, a SessionStart hook that blocks a load once armed, a read with
    usage, a long answer, then a compression summary. Returns (script, armed, marker)."""
    from tests.e2e.test_unstable_parts import blocking_start_hook

    armed, marker = tmp_path / "armed", tmp_path / "hook-started"
    blocking_start_hook(home, armed, marker)
    notice = tmp_path / "notice.py"
    notice.write_text(
        "import json, sys\n"
        "json.load(sys.stdin)\n"
        "print(json.dumps({'systemMessage': 'Reads are logged.'}))\n"
    )
    settings_path = home / ".gemini" / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings["hooks"]["BeforeTool"] = [
        {"matcher": "read_file", "hooks": [{"type": "command", "command": f"python3 {notice}"}]}
    ]
    settings_path.write_text(json.dumps(settings))
    usage = {"promptTokenCount": 50, "candidatesTokenCount": 4, "totalTokenCount": 54}
    long_answer = " ".join(f"word-{i}" for i in range(40))
    script = tmp_path / "model.jsonl"
    script.write_text(
        "\n".join(
            [
                call("read_file", {"file_path": "a.txt"}, usage=usage),
                text(long_answer, usage=usage),
                text("<state_snapshot>read a.txt</state_snapshot>"),
                # compression's verification pass confirms the summary
                text("<state_snapshot>read a.txt</state_snapshot>"),
            ]
        )
        + "\n"
    )
    return script, armed, marker


def test_the_official_typescript_client_on_todays_features(tmp_path: Path) -> None:
    """Through the SDK's unstable entry point, every line checked against
    schema.unstable.json: auth methods, notices and compaction (opted in), tool-call
    names, usage, a client-set title, and a load cancelled by `$/cancel_request`."""
    clients = node_clients()
    home, workspace, env = _setting(tmp_path)
    (workspace / "a.txt").write_text("alpha\n")
    script, armed, marker = features_script(tmp_path, home)
    env["GEMINI_API_KEY"] = "from-the-environment"
    features = client_script(clients, "ts_features.mjs")
    report = run_ts_client(
        clients, features, script, workspace, env, tmp_path, str(armed), str(marker)
    )
    assert report.get("error") is None, report.get("error")
    assert report["invalid"] == []  # both ways, against the stable and unstable schema
    assert sorted(m.get("type", "agent") for m in report["authMethods"]) == [
        "agent",
        "agent",
        "terminal",
    ]
    assert report["terminalAuthenticate"]["code"] == -32602
    assert report["agentAuthenticate"] == {}
    assert report["agentCapabilities"]["sessionCapabilities"]["title"] == {}
    assert report["title"] == {"title": "From the TypeScript SDK"}
    assert report["stops"] == ["end_turn", "end_turn"]
    assert report["usages"][0] == {"totalTokens": 108, "inputTokens": 100, "outputTokens": 8}
    kinds = [u["sessionUpdate"] for u in report["updates"]]
    assert [u["name"] for u in report["updates"] if u["sessionUpdate"] == "tool_call"][0] == (
        "read_file"
    )
    assert [u["title"] for u in report["updates"] if u["sessionUpdate"] == "notice"][:1] == [
        "Reads are logged."
    ]
    assert "compaction_update" in kinds
    assert report["cancelledLoad"]["code"] == -32800
    replayed = [u["sessionUpdate"] for u in report["replayed"]]
    assert "tool_call" in replayed and "compaction_update" in replayed
    assert report["listedTitles"] == ["From the TypeScript SDK"]


SUBPLAN_TODOS = [{"description": "Fix it", "status": "in_progress"}]


def subplan_setting(fake: FakeGeminiServer, workspace: Path, env: dict[str, str]) -> None:
    """Files and model replies for subagent sessions, plan operations and the client's
    system prompt, on the fake Gemini server `env` now points at. One session (system
    prompt appended): the reviewer subagent reads a.py and writes review.md (asked, in
    its own session); then todos set, cleared, set again. A second session (overridden)
    says one line; the first, loaded with a new override, one more."""
    for name, content in REVIEW_FILES.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    env |= {"GEMINI_API_KEY": "x", "GOOGLE_GEMINI_BASE_URL": fake.base_url}
    fake.add(
        *review_replies(),
        function_call_response("write_todos", {"todos": SUBPLAN_TODOS}),
        function_call_response("write_todos", {"todos": []}),
        function_call_response("write_todos", {"todos": SUBPLAN_TODOS}),
        text_response("Planned."),
        text_response("A poem."),
        text_response("Encore."),
    )


def check_subplan(
    fake: FakeGeminiServer,
    session_id: str,
    live: list[tuple[str, dict[str, Any]]],
    replayed: list[tuple[str, dict[str, Any]]],
    asked_in: list[str],
) -> None:
    """What a client of `subplan_setting` must have seen: `live` and `replayed` are
    (sessionId, update) pairs, `asked_in` the permission requests' session ids."""
    announced = [u for sid, u in live if u["sessionUpdate"] == "subagent_update"]
    assert [sid for sid, u in live if u["sessionUpdate"] == "subagent_update"] == [session_id] * 2
    child = announced[0]["sessionId"]
    assert child != session_id
    assert announced[0]["title"] == "Reviewer" and announced[0]["description"] == "review a.py"
    assert [u["state"] for u in announced] == [
        {"state": "running"},
        {"state": "idle", "stopReason": "end_turn"},
    ]

    def calls(pairs: list[tuple[str, dict[str, Any]]], sid: str) -> list[str]:
        return [u["name"] for s, u in pairs if s == sid and u["sessionUpdate"] == "tool_call"]

    assert calls(live, child) == ["read_file", "write_file", "complete_task"]
    assert calls(live, session_id)[0] == "reviewer"
    assert asked_in == [child]  # the child's write, asked in its own session
    todos = {
        "type": "items",
        "planId": "todos",
        "entries": [{"content": "Fix it", "priority": "medium", "status": "in_progress"}],
    }
    ops = [u for _, u in live if u["sessionUpdate"] in ("plan", "plan_update", "plan_removed")]
    assert ops == [
        {"sessionUpdate": "plan_update", "plan": todos},
        {"sessionUpdate": "plan_removed", "planId": "todos"},
        {"sessionUpdate": "plan_update", "plan": todos},
    ]
    again = [u["sessionId"] for s, u in replayed if u["sessionUpdate"] == "subagent_update"]
    assert again == [child, child]
    assert calls(replayed, child) == calls(live, child)
    assert [u for _, u in replayed if u["sessionUpdate"].startswith("plan")] == [ops[-1]]

    def system(user_text: str) -> str:
        (request,) = [r for r in fake.generate_requests if r.last_user_text == user_text]
        return request.system_instruction_text

    core = "You are an interactive coding agent"
    appended = system("get a.py reviewed")
    assert core in appended and appended.rstrip().endswith("Answer in French.")
    assert system("hi").startswith("Be a poet.") and core not in system("hi")
    terse = system("again")
    assert terse.startswith("Be terse.") and "French" not in terse and core not in terse


def test_the_official_typescript_client_on_subagents_plans_and_system_prompts(
    tmp_path: Path, fake_gemini_thread: FakeGeminiServer
) -> None:
    """Through the SDK's unstable entry point, every line checked against
    schema.unstable.json: a subagent's child session (its permission request answered),
    plan operations, and `systemPrompt` on session/new and session/load."""
    clients = node_clients()
    _, workspace, env = _setting(tmp_path)
    subplan_setting(fake_gemini_thread, workspace, env)
    subplan = client_script(clients, "ts_subplan.mjs")
    report = run_ts_client(clients, subplan, None, workspace, env, tmp_path)
    assert report.get("error") is None, report.get("error")
    assert report["invalid"] == []  # both ways, against the stable and unstable schema
    assert report["stops"] == ["end_turn"] * 4
    prompt_caps = report["agentCapabilities"]["sessionCapabilities"]["systemPrompt"]
    assert prompt_caps == {"mode": {"override": {}}}
    pairs = [(u["sessionId"], u["update"]) for u in report["updates"]]
    asked = [p["sessionId"] for p in report["permissions"]]
    replayed = [(u["sessionId"], u["update"]) for u in report["replayed"]]
    check_subplan(fake_gemini_thread, report["sessionId"], pairs[: report["live"]], replayed, asked)
    assert (workspace / "review.md").read_text() == "ok\n"
