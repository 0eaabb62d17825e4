"""The .gitignore-aware walk and the glob matcher."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.tools.io.gitignore import IgnoreRules, find_git_root, walk
from runtime.tools.io.globs import expand_braces, glob_match


def make_repo(root: Path) -> Path:
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".git" / "info" / "exclude").write_text("excluded.txt\n")
    (root / ".gitignore").write_text("*.log\nbuild/\n/top-only.txt\n")
    for rel in [
        "a.txt",
        "app.log",
        "excluded.txt",
        "top-only.txt",
        "build/out.js",
        "src/main.py",
        "src/top-only.txt",
        "src/debug.log",
        "src/keep/.gitignore",
        "src/keep/trace.log",
        "src/keep/data.json",
        ".hidden/h.txt",
    ]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(rel)
    (root / "src" / "keep" / ".gitignore").write_text("!trace.log\ndata.json\n")
    return root


def rels(base: Path, **kwargs: object) -> list[str]:
    return [e.rel for e in walk(base, **kwargs) if not e.is_dir]  # type: ignore[arg-type]


def test_walk_respects_nested_gitignore_and_info_exclude(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    assert rels(root) == [
        ".gitignore",
        ".hidden/h.txt",
        "a.txt",
        "src/keep/.gitignore",
        "src/keep/trace.log",
        "src/main.py",
        "src/top-only.txt",
    ]


def test_walk_without_gitignore_still_skips_dot_git(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    found = rels(root, respect_git_ignore=False)
    assert "app.log" in found and "build/out.js" in found
    assert not any(r.startswith(".git/") for r in found)


def test_gitignore_outside_a_repository_is_not_applied(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / "sub").mkdir(parents=True)
    (root / ".gitignore").write_text("*.log\n")
    (root / "x.log").write_text("x")
    (root / "sub" / "y.txt").write_text("y")
    assert find_git_root(root) is None
    assert rels(root) == [".gitignore", "sub/y.txt", "x.log"]


def test_walking_a_subdirectory_applies_parent_rules(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    assert rels(root / "src") == ["keep/.gitignore", "keep/trace.log", "main.py", "top-only.txt"]
    assert IgnoreRules.for_directory(root / "src").is_ignored(str(root / "src" / "x.log"), False)


def test_ignored_directories_are_pruned_not_entered(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    (root / "build" / "nested" / "deeper").mkdir(parents=True)
    seen: list[str] = []

    def record(rel: str, name: str) -> bool:
        seen.append(rel)
        return False

    list(walk(root, skip_dir=record))
    assert "src/keep" in seen
    assert not any(rel.startswith("build") for rel in seen)


def test_an_ignored_directory_walked_explicitly_is_searched_like_ripgrep(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    (root / "build" / "deep").mkdir()
    (root / "build" / "deep" / "x.js").write_text("")
    (root / "build" / "trace.log").write_text("")
    assert rels(root / "build") == ["deep/x.js", "out.js"]  # *.log still applies inside


def test_skip_dir_and_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "w"
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "node_modules" / "pkg" / "i.js").write_text("")
    (root / "f.txt").write_text("")
    os.symlink(root / "f.txt", root / "link.txt")
    os.symlink(tmp_path, root / "loop")
    assert rels(root, skip_dir=lambda rel, name: name == "node_modules") == ["f.txt"]


def test_walk_order_is_path_order(tmp_path: Path) -> None:
    for rel in ["a-b.txt", "a/q.txt", "a.txt", "b/c/d.txt"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert rels(tmp_path) == ["a/q.txt", "a-b.txt", "a.txt", "b/c/d.txt"]


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "main.py", True),
        ("*.py", "src/main.py", False),
        ("**/*.py", "main.py", True),
        ("**/*.py", "src/deep/main.py", True),
        ("src/**", "src/a/b.txt", True),
        ("src/**/test_*.py", "src/test_x.py", True),
        ("src/*.{ts,tsx}", "src/app.tsx", True),
        ("src/*.{ts,tsx}", "src/app.js", False),
        ("?.md", "a.md", True),
        ("[ab].md", "c.md", False),
        ("[!ab].md", "c.md", True),
        ("**/.env", ".env", True),
    ],
)
def test_glob_match(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


def test_glob_case_and_braces() -> None:
    assert glob_match("**/*.PY", "a/b.py", case_sensitive=False)
    assert not glob_match("**/*.PY", "a/b.py")
    assert expand_braces("a{b,c{d,e}}f") == ["abf", "acdf", "acef"]
    assert expand_braces("no{brace") == ["no{brace"]
