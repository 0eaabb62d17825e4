"""Our own ACP message models (`acp_server.schema`): strict where the official schema is
strict, lenient where it asks a receiver to be, frozen once sent, built on first use, and
the `acp` package never imported by a server that served a prompt."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from acp_server import schema
from acp_server.transport import dump

ROOT = Path(__file__).resolve().parents[3]


def _run_python(code: str, tmp_path: Path) -> Any:
    """`code` in a fresh interpreter (cwd: the repository); its last stdout line, as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


SERVE_A_PROMPT = """
import asyncio, io, json, sys
from pathlib import Path

from acp_server.server import ServerOptions, serve_on
from acp_server.stdio import Output
from acp_server.transport import JsonRpcConnection
from runtime.config import AgentFlags

tmp = Path(sys.argv[1])
home, work = tmp / "home", tmp / "work"
home.mkdir()
work.mkdir()
answer = {"content": {"role": "model", "parts": [{"text": "hello"}]}, "finishReason": "STOP"}
script = tmp / "model.jsonl"
script.write_text(json.dumps(
    {"method": "generateContentStream", "response": [{"candidates": [answer]}]}
) + "\\n")


def lines(sink):
    return [json.loads(line) for line in sink.getvalue().splitlines()]


async def answered(sink, request_id):
    for _ in range(2400):
        for message in lines(sink):
            if message.get("id") == request_id:
                return message
        await asyncio.sleep(0.05)
    raise AssertionError(f"no answer to {request_id}: {lines(sink)}")


async def main():
    sink = io.BytesIO()
    conn = JsonRpcConnection(Output(sink))
    flags = AgentFlags(fake_responses=script, sessions_dir=tmp / "sessions")
    state = serve_on(conn, ServerOptions(flags=flags, env={"HOME": str(home)}, home=home))

    def send(i, method, params):
        message = {"jsonrpc": "2.0", "id": i, "method": method, "params": params}
        conn.feed(json.dumps(message).encode())

    caps = {"fs": {"readTextFile": True}}
    send(1, "initialize", {"protocolVersion": 1, "clientCapabilities": caps})
    await answered(sink, 1)
    send(2, "session/new", {"cwd": str(work), "mcpServers": []})
    session_id = (await answered(sink, 2))["result"]["sessionId"]
    prompt = [{"type": "text", "text": "hi"}]
    send(3, "session/prompt", {"sessionId": session_id, "prompt": prompt})
    result = (await answered(sink, 3))["result"]
    kinds = [m["params"]["update"]["sessionUpdate"] for m in lines(sink) if m.get("method")]
    await state.shutdown()
    acp = sorted(m for m in sys.modules if m == "acp" or m.startswith("acp."))
    print(json.dumps({"result": result, "kinds": kinds, "acp": acp}))


asyncio.run(main())
"""


def test_a_server_that_served_a_prompt_never_imported_the_acp_package(tmp_path: Path) -> None:
    seen = _run_python(SERVE_A_PROMPT, tmp_path)
    assert seen["result"] == {"stopReason": "end_turn"}
    assert "agent_message_chunk" in seen["kinds"]
    assert seen["acp"] == []


def test_importing_the_models_builds_none_of_them(tmp_path: Path) -> None:
    code = """
    import json
    from acp_server import schema
    built = [name for name in schema.__all__
             if getattr(getattr(schema, name), "__pydantic_complete__", False)]
    schema.PromptRequest.model_validate({"sessionId": "s", "prompt": []})
    print(json.dumps({"built": built, "after": schema.PromptRequest.__pydantic_complete__}))
    """
    seen = _run_python(code, tmp_path)
    assert seen == {"built": [], "after": True}


# ------------------------------------------------------------------ strict where it is strict


@pytest.mark.parametrize(
    ("model", "params"),
    [
        (schema.PromptRequest, {"prompt": [{"type": "text", "text": "hi"}]}),
        (schema.PromptRequest, {"sessionId": "s", "prompt": [{"type": "video", "data": "x"}]}),
        (schema.PromptRequest, {"sessionId": "s", "prompt": [{"type": "text"}]}),
        (schema.PromptRequest, {"sessionId": 7, "prompt": []}),
        (schema.NewSessionRequest, {"cwd": "/w"}),
        (schema.LoadSessionRequest, {"cwd": "/w", "mcpServers": []}),
        (schema.InitializeRequest, {"protocolVersion": 70000}),
        (schema.InitializeRequest, {}),
        (schema.SetSessionModeRequest, {"sessionId": "s"}),
        (schema.AuthenticateRequest, {"methodId": None}),
    ],
)
def test_bad_required_fields_are_refused(model: type[schema.AcpModel], params: Any) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(params)


# ------------------------------------------------------------------ lenient where it asks


def test_malformed_items_and_optional_fields_are_dropped_as_the_schema_asks() -> None:
    request = schema.NewSessionRequest.model_validate(
        {
            "cwd": "/w",
            "additionalDirectories": ["/a", 3, "/b"],
            "mcpServers": [
                {"name": "ok", "command": "srv", "args": [], "env": []},
                {"name": "no command"},
                {"type": "http", "name": "web", "url": "http://x", "headers": []},
            ],
            "_meta": "not an object",
        }
    )
    assert request.additional_directories == ["/a", "/b"]
    assert [type(s).__name__ for s in request.mcp_servers] == ["McpServerStdio", "HttpMcpServer"]
    assert request.field_meta is None


