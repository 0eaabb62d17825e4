"""resolve_in_roots and display_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.errors import PathOutsideWorkspaceError
from runtime.tools.io.paths import display_path, resolve_in_roots


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("x = 1\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret")
    return root


def test_relative_paths_resolve_against_the_first_root(ws: Path) -> None:
    assert resolve_in_roots("src/app.py", (ws,)) == ws / "src" / "app.py"
    assert resolve_in_roots("src/../src/app.py", (ws,)) == ws / "src" / "app.py"
    assert resolve_in_roots(".", (ws,)) == ws


def test_files_that_do_not_exist_yet_are_allowed_inside(ws: Path) -> None:
    assert resolve_in_roots("new/dir/file.txt", (ws,)) == ws / "new" / "dir" / "file.txt"


def test_absolute_paths_inside_any_root_are_allowed(ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    assert resolve_in_roots(str(ws / "src" / "app.py"), (ws,)) == ws / "src" / "app.py"
    assert resolve_in_roots(str(other / "x.txt"), (ws, other)) == other / "x.txt"


@pytest.mark.parametrize("raw", ["../outside/secret.txt", "src/../../outside/secret.txt", ".."])
def test_dotdot_escapes_are_refused(ws: Path, raw: str) -> None:
    with pytest.raises(PathOutsideWorkspaceError) as info:
        resolve_in_roots(raw, (ws,))
    assert raw in str(info.value) and str(ws) in str(info.value)


def test_absolute_paths_elsewhere_are_refused(ws: Path, tmp_path: Path) -> None:
    with pytest.raises(PathOutsideWorkspaceError, match="outside the workspace roots"):
        resolve_in_roots(str(tmp_path / "outside" / "secret.txt"), (ws,))
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_in_roots("/etc/passwd", (ws,))


def test_a_sibling_with_a_common_prefix_is_not_inside(ws: Path, tmp_path: Path) -> None:
    sibling = tmp_path / "ws2"
    sibling.mkdir()
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_in_roots(str(sibling / "f"), (ws,))


def test_symlinks_leading_outside_are_refused(ws: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path / "outside" / "secret.txt", ws / "link.txt")
    os.symlink(tmp_path / "outside", ws / "linkdir")
    os.symlink(tmp_path / "outside" / "missing.txt", ws / "dangling.txt")
    for raw in ("link.txt", "linkdir/secret.txt", "linkdir/new.txt", "dangling.txt"):
        with pytest.raises(PathOutsideWorkspaceError, match="symlink"):
            resolve_in_roots(raw, (ws,))


def test_symlinks_staying_inside_are_allowed_and_kept(ws: Path) -> None:
    os.symlink(ws / "src", ws / "alias")
    assert resolve_in_roots("alias/app.py", (ws,)) == ws / "alias" / "app.py"


def test_a_root_reached_through_a_symlink_still_works(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "via")
    root = tmp_path / "via"
    assert resolve_in_roots("a.txt", (root,)) == root / "a.txt"
    assert resolve_in_roots(str(real / "a.txt"), (root,)) == real / "a.txt"


def test_no_roots_and_nul_bytes_are_refused(ws: Path) -> None:
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_in_roots("a", ())
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_in_roots("a\x00b", (ws,))


def test_display_path_is_relative_to_the_first_root(ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    assert display_path(ws / "src" / "app.py", (ws,)) == "src/app.py"
    assert display_path("src/app.py", (ws,)) == "src/app.py"
    assert display_path(ws, (ws,)) == "."
    assert display_path(other / "x", (ws, other)) == str(other / "x")
    assert display_path("/elsewhere/x", (ws,)) == "/elsewhere/x"
