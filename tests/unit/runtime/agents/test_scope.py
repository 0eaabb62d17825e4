"""A subagent's scoped workspace (issue 19.6): the definition's folders join the parent's
roots for its run; a filesystem root is refused; Auto Memory scopes are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.agents.definitions import parse_definition
from runtime.agents.scope import ScopedWriteTool, ScopeError, WriteScope, scoped_roots


def test_the_definitions_folders_join_the_parents_roots(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    for folder in (workspace, home / "notes", tmp_path / "shared", tmp_path / "extra"):
        folder.mkdir(parents=True)
    parent = (tmp_path / "extra",)
    roots = scoped_roots(
        ("../shared", "~/notes", str(tmp_path / "extra"), ".", "missing"), parent, workspace, home
    )
    assert roots == (tmp_path / "extra", tmp_path / "shared", home / "notes")


@pytest.mark.parametrize("raw", ["/", "../../../../../../../../../../.."])
def test_a_filesystem_root_is_refused(tmp_path: Path, raw: str) -> None:
    with pytest.raises(ScopeError, match="filesystem root"):
        scoped_roots((raw,), (), tmp_path, tmp_path)


def test_definitions_take_gemini_cli_spellings() -> None:
    text = (
        "---\nname: a\ndescription: d\nworkspaceDirectories: [x, y]\n"
        "memoryInboxAccess: true\nautoMemoryExtractionWriteAccess: true\n---\nbody"
    )
    definition = parse_definition(text, "f")
    assert definition.workspace_directories == ("x", "y")
    assert definition.memory_inbox_access and definition.auto_memory_extraction_write_access


def test_inbox_writes_go_to_the_canonical_patches_only(tmp_path: Path) -> None:
    inbox_only = WriteScope(tmp_path / "memory", inbox_access=True, extraction=False)
    assert inbox_only.roots() == ((tmp_path / "memory" / ".inbox").resolve(),)
    inbox = tmp_path / "memory" / ".inbox"
    assert inbox_only.refusal(inbox / "global" / "extraction.patch") is None
    assert "Memory inbox write denied" in (inbox_only.refusal(inbox / "x.patch") or "")
    assert inbox_only.refusal(tmp_path / "elsewhere.txt") is None  # outside the inbox: normal

    extraction = WriteScope(tmp_path / "memory", inbox_access=False, extraction=True)
    assert extraction.refusal(tmp_path / "memory" / "skills" / "s" / "SKILL.md") is None
    for refused in (inbox / "private" / "extraction.patch", tmp_path / "GEMINI.md"):
        assert "extraction write denied" in (extraction.refusal(refused) or "")
    tools = extraction.guard({"write_file": _Tool("write_file"), "save_memory": _Tool("m")})
    assert list(tools) == ["write_file"] and isinstance(tools["write_file"], ScopedWriteTool)


class _Tool:
    def __init__(self, name: str) -> None:
        self.name, self.kind, self.description = name, "edit", ""
