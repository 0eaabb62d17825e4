"""A subagent's scoped workspace (issue 19.6): the definition's folders join the parent's
roots for its run; a filesystem root is refused; Auto Memory scopes are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.agents.definitions import parse_definition
from runtime.agents.scope import ScopeError, scoped_roots


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


def test_definitions_take_gemini_cli_spellings_and_refuse_auto_memory_scopes() -> None:
    text = "---\nname: a\ndescription: d\nworkspaceDirectories: [x, y]\n---\nbody"
    assert parse_definition(text, "f").workspace_directories == ("x", "y")
    for key in ("memoryInboxAccess", "autoMemoryExtractionWriteAccess"):
        with pytest.raises(ValueError, match="no Auto Memory"):
            parse_definition(f"---\nname: a\ndescription: d\n{key}: true\n---\n", "f")
