"""Gemini CLI's hooks, all eleven events (issue 11), through the real agent process.

Each hook is a small Python script that logs the JSON it got (one line per call in
`<tmp>/hooks.log`) and answers what its test gives it."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.tools_harness import EDITOR, MakeAgent, start_agent, wait_until
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    function_call_response,
    text_response,
    usage,
)

pytestmark = pytest.mark.e2e


def hook(
    tmp_path: Path,
    name: str,
    answer: dict[str, Any] | str = "",
    *,
    exit_code: int = 0,
    sleep_s: float = 0.0,
    on_retry: dict[str, Any] | str | None = None,
) -> str:
    """A hook command: logs its input, sleeps, prints `answer` (`on_retry` instead
    when its input has `stop_hook_active: true`), exits with `exit_code`."""
    script = tmp_path / f"{name}.py"
    text = answer if isinstance(answer, str) else json.dumps(answer)
    retry = text if on_retry is None else on_retry
    retry = retry if isinstance(retry, str) else json.dumps(retry)
    script.write_text(
        "import json, sys, time\n"
        "data = json.load(sys.stdin)\n"
        f"with open({str(tmp_path / 'hooks.log')!r}, 'a') as log:\n"
        f"    log.write(json.dumps({{'hook': {name!r}, **data}}) + '\\n')\n"
        f"time.sleep({sleep_s})\n"
        f"sys.stdout.write({retry!r} if data.get('stop_hook_active') else {text!r})\n"
        f"sys.exit({exit_code})\n"
    )
    return f"python3 {script}"


def calls(tmp_path: Path, name: str | None = None) -> list[dict[str, Any]]:
    log = tmp_path / "hooks.log"
    if not log.exists():
        return []
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return [c for c in lines if name is None or c["hook"] == name]


def settings(tmp_path: Path, hooks: dict[str, list[dict[str, Any]]]) -> None:
    path = tmp_path / "ws" / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks}))


def group(command: str, matcher: str = "", **extra: Any) -> dict[str, Any]:
    return {"matcher": matcher, "hooks": [{"type": "command", "command": command, **extra}]}


async def test_lifecycle_and_agent_hooks(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    settings(
        tmp_path,
        {
            "SessionStart": [
                group(
                    hook(
                        tmp_path,
                        "start",
                        {
                            "systemMessage": "Welcome back.",
                            "hookSpecificOutput": {"additionalContext": "Sprint goal: tests."},
                        },
                    ),
                    matcher="startup",
                ),
                group(hook(tmp_path, "resumed"), matcher="resume"),
            ],
            "BeforeAgent": [
                group(
                    hook(
                        tmp_path,
                        "before_agent",
                        {"hookSpecificOutput": {"additionalContext": "Branch: main"}},
                    )
                )
            ],
            "AfterAgent": [
                group(
                    hook(
                        tmp_path,
                        "after_agent",
                        {"decision": "deny", "reason": "Add a summary."},
                        on_retry="",
                    )
                )
            ],
            "PreCompress": [group(hook(tmp_path, "pre_compress"), matcher="manual")],
            "SessionEnd": [group(hook(tmp_path, "end"))],
        },
    )
    fake_gemini.add(text_response("first answer"), text_response("Summary: done."))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    # session/new may be answered before the engine (and its hooks) is up: wait
    await wait_until(lambda: bool(calls(tmp_path, "start")), 30, "SessionStart")
    assert [c["source"] for c in calls(tmp_path, "start")] == ["startup"]

    assert await agent.prompt("do the thing") == {"stopReason": "end_turn"}
    first, retry = fake_gemini.generate_requests
    sent = first.last_user_text
    assert "do the thing" in sent and "Sprint goal: tests." in sent and "Branch: main" in sent
    # AfterAgent's deny is sent back, as a new prompt (through BeforeAgent again)
    assert retry.last_user_text == "Add a summary.<hook_context>Branch: main</hook_context>"
    after, _ = calls(tmp_path, "after_agent")
    assert after["prompt"] == "do the thing" and after["prompt_response"] == "first answer"
    assert after["hook_event_name"] == "AfterAgent" and after["session_id"] == agent.session_id
    assert after["transcript_path"].endswith(".jsonl")
    assert "Welcome back." in agent.text() and agent.text().endswith("Summary: done.")

    await agent.prompt("/compress")
    assert [c["trigger"] for c in calls(tmp_path, "pre_compress")] == ["manual"]

    assert await agent.client.request("session/close", {"sessionId": agent.session_id}) == {}
    assert [c["reason"] for c in calls(tmp_path, "end")] == ["exit"]

    # loading it again is a resume, as Gemini CLI's `--resume`: only the `resume` matcher
    await agent.client.load_session(agent.session_id, agent.workspace)
    await wait_until(lambda: bool(calls(tmp_path, "resumed")), 30, "SessionStart on load")
    assert [c["source"] for c in calls(tmp_path, "resumed")] == ["resume"]
    assert [c["source"] for c in calls(tmp_path, "start")] == ["startup"]


async def test_a_before_agent_hook_blocks_a_prompt(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    settings(
        tmp_path,
        {"BeforeAgent": [group(hook(tmp_path, "guard", "No deploys on Friday.", exit_code=2))]},
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    assert await agent.prompt("deploy it") == {"stopReason": "end_turn"}
    assert fake_gemini.generate_requests == []
    assert "Agent execution blocked: No deploys on Friday." in agent.text()


async def test_model_hooks_answer_rewrite_and_restrict(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    settings(
        tmp_path,
        {
            "BeforeModel": [
                group(
                    hook(
                        tmp_path,
                        "before_model",
                        {"hookSpecificOutput": {"llm_request": {"model": "gemini-2.5-flash"}}},
                    )
                )
            ],
            "BeforeToolSelection": [
                group(
                    hook(
                        tmp_path,
                        "selection",
                        {
                            "hookSpecificOutput": {
                                "toolConfig": {
                                    "mode": "ANY",
                                    "allowedFunctionNames": ["read_file", "glob"],
                                }
                            }
                        },
                    )
                )
            ],
            "AfterModel": [
                group(
                    hook(
                        tmp_path,
                        "after_model",
                        {"hookSpecificOutput": {"llm_response": {"text": "[reviewed] ok"}}},
                    )
                )
            ],
        },
    )
    fake_gemini.add(text_response("raw model text"))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    assert await agent.prompt("hello") == {"stopReason": "end_turn"}
    [request] = fake_gemini.generate_requests
    assert request.model == "gemini-2.5-flash"
    assert sorted(request.function_declaration_names) == ["glob", "read_file"]
    assert "raw model text" not in agent.text() and "[reviewed] ok" in agent.text()
    [seen] = calls(tmp_path, "before_model")
    messages = seen["llm_request"]["messages"]
    assert messages[0]["role"] == "system" and messages[-1] == {"role": "user", "content": "hello"}
    assert calls(tmp_path, "after_model")[0]["llm_response"]["text"]


async def test_a_before_model_hook_answers_instead_of_the_model(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    answer = {"hookSpecificOutput": {"llm_response": {"text": "Cached answer: 42."}}}
    settings(tmp_path, {"BeforeModel": [group(hook(tmp_path, "cache", answer))]})
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    assert await agent.prompt("the answer?") == {"stopReason": "end_turn"}
    assert fake_gemini.generate_requests == []
    assert "Cached answer: 42." in agent.text()


async def test_notification_on_a_permission_request_and_failing_hooks_do_not_stop_the_turn(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    settings(
        tmp_path,
        {
            "Notification": [group(hook(tmp_path, "notify"), matcher="ToolPermission")],
            "BeforeTool": [
                group(hook(tmp_path, "slow", sleep_s=30), timeout=500),
                group("/no/such/hook-binary"),
            ],
            "AfterTool": [group(hook(tmp_path, "garbage", "}{ not json"))],
        },
    )
    fake_gemini.add(
        function_call_response("write_file", {"file_path": "out.txt", "content": "x\n"}),
        text_response("written"),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    started = time.monotonic()
    assert await agent.prompt("write out.txt") == {"stopReason": "end_turn"}
    assert len(agent.client.permission_requests) == 1  # the harness's client allows it
    assert time.monotonic() - started < 20  # the 30 s hook was killed at 0.5 s
    assert (agent.workspace / "out.txt").read_text() == "x\n"
    [note] = calls(tmp_path, "notify")
    assert note["notification_type"] == "ToolPermission" and "write" in note["message"].lower()
    text = agent.text()
    assert "timed out after 500 ms" in text  # told, and the turn went on
    assert "could not run" in text
    assert "}{ not json" in text  # plain text with exit 0 is shown as a message
    assert text.endswith("written")


async def test_pre_compress_fires_for_automatic_and_manual_compression(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    settings(tmp_path, {"PreCompress": [group(hook(tmp_path, "pre_compress"))]})
    fake_gemini.add(
        text_response("big answer", usage=usage(600_000, 20)),  # over half of 1M
        text_response("<state_snapshot>first</state_snapshot>"),
        text_response("<state_snapshot>first</state_snapshot>"),  # verification
        text_response("second answer"),
        text_response("<state_snapshot>second</state_snapshot>"),
        text_response("<state_snapshot>second</state_snapshot>"),  # verification
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    await agent.prompt("/compress", timeout=90)  # nothing to compress: no hook
    assert calls(tmp_path, "pre_compress") == []
    await agent.prompt("first", timeout=90)
    await agent.prompt("second", timeout=90)  # compressed before it is sent
    await agent.prompt("/compress", timeout=90)
    triggers = [c["trigger"] for c in calls(tmp_path, "pre_compress")]
    assert triggers == ["auto", "manual"]
    assert agent.text().count("Compressed the conversation") == 2


async def test_a_hook_that_leaves_a_child_running_does_not_hold_the_turn(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    """Its `sleep 60 &` keeps the hook's stdout open for 60 s; the hook's answer is
    what it wrote before it exited."""
    pid_file = tmp_path / "left.pid"
    context = {"hookSpecificOutput": {"additionalContext": "Branch: main"}}
    command = f"sleep 60 & echo $! > {pid_file}; cat > /dev/null; echo '{json.dumps(context)}'"
    settings(tmp_path, {"BeforeAgent": [group(command)]})
    fake_gemini.add(text_response("answered"))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    started = time.monotonic()
    try:
        assert await agent.prompt("go") == {"stopReason": "end_turn"}
        assert time.monotonic() - started < 30  # not the 60 s of what the hook left behind
    finally:
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert "Branch: main" in json.dumps(fake_gemini.generate_requests[-1].contents)
    assert agent.text() == "answered"
