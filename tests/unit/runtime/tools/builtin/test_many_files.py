"""read_many_files."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.tools.builtin import many_files as many_files_tool
from runtime.tools.builtin.many_files import END_MARKER, ReadManyFilesTool
from tests.unit.runtime.tools.fakes import RecordingHost, make_env


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".gitignore").write_text("generated/\n")
    files = {
        "src/a.py": "A\n",
        "src/b.py": "B\n",
        "src/sub/c.py": "C\n",
        "src/sub/c_test.py": "T\n",
        "src/notes.md": "N\n",
        "generated/g.py": "G\n",
        "node_modules/m/index.py": "M\n",
        "README.md": "R\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "src" / "blob.bin").write_bytes(b"\x00\x01")
    (root / "logo.png").write_bytes(b"\x89PNG")
    (tmp_path / "outside.txt").write_text("secret")
    return root


async def test_globs_are_concatenated_with_separators(ws: Path) -> None:
    result = await ReadManyFilesTool().execute({"include": ["**/*.py"]}, make_env(ws))
    assert result.llm_content == (
        "--- src/a.py ---\n\nA\n\n"
        "--- src/b.py ---\n\nB\n\n"
        "--- src/sub/c.py ---\n\nC\n\n"
        "--- src/sub/c_test.py ---\n\nT\n\n" + END_MARKER
    )  # generated/ is .gitignore'd, node_modules/ skipped by default


async def test_paths_directories_and_excludes(ws: Path) -> None:
    env = make_env(ws)
    result = await ReadManyFilesTool().execute(
        {"include": ["README.md", "src"], "exclude": ["**/*_test.py", "*.md"]}, env
    )
    assert result.raw_output is not None
    assert result.raw_output["read"] == ["README.md", "src/a.py", "src/b.py", "src/sub/c.py"]
    assert "- src/blob.bin (binary file)" in result.llm_content
    flat = await ReadManyFilesTool().execute({"include": ["src"], "recursive": False}, env)
    assert flat.raw_output is not None
    assert flat.raw_output["read"] == ["src/a.py", "src/b.py", "src/notes.md"]


async def test_missing_media_and_nothing_found(ws: Path) -> None:
    env = make_env(ws)
    result = await ReadManyFilesTool().execute(
        {"include": ["nope.txt", "logo.png", "README.md"]}, env
    )
    assert "--- README.md ---" in result.llm_content
    assert (
        "- nope.txt (not found)" in result.llm_content
        and "- logo.png (media file)" in result.llm_content
    )
    empty = await ReadManyFilesTool().execute({"include": ["**/*.rs"]}, env)
    assert not empty.is_error and empty.llm_content.startswith("No files were read")


async def test_paths_outside_are_refused(ws: Path) -> None:
    env = make_env(ws)
    result = await ReadManyFilesTool().execute({"include": ["../outside.txt"]}, env)
    assert result.is_error and result.error_type == "path_outside_workspace"
    absolute = await ReadManyFilesTool().execute({"include": [str(ws.parent / "*.txt")]}, env)
    assert (
        "secret" not in absolute.llm_content
        and "outside the workspace root" in absolute.llm_content
    )


async def test_total_size_is_capped(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(many_files_tool, "MAX_TOTAL_CHARS", 3)
    result = await ReadManyFilesTool().execute({"include": ["src/*.py"]}, make_env(ws))
    assert result.raw_output is not None
    assert result.raw_output["read"] == ["src/a.py", "src/b.py"]
    assert "--- src/a.py ---" in result.llm_content


async def test_reads_use_editor_buffers(ws: Path) -> None:
    host = RecordingHost(read=True, buffers={ws / "src" / "a.py": "unsaved A\n"})
    result = await ReadManyFilesTool().execute(
        {"include": ["src/a.py", "src/b.py"]}, make_env(ws, host)
    )
    assert "unsaved A" in result.llm_content
    assert "- src/b.py (Resource not found" in result.llm_content


def test_validation_and_display(ws: Path) -> None:
    tool = ReadManyFilesTool()
    assert tool.validate({"include": []}) is not None
    assert tool.validate({}) is not None
    assert tool.validate({"include": ["a", 3]}) is not None
    assert tool.validate({"include": ["src/**"]}) is None
    assert (
        tool.display({"include": ["src/**", "README.md"]}, make_env(ws)).title
        == "Read src/**, README.md"
    )
