"""grep_search (ripgrep and the Python fallback give the same answers) and glob."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from runtime.tools.builtin.glob import GlobTool
from runtime.tools.builtin.grep import GrepSearchTool
from runtime.tools.io.grep_engine import find_rg
from tests.unit.runtime.tools.fakes import make_env

FILES: dict[str, bytes] = {
    ".gitignore": b"*.log\nignored_dir/\n",
    "src/app.py": b"def foo():\n    return FOO\n\nfoo_bar = 1  # foo excluded\nnothing here\n",
    "src/util/helpers.py": b"import foo\n\n\n\n\nfoo.run()\n",
    "docs/readme.md": b"Foo docs\n",
    "ignored_dir/x.py": b"foo\n",
    "debug.log": b"foo\n",
    ".hidden/conf.txt": b"foo = yes\n",
    "bin.dat": b"foo\x00\x01\x02",
    "a-b.txt": b"foo dash\n",
    "a/q.txt": b"foo in a\n",
    "crlf.txt": b"foo\r\nbar\r\n",
    "long.txt": b"foo " + b"x" * 2000 + b"\n",
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("foo\n")
    for rel, data in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (tmp_path / "outside.txt").write_text("foo\n")
    os.symlink(tmp_path / "outside.txt", root / "link.txt")
    return root


def engines() -> list[GrepSearchTool]:
    rg = find_rg()
    assert rg is not None, "the ripgrep wheel is a dependency; rg must be found"
    return [GrepSearchTool(ripgrep=rg), GrepSearchTool(ripgrep=None)]


def test_rg_is_found_next_to_python_first() -> None:
    rg = find_rg()
    assert rg is not None
    assert GrepSearchTool().engine == "ripgrep"
    assert GrepSearchTool(ripgrep=None).engine == "python"


QUERIES: list[dict[str, Any]] = [
    {"pattern": "foo"},
    {"pattern": "foo", "case_sensitive": True},
    {"pattern": "foo", "include_pattern": "*.py"},
    {"pattern": "foo", "include_pattern": "src/**"},
    {"pattern": "foo", "include_pattern": "*.{md,txt}"},
    {"pattern": "foo", "exclude_pattern": "excluded|import"},
    {"pattern": "foo", "names_only": True},
    {"pattern": "f.o", "fixed_strings": True},
    {"pattern": r"def\s+foo\(\)", "case_sensitive": True},
    {"pattern": "foo", "context": 1, "dir_path": "src"},
    {"pattern": "foo", "total_max_matches": 3},
    {"pattern": "foo", "names_only": True, "total_max_matches": 2},
    {"pattern": "foo", "dir_path": "src/app.py", "include_pattern": "*.md"},
    {"pattern": "bar$"},
    {"pattern": "foo", "dir_path": "ignored_dir"},
    {"pattern": "nomatch_xyz"},
]


@pytest.mark.parametrize("query", QUERIES, ids=[str(q) for q in QUERIES])
async def test_ripgrep_and_python_agree(ws: Path, query: dict[str, Any]) -> None:
    env = make_env(ws)
    rg_tool, py_tool = engines()
    with_rg = await rg_tool.execute(query, env)
    with_py = await py_tool.execute(query, env)
    assert not with_rg.is_error, with_rg.llm_content
    assert with_rg.llm_content == with_py.llm_content
    assert with_rg.raw_output == with_py.raw_output


async def test_default_search_output(ws: Path) -> None:
    result = await GrepSearchTool(ripgrep=None).execute({"pattern": "foo"}, make_env(ws))
    text = result.llm_content
    assert text.startswith(
        'Found 11 matches for pattern "foo" in .:\n---\nFile: .hidden/conf.txt\nL1: foo = yes\n---'
    )
    files = [line[len("File: ") :] for line in text.splitlines() if line.startswith("File: ")]
    assert files == [
        ".hidden/conf.txt",
        "a/q.txt",
        "a-b.txt",
        "crlf.txt",
        "docs/readme.md",
        "long.txt",
        "src/app.py",
        "src/util/helpers.py",
    ]  # no .gitignore'd, binary, .git or symlinked file
    assert "L2:     return FOO" in text
    assert "L1: foo\n" in text  # CRLF stripped
    long_line = next(line for line in text.splitlines() if line.startswith("L1: foo x"))
    assert len(long_line) < 600


async def test_context_and_limits(ws: Path) -> None:
    env = make_env(ws)
    tool = GrepSearchTool(ripgrep=None)
    context = (
        await tool.execute({"pattern": "foo", "context": 1, "dir_path": "src/util"}, env)
    ).llm_content
    assert context.endswith(
        "File: src/util/helpers.py\nL1: import foo\nL2- \n--\nL5- \nL6: foo.run()\n---"
    )
    limited = (await tool.execute({"pattern": "foo", "total_max_matches": 3}, env)).llm_content
    assert limited.startswith("Found 3 matches") and "limited to 3 matches" in limited
    names = (
        await tool.execute({"pattern": "foo", "names_only": True, "dir_path": "src"}, env)
    ).llm_content
    assert (
        names
        == 'Found 2 file(s) with matches for pattern "foo" in src:\nsrc/app.py\nsrc/util/helpers.py'
    )
    none = (await tool.execute({"pattern": "zzz", "include_pattern": "*.py"}, env)).llm_content
    assert none == 'No matches found for pattern "zzz" in . (filter: "*.py").'


@pytest.mark.parametrize("engine", [0, 1], ids=["ripgrep", "python"])
async def test_grep_errors(ws: Path, engine: int) -> None:
    tool = engines()[engine]
    env = make_env(ws)
    bad = await tool.execute({"pattern": "(unclosed"}, env)
    assert bad.is_error and bad.llm_content and bad.error_type == "search_failed"
    bad_exclude = await tool.execute({"pattern": "foo", "exclude_pattern": "("}, env)
    assert bad_exclude.is_error and "exclude_pattern" in bad_exclude.llm_content
    outside = await tool.execute({"pattern": "foo", "dir_path": ".."}, env)
    assert outside.is_error and outside.error_type == "path_outside_workspace"
    missing = await tool.execute({"pattern": "foo", "dir_path": "nope"}, env)
    assert missing.is_error and missing.error_type == "file_not_found"
    assert tool.validate({"pattern": "x", "total_max_matches": 0}) is not None
    assert tool.validate({"pattern": ""}) is not None


def test_grep_display(ws: Path) -> None:
    env = make_env(ws)
    display = GrepSearchTool(ripgrep=None).display({"pattern": "foo", "dir_path": "src"}, env)
    assert (display.title, display.kind) == ("Search for `foo` in src", "search")
    assert GrepSearchTool(ripgrep=None).display({"pattern": "foo"}, env).title == "Search for `foo`"


# ---------------------------------------------------------------- glob


async def test_glob_newest_first_then_alphabetical(ws: Path) -> None:
    now = time.time()
    os.utime(ws / "src" / "app.py", (now - 10, now - 10))
    os.utime(ws / "src" / "util" / "helpers.py", (now - 5, now - 5))
    os.utime(ws / "ignored_dir" / "x.py", (now, now))
    (ws / "old_b.py").write_text("")
    (ws / "old_a.py").write_text("")
    for name in ("old_a.py", "old_b.py"):
        os.utime(ws / name, (now - 3 * 86400, now - 3 * 86400))
    result = await GlobTool().execute({"pattern": "**/*.py"}, make_env(ws))
    lines = result.llm_content.splitlines()
    assert lines[0].startswith('Found 4 file(s) matching "**/*.py" within .')
    assert lines[1:] == [
        str(ws / "src" / "util" / "helpers.py"),
        str(ws / "src" / "app.py"),
        str(ws / "old_a.py"),
        str(ws / "old_b.py"),
    ]


async def test_glob_options(ws: Path) -> None:
    env = make_env(ws)
    (ws / "node_modules" / "p").mkdir(parents=True)
    (ws / "node_modules" / "p" / "i.py").write_text("")
    (ws / "README.MD").write_text("")
    unignored = await GlobTool().execute({"pattern": "**/*.py", "respect_git_ignore": False}, env)
    assert str(ws / "ignored_dir" / "x.py") in unignored.llm_content
    assert "node_modules" not in unignored.llm_content
    modules = await GlobTool().execute({"pattern": "node_modules/**/*.py"}, env)
    assert str(ws / "node_modules" / "p" / "i.py") in modules.llm_content
    insensitive = await GlobTool().execute({"pattern": "*.md"}, env)
    assert str(ws / "README.MD") in insensitive.llm_content
    sensitive = await GlobTool().execute({"pattern": "*.md", "case_sensitive": True}, env)
    assert sensitive.llm_content == 'No files found matching pattern "*.md" within ..'
    in_dir = await GlobTool().execute({"pattern": "*.py", "dir_path": "src"}, env)
    assert in_dir.llm_content.splitlines()[1:] == [str(ws / "src" / "app.py")]
    absolute = await GlobTool().execute({"pattern": str(ws / "src" / "**" / "*.py")}, env)
    assert str(ws / "src" / "util" / "helpers.py") in absolute.llm_content


async def test_glob_errors(ws: Path) -> None:
    env = make_env(ws)
    outside = await GlobTool().execute({"pattern": "*", "dir_path": "../"}, env)
    assert outside.is_error and outside.error_type == "path_outside_workspace"
    missing = await GlobTool().execute({"pattern": "*", "dir_path": "nope"}, env)
    assert missing.is_error and missing.error_type == "file_not_found"
    elsewhere = await GlobTool().execute({"pattern": "/etc/*.conf"}, env)
    assert elsewhere.is_error
    assert GlobTool().validate({}) is not None


def test_glob_display(ws: Path) -> None:
    display = GlobTool().display({"pattern": "**/*.py", "dir_path": "src"}, make_env(ws))
    assert (display.title, display.kind) == ("Find `**/*.py` in src", "search")