def test_initialize_reads_odd_clients_as_the_pinned_sdk_did() -> None:
    dated = schema.InitializeRequest.model_validate(
        {"protocolVersion": "2024-11-05", "clientCapabilities": "junk", "clientInfo": 5}
    )
    assert dated.protocol_version == 1 and dated.client_info is None
    assert dump(dated)["clientCapabilities"] == {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
        "auth": {"terminal": False},
    }
    caps = schema.InitializeRequest.model_validate(
        {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": "maybe"}},
        }
    ).client_capabilities
    assert (caps.fs.read_text_file, caps.fs.write_text_file, caps.terminal) == (True, False, False)


def test_prompt_blocks_are_read_by_their_type() -> None:
    request = schema.PromptRequest.model_validate(
        {
            "sessionId": "s",
            "prompt": [
                {"type": "text", "text": "see", "annotations": {"priority": "high"}},
                {"type": "image", "data": "AAAA", "mimeType": "image/png", "uri": 5},
                {"type": "resource_link", "name": "a", "uri": "file:///a", "size": "big"},
                {"type": "resource", "resource": {"uri": "file:///b", "blob": "AAAA"}},
            ],
        }
    )
    image, link, embedded = request.prompt[1], request.prompt[2], request.prompt[3]
    assert isinstance(image, schema.ImageContentBlock) and image.uri is None
    assert isinstance(link, schema.ResourceContentBlock) and link.size is None
    assert isinstance(embedded, schema.EmbeddedResourceContentBlock)
    assert isinstance(embedded.resource, schema.BlobResourceContents)


# ------------------------------------------------------------------ what the agent sends


def test_sent_objects_are_frozen() -> None:
    chunk = schema.AgentMessageChunk(content=schema.TextContentBlock(text="hi"))
    with pytest.raises(ValidationError):
        chunk.message_id = "m"  # type: ignore[misc]


SENT = [
    schema.AgentMessageChunk(content=schema.TextContentBlock(text="hi"), field_meta={"k": 1}),
    schema.UserMessageChunk(
        content=schema.ImageContentBlock(data="AAAA", mime_type="image/png", uri="file:///i")
    ),
    schema.AgentThoughtChunk(content=schema.TextContentBlock(text="hmm")),
    schema.ToolCallStart(
        tool_call_id="t1",
        title="Edit a.py",
        kind="edit",
        status="pending",
        locations=[schema.ToolCallLocation(path="/w/a.py", line=3)],
        raw_input={"path": "/w/a.py"},
        content=[
            schema.FileEditToolCallContent(path="/w/a.py", old_text=None, new_text="x"),
            schema.TerminalToolCallContent(terminal_id="term"),
            schema.ContentToolCallContent(content=schema.TextContentBlock(text="out")),
        ],
    ),
    schema.ToolCallProgress(tool_call_id="t1", status="completed", raw_output={"ok": True}),
    schema.AgentPlanUpdate(
        entries=[schema.PlanEntry(content="do it", priority="high", status="pending")]
    ),
    schema.AvailableCommandsUpdate(
        available_commands=[
            schema.AvailableCommand(
                name="model", description="Switch", input=schema.AvailableCommandInput(hint="[id]")
            )
        ]
    ),
    schema.CurrentModeUpdate(current_mode_id="plan"),
    schema.ConfigOptionUpdate.model_validate(
        {
            "configOptions": [
                {
                    "id": "mode",
                    "name": "Mode",
                    "category": "mode",
                    "type": "select",
                    "currentValue": "plan",
                    "options": [{"value": "plan", "name": "Plan"}],
                }
            ]
        }
    ),
    schema.SessionInfoUpdate(title="Fix it", updated_at="2026-01-01T00:00:00Z"),
    schema.UsageUpdate(used=10, size=100),
]


@pytest.mark.parametrize("update", SENT, ids=lambda u: type(u).__name__)
def test_each_sent_update_matches_the_official_schema(update: schema.Sent) -> None:
    from tests.e2e.official_schema import official_schema

    official = official_schema()
    if official is None:
        pytest.skip("no official ACP schema here")
    notification = {"sessionId": "s", "update": dump(update)}
    assert official.problem("session/update", "client", "Notification", notification) is None


def test_answers_match_the_official_schema() -> None:
    from tests.e2e.official_schema import official_schema

    official = official_schema()
    if official is None:
        pytest.skip("no official ACP schema here")
    modes = {
        "currentModeId": "default",
        "availableModes": [{"id": "default", "name": "Default", "description": None}],
    }
    answers = {
        "session/new": schema.NewSessionResponse.model_validate(
            {"sessionId": "s", "modes": modes, "configOptions": []}
        ),
        "session/load": schema.LoadSessionResponse.model_validate({"modes": modes}),
        "session/prompt": schema.PromptResponse(stop_reason="end_turn"),
        "session/set_mode": schema.SetSessionModeResponse(),
        "session/close": schema.CloseSessionResponse(),
        "authenticate": schema.AuthenticateResponse(),
    }
    for method, answer in answers.items():
        assert official.problem(method, "agent", "Response", dump(answer)) is None, method
    assert dump(answers["session/load"])["modes"]["availableModes"] == [
        {"id": "default", "name": "Default"}
    ]
