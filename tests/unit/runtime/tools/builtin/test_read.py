"""read_file and list_directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.tools.builtin.read import MAX_LINE_CHARS, MAX_LINES, ListDirectoryTool, ReadFileTool
from tests.unit.runtime.tools.fakes import RecordingHost, make_env


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    (tmp_path / "outside.txt").write_text("secret")
    return root


async def test_read_whole_file_is_plain_content(ws: Path) -> None:
    result = await ReadFileTool().execute({"file_path": "src/app.py"}, make_env(ws))
    assert not result.is_error
    assert result.llm_content == "\n".join(f"line {n}" for n in range(1, 11))
    assert result.raw_output and result.raw_output["total_lines"] == 10


async def test_read_a_range_has_a_header(ws: Path) -> None:
    result = await ReadFileTool().execute(
        {"file_path": "src/app.py", "start_line": 3, "end_line": 4.0}, make_env(ws)
    )
    header, body = result.llm_content.split("\n\n", 1)
    assert "Showing lines 3-4 of 10" in header and "start_line=5" in header
    assert body == "line 3\nline 4"


async def test_read_to_the_end_from_a_start(ws: Path) -> None:
    result = await ReadFileTool().execute(
        {"file_path": "src/app.py", "start_line": 9}, make_env(ws)
    )
    assert result.llm_content.endswith("line 9\nline 10")
    assert (
        "Showing lines 9-10 of 10" in result.llm_content
        and "start_line=11" not in result.llm_content
    )


async def test_long_files_and_lines_are_cut_with_a_note(ws: Path) -> None:
    (ws / "big.txt").write_text("\n".join(["x" * (MAX_LINE_CHARS + 5)] + ["y"] * (MAX_LINES + 50)))
    result = await ReadFileTool().execute({"file_path": "big.txt"}, make_env(ws))
    assert f"Showing lines 1-{MAX_LINES} of {MAX_LINES + 51}" in result.llm_content
    assert "[line truncated]" in result.llm_content and "were cut" in result.llm_content


@pytest.mark.parametrize(
    ("args", "needle", "error_type"),
    [
        ({"file_path": "nope.txt"}, "not found", "file_not_found"),
        ({"file_path": "src"}, "directory", "is_directory"),
        ({"file_path": "../outside.txt"}, "outside the workspace", "path_outside_workspace"),
        ({"file_path": "src/app.py", "start_line": 50}, "past the end", "invalid_arguments"),
        (
            {"file_path": "src/app.py", "start_line": 5, "end_line": 2},
            "must not be before",
            "invalid_arguments",
        ),
        ({"file_path": "src/app.py", "start_line": 0}, "at least 1", "invalid_arguments"),
        ({"file_path": ""}, "must not be empty", "invalid_arguments"),
        ({}, "required", "invalid_arguments"),
    ],
)
async def test_read_errors(ws: Path, args: dict[str, object], needle: str, error_type: str) -> None:
    result = await ReadFileTool().execute(args, make_env(ws))
    assert (
        result.is_error and needle in result.llm_content.lower() and result.error_type == error_type
    )


async def test_validate_reports_bad_arguments(ws: Path) -> None:
    tool = ReadFileTool()
    assert tool.validate({"file_path": "a"}) is None
    assert tool.validate({"file_path": 3}) == "The 'file_path' parameter must be a string."
    assert tool.validate({"file_path": "a", "start_line": "x"}) is not None


async def test_binary_huge_and_media_files(ws: Path) -> None:
    (ws / "data.bin").write_bytes(b"\x00\x01\x02binary")
    (ws / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)
    env = make_env(ws)
    binary = await ReadFileTool().execute({"file_path": "data.bin"}, env)
    assert binary.is_error and "binary" in binary.llm_content and binary.error_type == "binary_file"
    media = await ReadFileTool().execute({"file_path": "pic.png"}, env)
    assert not media.is_error and "PNG file (28 bytes)" in media.llm_content
    with open(ws / "huge.txt", "wb") as handle:
        handle.truncate(21 * 1024 * 1024)
    huge = await ReadFileTool().execute({"file_path": "huge.txt"}, env)
    assert huge.is_error and "too large" in huge.llm_content and huge.error_type == "file_too_large"


async def test_symlink_out_of_the_workspace_is_refused(ws: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path / "outside.txt", ws / "sneaky.txt")
    result = await ReadFileTool().execute({"file_path": "sneaky.txt"}, make_env(ws))
    assert result.is_error and result.error_type == "path_outside_workspace"
    assert "secret" not in result.llm_content


async def test_read_goes_through_the_editor_buffer(ws: Path) -> None:
    host = RecordingHost(read=True, buffers={ws / "src" / "app.py": "unsaved\ntext\n"})
    result = await ReadFileTool().execute({"file_path": "src/app.py"}, make_env(ws, host))
    assert result.llm_content == "unsaved\ntext"
    missing = await ReadFileTool().execute({"file_path": "gone.py"}, make_env(ws, host))
    assert missing.is_error and missing.error_type == "file_not_found"


def test_read_display(ws: Path) -> None:
    env = make_env(ws)
    display = ReadFileTool().display(
        {"file_path": "src/app.py", "start_line": 3, "end_line": 9}, env
    )
    assert display.title == "Read src/app.py (lines 3-9)"
    assert display.kind == "read"
    assert (
        display.locations[0].path == str(ws / "src" / "app.py") and display.locations[0].line == 3
    )
    assert ReadFileTool().display({"file_path": str(ws / "a.md")}, env).title == "Read a.md"
    assert ReadFileTool().display({}, env).title == "Read file"


# ---------------------------------------------------------------- list_directory


async def test_list_directory_dirs_first_and_gitignore(ws: Path) -> None:
    (ws / ".git").mkdir()
    (ws / ".gitignore").write_text("*.log\ndist/\n")
    (ws / "dist").mkdir()
    (ws / "b.txt").write_text("")
    (ws / "A.md").write_text("")
    (ws / "run.log").write_text("")
    (ws / "zeta").mkdir()
    result = await ListDirectoryTool().execute({"dir_path": "."}, make_env(ws))
    assert result.llm_content == (
        "Directory listing for .:\n[DIR] src\n[DIR] zeta\n.gitignore\nA.md\nb.txt\n"
        "\n(3 entries ignored)"
    )
    unfiltered = await ListDirectoryTool().execute(
        {
            "dir_path": ".",
            "file_filtering_options": {"respect_git_ignore": False},
            "ignore": ["*.md"],
        },
        make_env(ws),
    )
    assert "run.log" in unfiltered.llm_content and "[DIR] dist" in unfiltered.llm_content
    assert "A.md" not in unfiltered.llm_content


async def test_list_directory_errors_and_empty(ws: Path) -> None:
    env = make_env(ws)
    (ws / "empty").mkdir()
    assert (
        await ListDirectoryTool().execute({"dir_path": "empty"}, env)
    ).llm_content == "Directory empty is empty."
    missing = await ListDirectoryTool().execute({"dir_path": "nope"}, env)
    assert missing.is_error and missing.error_type == "file_not_found"
    not_dir = await ListDirectoryTool().execute({"dir_path": "src/app.py"}, env)
    assert not_dir.is_error and "not a directory" in not_dir.llm_content
    outside = await ListDirectoryTool().execute({"dir_path": ".."}, env)
    assert outside.is_error and outside.error_type == "path_outside_workspace"
    assert ListDirectoryTool().validate({"dir_path": "x", "ignore": [1]}) is not None


def test_list_display(ws: Path) -> None:
    display = ListDirectoryTool().display({"dir_path": "src"}, make_env(ws))
    assert (display.title, display.kind) == ("List src", "search")
