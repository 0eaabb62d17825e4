"""Issue 18: edits keep every byte they do not change, and see what changed meanwhile.

A table of files (encodings, line endings, final newline, modes) edited through
`replace` / `write_file` on the local disk, the refusals (read-only, no exact
decoding, text the encoding cannot hold), the editor's fs route, and the
re-read at execution (the file changed while the user was deciding).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from runtime.protocol import DisplayDiff, DisplayText
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.builtin.edit import ReplaceTool, WriteFileTool
from runtime.tools.io.files import FileAccess, ReadOnlyFileError
from runtime.tools.io.text_format import (
    UnencodableTextError,
    UnsupportedEncodingError,
    decode_exact,
    dominant_ending,
    encode,
)
from tests.unit.runtime.tools.fakes import RecordingHost, make_env

BOM8 = b"\xef\xbb\xbf"


def utf16(text: str, order: str) -> bytes:
    bom = b"\xff\xfe" if order == "le" else b"\xfe\xff"
    return bom + text.encode(f"utf-16-{order}")


def edit(old: str, new: str, path: str = "f.txt", **extra: Any) -> dict[str, Any]:
    return {"file_path": path, "instruction": "x", "old_string": old, "new_string": new, **extra}


async def run(tool: GcliTool, args: dict[str, Any], env: ToolEnv) -> ToolResult:
    """Preview, then execute with the preview as shown (what the scheduler does)."""
    preview = await tool.preview(args, env)
    return await tool.execute(args, dataclasses.replace(env, preview=preview))


# (id, bytes before, old_string, new_string, bytes after)
REPLACE_TABLE = [
    ("latin-1", b"\x81 ctl\ncaf\xe9 = 1\n", "= 1", "= 2 \u00e9", b"\x81 ctl\ncaf\xe9 = 2 \xe9\n"),
    ("cp1252", b"\x93hi\x94 \x80 caf\xe9\n", "hi", "h\u00e9 \u2014 ok",
     b"\x93h\xe9 \x97 ok\x94 \x80 caf\xe9\n"),
    ("cp1252, a pair that looks UTF-8", b"CAF\xc9\x94 caf\xe9 na\xefve 1\n", "1", "2",
     b"CAF\xc9\x94 caf\xe9 na\xefve 2\n"),
    ("utf-8", "naïve → 1\n".encode(), "1", "2 ✓", "naïve → 2 ✓\n".encode()),
    ("utf-8 BOM", BOM8 + "é\nx = 1\n".encode(), "x = 1", "x = 2", BOM8 + "é\nx = 2\n".encode()),
    ("utf-16 LE", utf16("a\r\nb = 1\r\n", "le"), "b = 1", "b = 2\nc = 3",
     utf16("a\r\nb = 2\r\nc = 3\r\n", "le")),
    ("utf-16 BE", utf16("ä\nb = 1\n", "be"), "b = 1", "b = ü", utf16("ä\nb = ü\n", "be")),
    ("CRLF insert", b"one\r\ntwo\r\n", "one", "one\nnew", b"one\r\nnew\r\ntwo\r\n"),
    ("CRLF LF match", b"one\r\ntwo\r\n", "one\ntwo", "1\n2", b"1\r\n2\r\n"),
    ("LF keeps LF", b"one\ntwo\n", "one", "one\r\nnew", b"one\nnew\ntwo\n"),
    ("mixed, LF region", b"a\r\nb\r\nc\nd\r\n", "c\nd", "C\nD\nE", b"a\r\nb\r\nC\nD\nE\r\n"),
    ("mixed, dominant", b"a\r\nb\r\nc\nd\r\n", "a", "a\nz", b"a\r\nz\r\nb\r\nc\nd\r\n"),
    ("no final newline", b"x = 1", "x = 1", "x = 2\n", b"x = 2"),
    ("final newline", b"x = 1\n", "x = 1\n", "x = 2", b"x = 2\n"),
    ("CR only", b"a\rb\r", "a", "a\nc", b"a\rc\rb\r"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("before", "old", "new", "after"),
    [pytest.param(*row[1:], id=row[0]) for row in REPLACE_TABLE],
)
async def test_replace_keeps_every_byte_it_does_not_change(
    tmp_path: Path, before: bytes, old: str, new: str, after: bytes
) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(before)
    text, fmt = decode_exact(before)
    assert encode(text, fmt) == before  # the decoding is exact
    result = await run(ReplaceTool(), edit(old, new), make_env(tmp_path))
    assert not result.is_error, result.llm_content
    assert target.read_bytes() == after
    (diff,) = result.display
    assert isinstance(diff, DisplayDiff)
    assert (
        diff.before_text == text and diff.after_text == decode_exact(after)[0]
    )  # the diff is true


@pytest.mark.parametrize(
    ("before", "content", "after"),
    [
        pytest.param(b"a\r\nb\r\n", "x\ny\n", b"x\r\ny\r\n", id="CRLF"),
        pytest.param(b"a\nb", "x\ny\n", b"x\ny", id="no final newline"),
        pytest.param(b"a\n", "x", b"x\n", id="final newline"),
        pytest.param(utf16("a\r\n", "le"), "ü\n", utf16("ü\r\n", "le"), id="utf-16 LE"),
        pytest.param(BOM8 + b"a\n", "b\n", BOM8 + b"b\n", id="utf-8 BOM"),
        pytest.param(b"caf\xe9\n", "th\xe9\n", b"th\xe9\n", id="cp1252"),
        pytest.param(b"", "new\n", b"new\n", id="empty file"),
    ],
)
async def test_write_file_keeps_the_format_of_the_file_it_replaces(
    tmp_path: Path, before: bytes, content: str, after: bytes
) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(before)
    result = await run(
        WriteFileTool(), {"file_path": "f.txt", "content": content}, make_env(tmp_path)
    )
    assert not result.is_error, result.llm_content
    assert target.read_bytes() == after


async def test_a_new_file_is_utf8_as_given(tmp_path: Path) -> None:
    result = await run(
        WriteFileTool(), {"file_path": "n.txt", "content": "é\r\nx"}, make_env(tmp_path)
    )
    assert not result.is_error
    assert (tmp_path / "n.txt").read_bytes() == "é\r\nx".encode()


@pytest.mark.parametrize("mode", [0o644, 0o755, 0o600, 0o4755])
async def test_the_mode_is_kept(tmp_path: Path, mode: int) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"x = 1\n")
    os.chmod(target, mode)
    result = await run(ReplaceTool(), edit("1", "2"), make_env(tmp_path))
    assert not result.is_error
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert os.listdir(tmp_path) == ["f.txt"]  # no temp file left


@pytest.mark.parametrize("tool", ["replace", "write_file"])
async def test_a_read_only_file_is_refused_before_asking(tmp_path: Path, tool: str) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"x = 1\n")
    os.chmod(target, 0o444)
    env = make_env(tmp_path)
    args = edit("1", "2") if tool == "replace" else {"file_path": "f.txt", "content": "y\n"}
    tool_impl: GcliTool = ReplaceTool() if tool == "replace" else WriteFileTool()
    with pytest.raises(ReadOnlyFileError, match=r"read-only \(mode 0444\)"):
        await tool_impl.preview(args, env)
    result = await tool_impl.execute(args, env)
    assert result.is_error and result.error_type == "read_only"
    assert result.display == (DisplayText(text=result.llm_content),)  # the user sees why
    assert target.read_bytes() == b"x = 1\n" and stat.S_IMODE(target.stat().st_mode) == 0o444


async def test_a_file_in_a_read_only_directory_is_rewritten_in_place(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    target = folder / "f.txt"
    target.write_bytes(b"x = 1\r\n")
    os.chmod(target, 0o640)
    inode = target.stat().st_ino
    os.chmod(folder, 0o555)
    try:
        result = await run(ReplaceTool(), edit("1", "2", "locked/f.txt"), make_env(tmp_path))
        assert not result.is_error, result.llm_content
        assert target.read_bytes() == b"x = 2\r\n"
        assert target.stat().st_ino == inode  # no rename in a directory that is read-only
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
        assert os.listdir(folder) == ["f.txt"]
    finally:
        os.chmod(folder, 0o755)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(
            BOM8 + b"ok \xff\n", "UTF-8 with BOM byte-order mark", id="utf-8 BOM, bad byte"
        ),
        pytest.param(b"\xff\xfea\x00b", "UTF-16 LE byte-order mark", id="utf-16, odd length"),
        pytest.param("é ü ö → ".encode() + b"\xe9\n", "UTF-8 with bytes", id="utf-8, a stray byte"),
    ],
)
async def test_a_file_without_an_exact_decoding_is_refused(
    tmp_path: Path, data: bytes, reason: str
) -> None:
    with pytest.raises(UnsupportedEncodingError, match=reason):
        decode_exact(data)
    target = tmp_path / "f.txt"
    target.write_bytes(data)
    env = make_env(tmp_path)
    with pytest.raises(UnsupportedEncodingError, match="left as it is"):
        await ReplaceTool().preview(edit("a", "b"), env)
    result = await ReplaceTool().execute(edit("a", "b"), env)
    assert result.is_error and result.error_type == "unsupported_encoding"
    written = await WriteFileTool().execute({"file_path": "f.txt", "content": "x"}, env)
    assert written.is_error and written.error_type == "unsupported_encoding"
    assert target.read_bytes() == data
    assert await FileAccess(None).read_text(target)  # still readable, lossy


async def test_text_the_encoding_cannot_hold_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"caf\xe9 = 1\n")
    env = make_env(tmp_path)
    with pytest.raises(UnencodableTextError, match=r"cp1252.*'→' \(U\+2192, line 1"):
        await ReplaceTool().preview(edit("1", "→"), env)
    result = await ReplaceTool().execute(edit("1", "→"), env)
    assert result.is_error and result.error_type == "unencodable_text"
    assert target.read_bytes() == b"caf\xe9 = 1\n"


def test_dominant_ending() -> None:
    assert dominant_ending("a\r\nb\r\nc\n") == "\r\n"
    assert dominant_ending("a\nb\r\n") == "\n"  # a tie goes to LF
    assert dominant_ending("a\rb\r") == "\r"
    assert dominant_ending("abc") is None


# ---------------------------------------------------------------- through the editor


async def test_through_the_editor_line_endings_and_final_newline_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("on disk\n")
    host = RecordingHost(read=True, write=True, buffers={path: "one\r\ntwo"})
    result = await run(ReplaceTool(), edit("one", "one\nnew"), make_env(tmp_path, host))
    assert not result.is_error
    assert host.buffers[path] == "one\r\nnew\r\ntwo"
    assert path.read_text() == "on disk\n"  # the editor owns the bytes


async def test_through_the_editor_a_read_only_file_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("x = 1\n")
    os.chmod(path, 0o444)
    host = RecordingHost(read=True, write=True, buffers={path: "x = 1\n"})
    result = await ReplaceTool().execute(edit("1", "2"), make_env(tmp_path, host))
    assert result.is_error and result.error_type == "read_only"
    assert [c[0] for c in host.calls] == ["read_text_file"]


# ---------------------------------------------------------------- changed while deciding


async def previewed(tool: GcliTool, args: dict[str, Any], env: ToolEnv) -> ToolEnv:
    return dataclasses.replace(env, preview=await tool.preview(args, env))


async def test_replace_applies_to_the_current_text_when_old_still_matches(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("a = 1\nb = 2\n")
    args = edit("b = 2", "b = 3")
    env = await previewed(ReplaceTool(), args, make_env(tmp_path))
    target.write_text("a = 100  # the user's change\nb = 2\n")
    result = await ReplaceTool().execute(args, env)
    assert not result.is_error, result.llm_content
    assert target.read_text() == "a = 100  # the user's change\nb = 3\n"
    assert result.display == (
        DisplayDiff(
            path=str(target),
            before_text="a = 100  # the user's change\nb = 2\n",
            after_text="a = 100  # the user's change\nb = 3\n",
        ),
    )


@pytest.mark.parametrize(
    ("changed", "why"),
    [
        pytest.param("a = 1\nb = 7\n", "0 times", id="old text gone"),
        pytest.param("b = 2\nb = 2\n", "old_string no longer matches", id="now twice"),
    ],
)
async def test_replace_fails_when_old_no_longer_matches_as_it_did(
    tmp_path: Path, changed: str, why: str
) -> None:
    target = tmp_path / "f.txt"
    target.write_text("a = 1\nb = 2\n")
    args = edit("b = 2", "b = 3", allow_multiple=True)
    env = await previewed(ReplaceTool(), args, make_env(tmp_path))
    target.write_text(changed)
    result = await ReplaceTool().execute(args, env)
    assert result.is_error and result.error_type == "file_changed"
    assert "the file changed since the diff was shown; read it again" in result.llm_content
    assert why in result.llm_content
    assert target.read_text() == changed


@pytest.mark.parametrize("existed", [True, False])
async def test_write_file_fails_over_a_file_changed_since_its_diff(
    tmp_path: Path, existed: bool
) -> None:
    target = tmp_path / "f.txt"
    if existed:
        target.write_text("v1\n")
    args = {"file_path": "f.txt", "content": "model\n"}
    env = await previewed(WriteFileTool(), args, make_env(tmp_path))
    target.write_text("user\n")
    result = await WriteFileTool().execute(args, env)
    assert result.is_error and result.error_type == "file_changed"
    assert "the file changed since the diff was shown; read it again" in result.llm_content
    assert target.read_text() == "user\n"


class SlowEditor(RecordingHost):
    """An editor whose fs answers after other tasks ran (so unserialized edits interleave)."""

    async def read_text_file(
        self, path: Path, line: int | None = None, limit: int | None = None
    ) -> str:
        for _ in range(5):
            await asyncio.sleep(0)
        return await super().read_text_file(path, line, limit)

    async def write_text_file(self, path: Path, content: str) -> None:
        for _ in range(5):
            await asyncio.sleep(0)
        await super().write_text_file(path, content)


async def test_two_sessions_editing_one_file_both_land_in_order(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("a = 1\nb = 2\n")
    host = SlowEditor(read=True, write=True, buffers={path: "a = 1\nb = 2\n"})
    first, second = edit("a = 1", "a = 10"), edit("b = 2", "b = 20")
    env_a = await previewed(ReplaceTool(), first, make_env(tmp_path, host))
    env_b = await previewed(ReplaceTool(), second, make_env(tmp_path, host))
    results = await asyncio.gather(
        ReplaceTool().execute(first, env_a), ReplaceTool().execute(second, env_b)
    )
    assert [r.is_error for r in results] == [False, False]
    assert host.buffers[path] == "a = 10\nb = 20\n"
    writes = [c[2] for c in host.calls if c[0] == "write_text_file"]
    assert writes == ["a = 10\nb = 2\n", "a = 10\nb = 20\n"]
