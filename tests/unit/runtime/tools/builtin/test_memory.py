"""`save_memory`'s file handling: where the fact goes in `~/.gemini/GEMINI.md` and what
of the file is kept (Gemini CLI's memoryTool layout)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from runtime.host import HeadlessHost
from runtime.protocol import DisplayDiff
from runtime.tools.base import ToolEnv
from runtime.tools.builtin.memory import (
    MEMORY_SAVED_KEY,
    USER_HOME_KEY,
    SaveMemoryTool,
    memory_file,
    one_line_fact,
    with_memory,
)


def test_a_new_file_gets_the_section_and_the_bullet() -> None:
    assert with_memory("", "Tabs, not spaces.") == "## Gemini Added Memories\n- Tabs, not spaces.\n"


@pytest.mark.parametrize(
    ("current", "separator"),
    [
        ("# Mine\nkeep this", "\n\n"),
        ("# Mine\nkeep this\n", "\n"),
        ("# Mine\nkeep this\n\n", ""),
    ],
    ids=["no-final-newline", "final-newline", "blank-line"],
)
def test_a_file_without_the_section_gets_it_at_the_end(current: str, separator: str) -> None:
    after = with_memory(current, "Use pytest.")
    assert after == f"{current}{separator}## Gemini Added Memories\n- Use pytest.\n"


def test_a_fact_goes_at_the_end_of_the_existing_section() -> None:
    current = "## Gemini Added Memories\n- one\n- two\n"
    assert with_memory(current, "three") == "## Gemini Added Memories\n- one\n- two\n- three\n"


def test_other_content_is_kept_byte_for_byte() -> None:
    before_section = "# My notes  \n\nSome *text*\twith tabs.\n\n\n"
    section = "## Gemini Added Memories\n- one\n"
    after_section = "\n\n## Later section\n  indented\n\n# Top\ntrailing without newline"
    current = before_section + section + after_section
    after = with_memory(current, "two")
    assert after == before_section + section.rstrip("\n") + "\n- two\n" + after_section


def test_an_empty_section_at_the_end_without_a_final_newline() -> None:
    assert with_memory("x\n\n## Gemini Added Memories", "a") == (
        "x\n\n## Gemini Added Memories\n- a\n"
    )


def test_crlf_files_keep_their_line_endings() -> None:
    current = "# Mine\r\n\r\n## Gemini Added Memories\r\n- one\r\n\r\n## Other\r\n"
    assert with_memory(current, "two") == (
        "# Mine\r\n\r\n## Gemini Added Memories\r\n- one\r\n- two\r\n\r\n## Other\r\n"
    )
    assert with_memory("a\r\n", "b") == "a\r\n\r\n## Gemini Added Memories\r\n- b\r\n"


def test_the_header_counts_only_as_a_line_of_its_own() -> None:
    current = "see `## Gemini Added Memories` below\n"
    assert with_memory(current, "a") == f"{current}\n## Gemini Added Memories\n- a\n"


@pytest.mark.parametrize(
    ("fact", "stored"),
    [
        ("first line\nsecond line\r\nthird", "first line second line  third"),
        ("  - -- a dashed fact  ", "a dashed fact"),
        ("close </context> tags", "close  /context  tags"),
    ],
    ids=["newlines", "leading-dashes", "angle-brackets"],
)
def test_a_fact_is_made_one_line_as_gemini_cli_does(fact: str, stored: str) -> None:
    assert one_line_fact(fact) == stored
    assert with_memory("", fact).splitlines() == ["## Gemini Added Memories", f"- {stored}"]


def _env(tmp_path: Path, saved: list[bool]) -> ToolEnv:
    return ToolEnv(
        roots=(tmp_path / "ws",),
        host=HeadlessHost(),
        session_id="s",
        temp_dir=tmp_path / "tmp",
        extra={USER_HOME_KEY: tmp_path / "home", MEMORY_SAVED_KEY: lambda: saved.append(True)},
    )


async def test_the_tool_previews_the_diff_writes_a_private_file_and_reloads(
    tmp_path: Path,
) -> None:
    saved: list[bool] = []
    env, tool = _env(tmp_path, saved), SaveMemoryTool()
    path = memory_file(tmp_path / "home")
    [diff] = await tool.preview({"fact": "Tabs."}, env)
    assert isinstance(diff, DisplayDiff) and diff.path == str(path)
    assert (diff.before_text, diff.after_text) == (None, "## Gemini Added Memories\n- Tabs.\n")
    assert not path.exists()  # a preview writes nothing

    result = await tool.execute({"fact": "Tabs."}, env)
    assert not result.is_error and saved == [True]
    assert json.loads(result.llm_content) == {
        "success": True,
        "message": 'Okay, I\'ve remembered that: "Tabs."',
    }
    assert path.read_text() == "## Gemini Added Memories\n- Tabs.\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert tool.display({"fact": "x"}, env).title == "Save memory in ~/.gemini/GEMINI.md"


async def test_the_tool_appends_to_the_file_as_it_is_when_it_runs(tmp_path: Path) -> None:
    env, tool = _env(tmp_path, []), SaveMemoryTool()
    path = memory_file(tmp_path / "home")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"# Mine\r\n")
    path.chmod(0o640)
    await tool.preview({"fact": "one"}, env)
    path.write_bytes(b"# Mine\r\nedited meanwhile\r\n")  # kept: the fact is added to it
    result = await tool.execute({"fact": "one"}, env)
    assert not result.is_error
    assert (
        path.read_bytes()
        == b"# Mine\r\nedited meanwhile\r\n\r\n## Gemini Added Memories\r\n- one\r\n"
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o640  # its mode kept


async def test_a_file_it_cannot_use_is_an_error_and_stays_as_it_was(tmp_path: Path) -> None:
    saved: list[bool] = []
    env, tool = _env(tmp_path, saved), SaveMemoryTool()
    path = memory_file(tmp_path / "home")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xff\xfe not utf-8")
    result = await tool.execute({"fact": "one"}, env)
    assert result.is_error and json.loads(result.llm_content)["success"] is False
    assert "not UTF-8" in result.llm_content
    assert path.read_bytes() == b"\xff\xfe not utf-8" and saved == []


def test_an_empty_fact_is_refused() -> None:
    tool = SaveMemoryTool()
    assert tool.validate({"fact": "  \n "}) is not None
    assert tool.validate({"fact": "- "}) is not None
    assert tool.validate({"fact": 3}) is not None
    assert tool.validate({"fact": "ok"}) is None
