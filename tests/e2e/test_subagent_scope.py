"""A subagent's scoped execution (issue 19.6, design Phase B "scoped execution
wrappers"), through the real agent: a definition's `workspace_directories` let its run
reach a folder outside the workspace, for that run only (the main agent and the other
subagents still cannot); a filesystem root is refused with a clear error; a definition
asking for Gemini CLI's Auto Memory scopes is not offered (adk-acp has no Auto Memory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_subagents import agents
from tests.e2e.tools_harness import EDITOR, MakeAgent, function_responses, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e

LIBRARIAN = """---
name: librarian
description: Reads the team's shared notes.
tools: [read_file]
workspace_directories: [../shared]
---
You read the shared notes and report them with complete_task.
"""

ROOTED = """---
name: rooted
description: Asks for the whole disk.
workspaceDirectories: ["/"]
---
You should never run.
"""

EXTRACTOR = """---
name: extractor
description: Gemini CLI's memory extraction agent.
memoryInboxAccess: true
---
Extract memories.
"""


async def test_a_subagent_reaches_the_folders_its_definition_allows_and_only_it(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    shared = tmp_path.resolve() / "shared"
    shared.mkdir()
    notes = str(shared / "notes.txt")
    (shared / "notes.txt").write_text("the shared notes\n")
    fake_gemini.add(
        function_call_response("librarian", {"task": "read the notes"}),  # the main agent
        function_call_response("read_file", {"file_path": notes}),  # the librarian
        function_call_response("complete_task", {"result": "notes read"}),
        function_call_response("read_file", {"file_path": notes}),  # the main agent: refused
        function_call_response("codebase_investigator", {"task": "read " + notes}),
        function_call_response("read_file", {"file_path": notes}),  # no scope: refused
        function_call_response("complete_task", {"result": "could not read it"}),
        function_call_response("rooted", {"task": "anything"}),
        text_response("done"),
    )
    files = agents({"librarian.md": LIBRARIAN, "rooted.md": ROOTED, "extractor.md": EXTRACTOR})
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, files=files)
    assert await agent.prompt("what do the shared notes say?") == {"stopReason": "end_turn"}

    requests = fake_gemini.generate_requests
    offered = requests[0].function_declaration_names
    assert "librarian" in offered and "rooted" in offered
    assert "extractor" not in offered  # Auto Memory scopes: refused, not offered
    [read] = function_responses(requests[2])
    assert read["response"]["output"].strip() == "the shared notes"
    [main_read] = function_responses(requests[4])
    assert "outside" in main_read["response"]["error"].lower()
    [investigator_read] = function_responses(requests[6])
    assert "outside" in investigator_read["response"]["error"].lower()
    [rooted] = function_responses(requests[8])
    assert "cannot add the filesystem root '/'" in rooted["response"]["error"]
