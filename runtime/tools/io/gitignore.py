"""`.gitignore` rules and a pruning directory walk (local disk only).

The rules follow git and ripgrep: `.gitignore` files count only inside a git
repository (a directory holding `.git`, here or above). Then the repository's
`.git/info/exclude` and every `.gitignore` from the repository root down to a
directory apply to it, deeper files overriding shallower ones (`!` re-includes).
`.git` itself is never walked. Ignored directories are pruned, never entered, so
a large `node_modules/` costs one check.

Symlinks are not followed and not yielded (as ripgrep does by default): a link
may lead out of the workspace.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

logger = logging.getLogger(__name__)

GIT_DIR = ".git"
GITIGNORE = ".gitignore"


def find_git_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` that contains `.git`."""
    current = Path(os.path.abspath(start))
    for candidate in (current, *current.parents):
        if os.path.lexists(candidate / GIT_DIR):
            return candidate
    return None


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern[str]
    ignore: bool  # False for a `!` rule
    has_dir_group: bool


def _load_rules(path: Path) -> tuple[_Rule, ...]:
    """The rules of one ignore file, compiled by pathspec (gitignore syntax)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError as exc:
        logger.debug("cannot read ignore file %s: %s", path, exc)
        return ()
    rules: list[_Rule] = []
    for pattern in pathspec.GitIgnoreSpec.from_lines(lines).patterns:
        regex = getattr(pattern, "regex", None)
        if pattern.include is None or not isinstance(regex, re.Pattern):
            continue  # a comment or a blank line
        rules.append(_Rule(regex, bool(pattern.include), _DIR_GROUP in regex.groupindex))
    return tuple(rules)


# pathspec marks the directory part of a pattern such as `build/` with this
# group, so that `build/` also matches `build/x/y` (git's "everything below an
# excluded directory"). ripgrep matches each path by itself instead; the walk
# never enters an ignored directory, so the two differ only below a directory
# that was searched explicitly, and there we follow ripgrep.
_DIR_GROUP = "ps_d"


def _decide(rules: tuple[_Rule, ...], rel: str) -> bool | None:
    """Last matching rule wins: True ignored, False re-included, None no rule matched."""
    decision: bool | None = None
    for rule in rules:
        match = rule.regex.match(rel)
        if match is None:
            continue
        if rule.has_dir_group and match.group(_DIR_GROUP) is not None and match.end() < len(rel):
            continue  # matched only a parent directory of `rel`
        decision = rule.ignore
    return decision


@dataclass(frozen=True)
class _Layer:
    base: str  # absolute directory the patterns are relative to
    rules: tuple[_Rule, ...]


@dataclass(frozen=True)
class IgnoreRules:
    """The ignore rules in force in one directory; immutable, extended per subdirectory."""

    layers: tuple[_Layer, ...] = ()
    in_repo: bool = False

    @classmethod
    def for_directory(cls, directory: Path) -> IgnoreRules:
        """Rules for `directory`, its own `.gitignore` included."""
        directory = Path(os.path.abspath(directory))
        git_root = find_git_root(directory)
        if git_root is None:
            return cls()
        rules = cls._repo_root_rules(git_root)
        for part in directory.relative_to(git_root).parts:
            git_root = git_root / part
            rules = rules._with_file(git_root)
        return rules

    @classmethod
    def _repo_root_rules(cls, root: Path) -> IgnoreRules:
        layers: list[_Layer] = []
        exclude = (
            _load_rules(root / GIT_DIR / "info" / "exclude") if (root / GIT_DIR).is_dir() else ()
        )
        if exclude:
            layers.append(_Layer(str(root), exclude))
        rules = cls(tuple(layers), in_repo=True)
        return rules._with_file(root)

    def _with_file(self, directory: Path) -> IgnoreRules:
        rules = _load_rules(directory / GITIGNORE)
        if not rules:
            return self
        return IgnoreRules((*self.layers, _Layer(str(directory), rules)), self.in_repo)

    def descend(self, directory: Path, names: set[str] | frozenset[str]) -> IgnoreRules:
        """Rules for a subdirectory whose entry names are `names`."""
        if not self.in_repo:
            if GIT_DIR in names:  # a repository starts here
                return IgnoreRules._repo_root_rules(directory)
            return self
        if GITIGNORE in names:
            return self._with_file(directory)
        return self

    def is_ignored(self, path: str, is_dir: bool) -> bool:
        """Whether the absolute `path` is ignored; the deepest deciding rule wins."""
        for layer in reversed(self.layers):
            if not path.startswith(layer.base + os.sep):
                continue
            rel = path[len(layer.base) + 1 :].replace(os.sep, "/")
            decision = _decide(layer.rules, rel + "/" if is_dir else rel)
            if decision is not None:
                return decision
        return False


@dataclass(frozen=True)
class WalkEntry:
    """A file or directory met by `walk`; `rel` is POSIX-style, relative to the walk's base."""

    path: Path
    rel: str
    is_dir: bool


# Called with (rel, name) of a directory; True skips it and everything below.
DirFilter = Callable[[str, str], bool]


def walk(
    base: Path,
    *,
    respect_git_ignore: bool = True,
    skip_dir: DirFilter | None = None,
) -> Iterator[WalkEntry]:
    """Every file and directory below `base` (not `base` itself), depth first.

    Entries come in path order (names sorted per directory, a directory's
    contents right after it), the order of `rg --sort path`. Ignored entries are
    neither yielded nor entered; nor is anything `skip_dir` refuses. Unreadable
    directories are skipped with a debug log.
    """
    base = Path(os.path.abspath(base))
    rules = IgnoreRules.for_directory(base) if respect_git_ignore else IgnoreRules()
    stack: list[tuple[Iterator[os.DirEntry[str]], str, IgnoreRules]] = []
    _push(stack, base, "", rules)
    while stack:
        entries, rel_dir, dir_rules = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        if entry.name == GIT_DIR or entry.is_symlink():
            continue
        is_dir = entry.is_dir(follow_symlinks=False)
        if respect_git_ignore and dir_rules.is_ignored(entry.path, is_dir):
            continue
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        if not is_dir:
            if entry.is_file(follow_symlinks=False):
                yield WalkEntry(Path(entry.path), rel, False)
            continue
        if skip_dir is not None and skip_dir(rel, entry.name):
            continue
        path = Path(entry.path)
        yield WalkEntry(path, rel, True)
        sub_rules = dir_rules.descend(path, _names(path)) if respect_git_ignore else dir_rules
        _push(stack, path, rel, sub_rules)


def _push(
    stack: list[tuple[Iterator[os.DirEntry[str]], str, IgnoreRules]],
    directory: Path,
    rel: str,
    rules: IgnoreRules,
) -> None:
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError as exc:
        logger.debug("cannot list %s: %s", directory, exc)
        return
    stack.append((iter(entries), rel, rules))


def _names(directory: Path) -> frozenset[str]:
    """Only the two names that change the rules matter; check them directly."""
    return frozenset(n for n in (GIT_DIR, GITIGNORE) if os.path.lexists(directory / n))
