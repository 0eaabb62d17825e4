"""write_file and replace: previews, writes, errors, editor routing, refusals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.protocol import DisplayDiff
from runtime.tools.builtin.edit import ReplaceTool, WriteFileTool
from runtime.tools.builtin.results import CodedToolError
from tests.unit.runtime.tools.fakes import RecordingHost, make_env, snapshot


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("def f():\n    return 1\n\nx = f()\ny = f()\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret")
    return root


# ---------------------------------------------------------------- write_file


async def test_write_file_preview_of_a_new_file(ws: Path) -> None:
    preview = await WriteFileTool().preview(
        {"file_path": "docs/notes.md", "content": "# Hi\n"}, make_env(ws)
    )
    assert preview == (
        DisplayDiff(path=str(ws / "docs" / "notes.md"), before_text=None, after_text="# Hi\n"),
    )
    assert not (ws / "docs").exists()  # a preview writes nothing


async def test_write_file_creates_then_overwrites(ws: Path) -> None:
    env = make_env(ws)
    created = await WriteFileTool().execute({"file_path": "docs/notes.md", "content": "v1"}, env)
    assert created.llm_content == "Successfully created and wrote to new file: docs/notes.md"
    assert created.display == (
        DisplayDiff(path=str(ws / "docs" / "notes.md"), before_text=None, after_text="v1"),
    )
    preview = await WriteFileTool().preview({"file_path": "docs/notes.md", "content": "v2"}, env)
    assert preview[0] == DisplayDiff(
        path=str(ws / "docs" / "notes.md"), before_text="v1", after_text="v2"
    )
    result = await WriteFileTool().execute({"file_path": "docs/notes.md", "content": "v2"}, env)
    assert result.llm_content == "Successfully overwrote file: docs/notes.md"
    assert (ws / "docs" / "notes.md").read_text() == "v2"


async def test_write_file_errors(ws: Path) -> None:
    env = make_env(ws)
    is_dir = await WriteFileTool().execute({"file_path": ".", "content": "x"}, env)
    assert is_dir.is_error and is_dir.error_type == "is_directory"
    missing = await WriteFileTool().execute({"file_path": "a.txt"}, env)
    assert missing.is_error and "content" in missing.llm_content
    assert WriteFileTool().validate({"file_path": "a", "content": ""}) is None
    assert WriteFileTool().validate({"file_path": "a", "content": 5}) is not None


@pytest.mark.parametrize(
    "target", ["../outside/secret.txt", "../outside/new.txt", "/etc/adk-acp-test", "link/new.txt"]
)
async def test_write_file_refuses_paths_outside_and_touches_nothing(
    ws: Path, tmp_path: Path, target: str
) -> None:
    os.symlink(tmp_path / "outside", ws / "link")
    before_ws, before_out = snapshot(ws), snapshot(tmp_path / "outside")
    env = make_env(ws)
    assert await WriteFileTool().preview({"file_path": target, "content": "pwned"}, env) == ()
    result = await WriteFileTool().execute({"file_path": target, "content": "pwned"}, env)
    assert result.is_error and result.error_type == "path_outside_workspace"
    assert snapshot(ws) == before_ws and snapshot(tmp_path / "outside") == before_out
    assert not Path("/etc/adk-acp-test").exists()


async def test_write_file_goes_through_the_editor(ws: Path) -> None:
    host = RecordingHost(read=True, write=True, buffers={ws / "app.py": "buffer"})
    env = make_env(ws, host)
    preview = await WriteFileTool().preview({"file_path": "app.py", "content": "new"}, env)
    assert preview[0].before_text == "buffer"  # type: ignore[union-attr]
    result = await WriteFileTool().execute({"file_path": "fresh.py", "content": "new"}, env)
    assert result.llm_content.startswith(
        "Successfully created"
    )  # missing in the editor: a new file
    assert ("write_text_file", ws / "fresh.py", "new") in host.calls
    assert not (ws / "fresh.py").exists()


def test_write_display(ws: Path) -> None:
    display = WriteFileTool().display({"file_path": "notes.md", "content": ""}, make_env(ws))
    assert (display.title, display.kind, display.locations[0].path) == (
        "Write notes.md",
        "edit",
        str(ws / "notes.md"),
    )


# ---------------------------------------------------------------- replace


def edit(old: str, new: str, **extra: object) -> dict[str, object]:
    return {
        "file_path": "app.py",
        "instruction": "change it",
        "old_string": old,
        "new_string": new,
        **extra,
    }


async def test_replace_once_with_preview_and_result_diff(ws: Path) -> None:
    env = make_env(ws)
    args = edit("    return 1", "    return 2")
    preview = await ReplaceTool().preview(args, env)
    expected = DisplayDiff(
        path=str(ws / "app.py"),
        before_text="def f():\n    return 1\n\nx = f()\ny = f()\n",
        after_text="def f():\n    return 2\n\nx = f()\ny = f()\n",
    )
    assert preview == (expected,)
    assert (ws / "app.py").read_text() == expected.before_text  # preview wrote nothing
    result = await ReplaceTool().execute(args, env)
    assert result.llm_content == "Successfully modified file: app.py (1 replacement)."
    assert result.display == (expected,)
    assert (ws / "app.py").read_text() == expected.after_text


async def test_replace_several_needs_allow_multiple(ws: Path) -> None:
    env = make_env(ws)
    refused = await ReplaceTool().execute(edit("f()", "g()"), env)
    assert refused.is_error and refused.error_type == "edit_ambiguous"
    assert "occurs 3 times" in refused.llm_content and "allow_multiple" in refused.llm_content
    with pytest.raises(CodedToolError, match="occurs 3 times"):
        await ReplaceTool().preview(edit("f()", "g()"), env)  # nothing to approve
    done = await ReplaceTool().execute(edit("f()", "g()", allow_multiple=True), env)
    assert "3 replacements" in done.llm_content
    assert (ws / "app.py").read_text().count("g()") == 3


async def test_replace_errors(ws: Path) -> None:
    env = make_env(ws)
    original = (ws / "app.py").read_text()
    nothing = await ReplaceTool().execute(edit("return 99", "return 2"), env)
    assert (
        nothing.is_error
        and nothing.error_type == "edit_no_match"
        and "0 times" in nothing.llm_content
    )
    same = await ReplaceTool().execute(edit("return 1", "return 1"), env)
    assert same.is_error and same.error_type == "edit_no_change"
    exists = await ReplaceTool().execute(edit("", "new file"), env)
    assert exists.is_error and exists.error_type == "file_exists"
    missing = await ReplaceTool().execute({**edit("a", "b"), "file_path": "nope.py"}, env)
    assert missing.is_error and missing.error_type == "file_not_found"
    outside = await ReplaceTool().execute(
        {**edit("secret", "x"), "file_path": "../outside/secret.txt"}, env
    )
    assert outside.is_error and outside.error_type == "path_outside_workspace"
    assert (ws.parent / "outside" / "secret.txt").read_text() == "secret"
    assert (ws / "app.py").read_text() == original
    assert ReplaceTool().validate({"file_path": "a", "old_string": "x"}) is not None


async def test_replace_with_empty_old_string_creates_a_file(ws: Path) -> None:
    env = make_env(ws)
    args = {
        "file_path": "pkg/new.py",
        "instruction": "create",
        "old_string": "",
        "new_string": "print(1)\n",
    }
    preview = await ReplaceTool().preview(args, env)
    assert preview == (
        DisplayDiff(path=str(ws / "pkg" / "new.py"), before_text=None, after_text="print(1)\n"),
    )
    result = await ReplaceTool().execute(args, env)
    assert result.llm_content == "Created new file: pkg/new.py"
    assert (ws / "pkg" / "new.py").read_text() == "print(1)\n"


async def test_replace_matches_lf_text_in_a_crlf_file(ws: Path) -> None:
    (ws / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    args = {
        "file_path": "win.txt",
        "instruction": "x",
        "old_string": "one\ntwo",
        "new_string": "1\n2",
    }
    result = await ReplaceTool().execute(args, make_env(ws))
    assert not result.is_error
    assert (ws / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_replace_reads_and_writes_through_the_editor(ws: Path) -> None:
    host = RecordingHost(read=True, write=True, buffers={ws / "app.py": "unsaved = 1\n"})
    result = await ReplaceTool().execute(edit("unsaved = 1", "unsaved = 2"), make_env(ws, host))
    assert not result.is_error
    assert host.buffers[ws / "app.py"] == "unsaved = 2\n"
    assert "return 1" in (ws / "app.py").read_text()  # the disk copy is the editor's business
    created = await ReplaceTool().execute(
        {"file_path": "n.py", "instruction": "", "old_string": "", "new_string": "x"},
        make_env(ws, host),
    )
    assert created.llm_content == "Created new file: n.py"


def test_replace_display(ws: Path) -> None:
    display = ReplaceTool().display(edit("a", "b"), make_env(ws))
    assert (display.title, display.kind) == ("Edit app.py", "edit")
