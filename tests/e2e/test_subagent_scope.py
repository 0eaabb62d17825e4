"""A subagent's scoped execution (issue 19.6, design Phase B "scoped execution
wrappers"), through the real agent: a definition's `workspace_directories` let its run
reach a folder outside the workspace, for that run only (the main agent and the other
subagents still cannot); a filesystem root is refused with a clear error; the memory
inbox is reachable only with `memoryInboxAccess` (writes: the canonical patches only),
and `autoMemoryExtractionWriteAccess` keeps every write to the skills and the patches."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.e2e.test_subagents import agents
from tests.e2e.tools_harness import EDITOR, MakeAgent, function_responses, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]  # several sessions per prompt

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
description: A memory extraction agent.
tools: [read_file, write_file, run_shell_command]
memoryInboxAccess: true
autoMemoryExtractionWriteAccess: true
---
Extract memories into the inbox.
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
    files = agents({"librarian.md": LIBRARIAN, "rooted.md": ROOTED})
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, files=files)
    assert await agent.prompt("what do the shared notes say?", 120) == {"stopReason": "end_turn"}

    requests = fake_gemini.generate_requests
    offered = requests[0].function_declaration_names
    assert "librarian" in offered and "rooted" in offered
    [read] = function_responses(requests[2])
    assert read["response"]["output"].strip() == "the shared notes"
    [main_read] = function_responses(requests[4])
    assert "outside" in main_read["response"]["error"].lower()
    [investigator_read] = function_responses(requests[6])
    assert "outside" in investigator_read["response"]["error"].lower()
    [rooted] = function_responses(requests[8])
    assert "cannot add the filesystem root '/'" in rooted["response"]["error"]


async def test_the_memory_inbox_and_the_extraction_allowlist_scope_a_subagents_writes(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    workspace = (tmp_path / "ws").resolve()
    digest = hashlib.sha256(str(workspace).encode()).hexdigest()[:16]
    memory = tmp_path.resolve() / "home" / ".gemini" / "tmp" / digest / "memory"
    (memory / ".inbox" / "private").mkdir(parents=True)
    old = memory / ".inbox" / "private" / "old.patch"
    old.write_text("an older patch\n")
    canonical = memory / ".inbox" / "private" / "extraction.patch"
    skill = memory / "skills" / "deploy" / "SKILL.md"

    def write(path: Path | str, text: str) -> object:
        return function_call_response("write_file", {"file_path": str(path), "content": text})

    fake_gemini.add(
        function_call_response("extractor", {"task": "extract"}),  # the main agent
        function_call_response("read_file", {"file_path": str(old)}),  # the extractor
        write(canonical, "+ a fact\n"),
        write(old.parent / "other.patch", "x"),  # not canonical: refused
        write(workspace / "GEMINI.md", "x"),  # active memory: refused
        write(skill, "# Deploy\n"),
        function_call_response("complete_task", {"result": "one patch, one skill"}),
        function_call_response("read_file", {"file_path": str(old)}),  # the main agent
        text_response("done"),
    )
    agent = await start_agent(
        make_agent, tmp_path, fake_gemini, EDITOR, files=agents({"extractor.md": EXTRACTOR})
    )
    assert await agent.prompt("extract memories", 120) == {"stopReason": "end_turn"}

    requests = fake_gemini.generate_requests
    assert "run_shell_command" not in requests[1].function_declaration_names
    [read] = function_responses(requests[2])
    assert read["response"]["output"].strip() == "an older patch"
    assert canonical.read_text() == "+ a fact\n"
    [other] = function_responses(requests[4])
    assert "extraction write denied" in other["response"]["error"]
    [active] = function_responses(requests[5])
    assert "extraction write denied" in active["response"]["error"]
    assert not (old.parent / "other.patch").exists() and not (workspace / "GEMINI.md").exists()
    assert skill.read_text() == "# Deploy\n"
    assert len(agent.client.permission_requests) == 2  # the refused writes were not asked
    [main_read] = function_responses(requests[8])
    assert "outside" in main_read["response"]["error"].lower()  # the inbox is its own
