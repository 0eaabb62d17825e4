"""Spine e2e (issues 22.1 and 23): the real `adk-acp` process serves `initialize`,
`session/new`, a prompt with an @-mention and a tool call, and a `session/load`
without ever importing the `agent-client-protocol` package (`acp`): its messages are
our own light models (`acp_server.schema`), still checked against the official
schema by the client; nor httpx's command-line client (click, rich, pygments).
Python's own import log (`PYTHONPROFILEIMPORTTIME`) says what the process imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.importtime import parse_importtime
from tests.e2e.spine import MakeAgent, dirs, start_session
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = [pytest.mark.e2e, pytest.mark.cold]  # the real process' own imports


def _acp_modules(stderr: str) -> list[str]:
    names = [record.name for record in parse_importtime(stderr)]
    assert "acp_server.schema" in names  # the import log is there
    return [name for name in names if name == "acp" or name.startswith("acp.")]


async def test_serving_a_session_never_imports_the_acp_package(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    (d.workspace / "notes.txt").write_text("first line\n")
    fake_gemini.add(
        function_call_response("read_file", {"file_path": str(d.workspace / "notes.txt")}),
        text_response("It says: first line."),
    )
    client, sid = await start_session(
        make_agent, d, fake_gemini, env={"PYTHONPROFILEIMPORTTIME": "1"}
    )
    mention = {
        "type": "resource_link",
        "name": "notes.txt",
        "uri": f"file://{d.workspace}/notes.txt",
    }
    blocks = [{"type": "text", "text": "what does it say?"}, mention]
    assert await client.prompt(sid, blocks) == {"stopReason": "end_turn"}
    assert client.updates(sid, "tool_call") and client.text_of(sid).endswith("first line.")
    loaded = await client.load_session(sid, d.workspace)
    assert "modes" in loaded
    assert client.violations == []  # every message matched the official schema
    assert _acp_modules(client.stderr_text) == []
    # httpx's command-line client and what it pulls in stay out (runtime/adk/compat.py)
    imported = {record.name for record in parse_importtime(client.stderr_text)}
    assert {"httpx", "google.genai"} <= imported
    assert imported.isdisjoint({"click", "rich", "pygments"})
