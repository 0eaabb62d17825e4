"""Issue #3 end to end: file tools through the real agent process.

Reads without asking, writes and replaces asked with a diff preview, rejection,
failed edits, a workspace deny rule for `.env`, and paths leading out of the
workspace — each with a client that serves fs (and terminals) and, where the
routing matters, with one that does not.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.tools_harness import (
    CAPS,
    EDITOR,
    OPTIONS,
    MakeAgent,
    diff_of,
    function_responses,
    response_text,
    start_agent,
    uses_editor,
)
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    function_call_response,
    text_response,
)

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("caps", CAPS)
async def test_read_file_runs_without_asking_and_reaches_the_model(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: dict
) -> None:
    workspace = (tmp_path / "ws").resolve()
    target = workspace / "a.txt"
    buffer = "unsaved line one\nunsaved line two\n"
    fake_gemini.add(
        function_call_response("read_file", {"file_path": "a.txt"}),
        text_response("I have read it."),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        caps,
        files={"a.txt": "disk line one\ndisk line two\n"},
        unsaved_buffers={str(target): buffer},
        permission_policy="queue",
    )

    assert await agent.prompt("Read a.txt") == {"stopReason": "end_turn"}

    assert agent.client.permission_requests == []
    (call,) = agent.tool_calls()
    updates = agent.tool_updates(call["toolCallId"])
    assert [u["status"] for u in updates] == ["pending", "in_progress", "completed"]
    assert call["kind"] == "read"
    assert call["title"] == "Read a.txt"
    assert call["locations"] == [{"path": str(target)}]
    assert call["rawInput"] == {"file_path": "a.txt"}

    (response,) = function_responses(fake_gemini.generate_requests[1])
    assert response["name"] == "read_file"
    if uses_editor(caps):
        # the editor's unsaved buffer wins over the file on disk
        assert response["response"] == {"output": "unsaved line one\nunsaved line two"}
        assert agent.client.files.reads == [str(target)]
    else:
        assert response["response"] == {"output": "disk line one\ndisk line two"}
        assert agent.client.files.calls == []
    assert agent.text() == "I have read it."


@pytest.mark.parametrize("caps", CAPS)
async def test_write_is_asked_with_a_diff_then_written(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: dict
) -> None:
    args = {"file_path": "a.txt", "content": "new content\n"}
    created = {"file_path": "sub/new.txt", "content": "brand new\n"}
    fake_gemini.add(
        function_call_response("write_file", args),
        function_call_response("write_file", created),
        text_response("Both written."),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        caps,
        files={"a.txt": "old content\n"},
        permission_policy="queue",
    )
    target = agent.workspace / "a.txt"
    pending = agent.client.start_prompt(agent.session_id, "Rewrite a.txt, create sub/new.txt")

    request = await agent.client.next_permission_request()
    tool_call = request.tool_call
    assert tool_call["kind"] == "edit"
    assert tool_call["name"] == "write_file"  # ACP 1.21
    assert tool_call["title"] == "Write a.txt"
    assert tool_call["locations"] == [{"path": str(target)}]
    assert tool_call["rawInput"] == args
    assert tool_call["content"] == [
        {
            "type": "diff",
            "path": str(target),
            "oldText": "old content\n",
            "newText": "new content\n",
        }
    ]
    assert [(o["optionId"], o["name"], o["kind"]) for o in request.options] == OPTIONS
    # the diff is shown before anything is written
    assert target.read_text() == "old content\n"
    assert agent.client.files.writes == []
    (start,) = agent.tool_calls()
    assert start["status"] == "pending" and diff_of(start) == tool_call["content"][0]
    request.select("proceed_once")

    second = await agent.client.next_permission_request()
    new_path = agent.workspace / "sub" / "new.txt"
    assert second.tool_call["title"] == "Write sub/new.txt"
    new_diff = diff_of(second.tool_call)
    assert new_diff["path"] == str(new_path) and new_diff["newText"] == "brand new\n"
    assert new_diff.get("oldText") is None  # a new file
    second.select("proceed_once")

    assert await pending.result(30) == {"stopReason": "end_turn"}
    assert target.read_text() == "new content\n"
    assert new_path.read_text() == "brand new\n"
    if uses_editor(caps):
        assert agent.client.files.writes == [str(target), str(new_path)]
    else:
        assert agent.client.files.calls == []
        # atomic local writes leave no temporary files behind
        assert sorted(p.name for p in agent.workspace.iterdir()) == ["a.txt", "sub"]
        assert os.listdir(new_path.parent) == ["new.txt"]

    first_call = agent.tool_calls()[0]["toolCallId"]
    done = agent.final(first_call)
    assert done["status"] == "completed"
    assert diff_of(done) == {
        "type": "diff",
        "path": str(target),
        "oldText": "old content\n",
        "newText": "new content\n",
    }
    responses = [function_responses(r)[0] for r in fake_gemini.generate_requests[1:3]]
    assert response_text(responses[0]) == "Successfully overwrote file: a.txt"
    assert response_text(responses[1]) == "Successfully created and wrote to new file: sub/new.txt"


async def test_rejected_write_writes_nothing_and_the_model_continues(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    args = {"file_path": "a.txt", "content": "unwanted\n"}
    fake_gemini.add(
        function_call_response("write_file", args),
        text_response("Understood, I left it alone."),
        function_call_response("write_file", args),
        text_response("Still not writing."),
        function_call_response("write_file", args),
        text_response("Denied again."),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        EDITOR,
        files={"a.txt": "keep me\n"},
        permission_policy="queue",
    )
    target = agent.workspace / "a.txt"

    # "Reject" once
    pending = agent.client.start_prompt(agent.session_id, "Overwrite a.txt")
    (await agent.client.next_permission_request()).select("cancel")
    assert await pending.result(30) == {"stopReason": "end_turn"}
    assert "Understood, I left it alone." in agent.text()
    (response,) = function_responses(fake_gemini.generate_requests[1])
    assert response["response"] == {"error": "The user rejected this tool call."}
    first = agent.tool_calls()[0]["toolCallId"]
    assert agent.final(first)["status"] == "failed"

    # "Reject always": this call is rejected and the next one is not asked again
    pending = agent.client.start_prompt(agent.session_id, "Overwrite a.txt again")
    (await agent.client.next_permission_request()).select("reject_always")
    assert await pending.result(30) == {"stopReason": "end_turn"}
    assert await agent.prompt("And once more") == {"stopReason": "end_turn"}
    assert len(agent.client.permission_requests) == 2
    (response,) = function_responses(fake_gemini.generate_requests[5])
    assert "denied" in response_text(response).lower()
    assert agent.final(agent.tool_calls()[-1]["toolCallId"])["status"] == "failed"
    assert agent.text().endswith("Denied again.")

    assert target.read_text() == "keep me\n"
    assert agent.client.files.writes == []


@pytest.mark.parametrize("caps", CAPS)
async def test_replace_shows_a_diff_and_a_non_unique_match_fails(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: dict
) -> None:
    fake_gemini.add(
        function_call_response(
            "replace",
            {
                "file_path": "code.py",
                "instruction": "rename beta",
                "old_string": "beta = 2",
                "new_string": "BETA = 2",
            },
        ),
        function_call_response(
            "replace",
            {
                "file_path": "dup.txt",
                "instruction": "change one",
                "old_string": "same",
                "new_string": "other",
            },
        ),
        text_response("Done."),
    )
    disk = "alpha = 1\nbeta = 2\ngamma = 3\n"
    unsaved = "alpha = 1\nbeta = 2\ngamma = 3\ndelta = 4\n"  # the editor's buffer
    code = (tmp_path / "ws").resolve() / "code.py"
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        caps,
        files={"code.py": disk, "dup.txt": "same\nsame\n"},
        unsaved_buffers={str(code): unsaved},
        permission_policy="queue",
    )
    pending = agent.client.start_prompt(agent.session_id, "Rename beta")

    before = unsaved if uses_editor(caps) else disk
    after = before.replace("beta", "BETA")
    request = await agent.client.next_permission_request()
    assert request.tool_call["kind"] == "edit"
    assert request.tool_call["title"] == "Edit code.py"
    assert request.tool_call["content"] == [
        {"type": "diff", "path": str(code), "oldText": before, "newText": after}
    ]
    request.select("proceed_once")

    assert await pending.result(30) == {"stopReason": "end_turn"}
    assert code.read_text() == after
    first, second = (c["toolCallId"] for c in agent.tool_calls())
    assert diff_of(agent.final(first))["newText"] == after

    # the ambiguous edit fails with a message that tells the model what to do
    assert agent.final(second)["status"] == "failed"
    (response,) = function_responses(fake_gemini.generate_requests[2])
    message = response["response"]["error"]
    assert "occurs 2 times" in message and "allow_multiple" in message
    assert (agent.workspace / "dup.txt").read_text() == "same\nsame\n"
    assert len(agent.client.permission_requests) == 1  # a doomed edit is not put to the user
    if uses_editor(caps):
        assert agent.client.files.writes == [str(code)]


@pytest.mark.parametrize("caps", CAPS)
async def test_deny_rule_keeps_dot_env_unread(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: dict
) -> None:
    workspace = (tmp_path / "ws").resolve()
    rule = (
        "[[rule]]\n"
        'toolName = "read_file"\n'
        'argsPattern = \'"file_path":"[^"]*\\.env"\'\n'
        'decision = "deny"\n'
        "priority = 500\n"
        'denyMessage = "Secrets in .env are off limits."\n'
    )
    fake_gemini.add(
        function_call_response("read_file", {"file_path": ".env"}),
        function_call_response("read_file", {"file_path": str(workspace / ".env")}),
        text_response("I will not read it."),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        caps,
        files={".env": "API_TOKEN=hunter2\n", ".gemini/policies/x.toml": rule},
        permission_policy="queue",
    )

    assert await agent.prompt("Show me .env") == {"stopReason": "end_turn"}

    assert agent.client.files.reads == []
    assert agent.client.permission_requests == []
    for request in fake_gemini.generate_requests[1:3]:
        (response,) = function_responses(request)
        assert response["response"] == {
            "error": "Tool execution denied by policy: Secrets in .env are off limits."
        }
    for call in agent.tool_calls():
        assert agent.final(call["toolCallId"])["status"] == "failed"
    assert all("hunter2" not in str(r.body) for r in fake_gemini.requests)


@pytest.mark.parametrize("caps", CAPS)
async def test_paths_leading_out_of_the_workspace_are_refused(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path, caps: dict
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "outside.txt"
    secret.write_text("outside secret\n")
    workspace = (tmp_path / "ws").resolve()
    workspace.mkdir()
    (workspace / "link.txt").symlink_to(secret)
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    calls = [
        ("read_file", {"file_path": "../outside/outside.txt"}),
        ("write_file", {"file_path": str(outside / "new.txt"), "content": "x"}),
        ("read_file", {"file_path": "link.txt"}),
        ("write_file", {"file_path": "link.txt", "content": "overwritten"}),
        ("write_file", {"file_path": "linkdir/planted.txt", "content": "x"}),
        ("replace", {"file_path": "../outside/outside.txt", "instruction": "i",
                     "old_string": "outside", "new_string": "inside"}),
        ("list_directory", {"dir_path": ".."}),
        ("run_shell_command", {"command": "touch planted.txt", "dir_path": "../outside"}),
    ]  # fmt: skip
    fake_gemini.add(*(function_call_response(n, a) for n, a in calls), text_response("Refused."))
    agent = await start_agent(make_agent, tmp_path, fake_gemini, caps, permission_policy="queue")

    assert await agent.prompt("Look outside") == {"stopReason": "end_turn"}

    assert agent.client.permission_requests == []
    assert agent.client.files.calls == []
    assert agent.client.terminals.calls == []
    assert secret.read_text() == "outside secret\n"
    assert sorted(os.listdir(outside)) == ["outside.txt"]
    assert len(agent.tool_calls()) == len(calls)
    for call in agent.tool_calls():
        assert agent.final(call["toolCallId"])["status"] == "failed"
    for request in fake_gemini.generate_requests[1 : len(calls) + 1]:
        (response,) = function_responses(request)
        assert "outside the workspace" in response["response"]["error"]
        assert "outside secret" not in str(response)


async def test_scripted_model_file_drives_an_approved_write(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    """The same flow from a `--fake-responses` script (Gemini CLI's JSONL) instead of the server."""

    def line(*parts: dict) -> dict:
        content = {"role": "model", "parts": list(parts)}
        candidate = {"content": content, "finishReason": "STOP"}
        return {"method": "generateContentStream", "response": [{"candidates": [candidate]}]}

    call = {"functionCall": {"name": "write_file", "args": {"file_path": "a.txt", "content": "x"}}}
    lines = [line(call), line({"text": "Wrote a.txt."})]
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in lines))
    agent = await start_agent(
        make_agent, tmp_path, fake_gemini, EDITOR, args=["--fake-responses", str(script)]
    )

    assert await agent.prompt("write a.txt") == {"stopReason": "end_turn"}

    (request,) = agent.client.permission_requests
    assert diff_of(request.tool_call)["newText"] == "x"
    assert (agent.workspace / "a.txt").read_text() == "x"
    assert agent.client.files.writes == [str(agent.workspace / "a.txt")]
    assert agent.text() == "Wrote a.txt."
    assert fake_gemini.requests == []  # the script answered, not the server
