"""FileAccess: local reads and atomic writes, and routing through the editor's fs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from runtime.host import HeadlessHost
from runtime.tools.io.files import BinaryFileError, FileAccess, FileTooLargeError, atomic_write_text
from tests.unit.runtime.tools.fakes import RecordingHost


async def test_local_read_and_write_round_trip(tmp_path: Path) -> None:
    files = FileAccess(HeadlessHost())
    target = tmp_path / "deep" / "er" / "notes.md"
    await files.write_text(target, "héllo\r\nworld\n")
    assert target.read_bytes() == "héllo\r\nworld\n".encode()
    assert await files.read_text(target) == "héllo\r\nworld\n"
    assert await files.exists(target)
    assert not await files.exists(tmp_path / "nope")


async def test_read_errors(tmp_path: Path) -> None:
    files = FileAccess(None, max_file_bytes=1000)
    with pytest.raises(FileNotFoundError):
        await files.read_text(tmp_path / "missing.txt")
    with pytest.raises(IsADirectoryError):
        await files.read_text(tmp_path)
    (tmp_path / "img.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(BinaryFileError, match="binary"):
        await files.read_text(tmp_path / "img.bin")
    (tmp_path / "big.txt").write_text("x" * 1001)
    with pytest.raises(FileTooLargeError, match="too large"):
        await files.read_text(tmp_path / "big.txt")
    with pytest.raises(ValueError, match="absolute"):
        await files.read_text(Path("relative.txt"))


async def test_utf16_with_a_bom_is_text(tmp_path: Path) -> None:
    (tmp_path / "u16.txt").write_bytes("hello".encode("utf-16"))
    assert await FileAccess(None).read_text(tmp_path / "u16.txt") == "hello"


def test_atomic_write_keeps_the_mode_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "script.sh"
    target.write_text("old")
    os.chmod(target, 0o751)
    inode_before = target.stat().st_ino
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert target.stat().st_ino != inode_before  # replaced, not rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["script.sh"]


def test_atomic_write_writes_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    os.symlink(real, tmp_path / "link.txt")
    atomic_write_text(tmp_path / "link.txt", "new")
    assert (tmp_path / "link.txt").is_symlink()
    assert real.read_text() == "new"


def test_a_failed_atomic_write_keeps_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(target, "bad \udcff surrogate")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_a_failed_replace_removes_the_temp_file(tmp_path: Path) -> None:
    (tmp_path / "adir" / "child").mkdir(parents=True)
    with pytest.raises(OSError):
        atomic_write_text(tmp_path / "adir", "x")  # os.replace cannot put a file over a directory
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir"]


async def test_reads_and_writes_go_through_the_editor_when_offered(tmp_path: Path) -> None:
    path = tmp_path / "open.py"
    path.write_text("on disk")
    host = RecordingHost(read=True, write=True, buffers={path: "unsaved buffer"})
    files = FileAccess(host)
    assert files.reads_through_editor and files.writes_through_editor
    assert await files.read_text(path) == "unsaved buffer"
    new = tmp_path / "sub" / "new.py"
    await files.write_text(new, "content")
    assert host.calls == [("read_text_file", path), ("write_text_file", new, "content")]
    assert path.read_text() == "on disk"  # the editor owns the write; nothing local
    assert not new.exists() and new.parent.is_dir()


async def test_a_missing_file_through_the_editor_is_file_not_found(tmp_path: Path) -> None:
    host = RecordingHost(read=True)
    with pytest.raises(FileNotFoundError):
        await FileAccess(host).read_text(tmp_path / "absent.txt")
    assert host.calls == []  # decided from the disk: real clients answer -32603, not -32002


async def test_local_checks_run_before_asking_the_editor(tmp_path: Path) -> None:
    host = RecordingHost(read=True)
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    with pytest.raises(BinaryFileError):
        await FileAccess(host).read_text(tmp_path / "blob.bin")
    with pytest.raises(IsADirectoryError):
        await FileAccess(host).read_text(tmp_path)
    assert host.calls == []


async def test_only_the_offered_direction_goes_to_the_editor(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    host = RecordingHost(read=True, write=False, buffers={path: "buffer"})
    files = FileAccess(host)
    await files.write_text(path, "disk")
    assert path.read_text() == "disk"
    assert await files.read_text(path) == "buffer"
    assert [c[0] for c in host.calls] == ["read_text_file"]


async def test_list_dir_reports_entries(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f.txt").write_text("abc")
    entries = {e.name: e for e in await FileAccess(None).list_dir(tmp_path)}
    assert entries["d"].is_dir and not entries["f.txt"].is_dir and entries["f.txt"].size == 3
