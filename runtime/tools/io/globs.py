"""Glob patterns for file-finding tools: `*`, `?`, `[...]`, `**` and `{a,b}`.

`*` and `?` stay inside one path segment; `**` as a whole segment spans any number
of directories (also none). Dotfiles are matched like any other name. Patterns are
matched against POSIX-style paths relative to the directory being searched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_MAX_BRACE_EXPANSIONS = 256


def expand_braces(pattern: str) -> list[str]:
    """`a{b,c{d,e}}` → `[ab, acd, ace]`. Unbalanced braces are kept literally."""
    start = _first_brace_group(pattern)
    if start is None:
        return [pattern]
    open_at, close_at, options = start
    head, tail = pattern[:open_at], pattern[close_at + 1 :]
    results: list[str] = []
    for option in options:
        for expanded in expand_braces(head + option + tail):
            results.append(expanded)
            if len(results) >= _MAX_BRACE_EXPANSIONS:
                return results
    return results


def _first_brace_group(pattern: str) -> tuple[int, int, list[str]] | None:
    """The first balanced `{...,...}` group: its bounds and comma-split options."""
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            depth = 0
            options: list[str] = []
            current: list[str] = []
            for pos in range(index, len(pattern)):
                c = pattern[pos]
                if c == "{":
                    depth += 1
                    if depth == 1:
                        continue
                elif c == "}":
                    depth -= 1
                    if depth == 0:
                        options.append("".join(current))
                        if len(options) > 1:
                            return index, pos, options
                        break
                elif c == "," and depth == 1:
                    options.append("".join(current))
                    current = []
                    continue
                current.append(c)
        index += 1
    return None


def _translate(pattern: str) -> str:
    """One brace-free glob → a regex source (no anchors)."""
    out: list[str] = []
    segments = pattern.split("/")
    for number, segment in enumerate(segments):
        last = number == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:.*/)?")
            continue
        out.append(_translate_segment(segment))
        if not last:
            out.append("/")
    return "".join(out)


def _translate_segment(segment: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            while index + 1 < len(segment) and segment[index + 1] == "*":
                index += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = segment.find("]", index + 2)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = segment[index + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                index = end
        elif char == "\\" and index + 1 < len(segment):
            index += 1
            out.append(re.escape(segment[index]))
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


@lru_cache(maxsize=256)
def compile_glob(pattern: str, case_sensitive: bool = True) -> re.Pattern[str]:
    """A regex that fully matches the relative paths selected by `pattern`."""
    alternatives = [_translate(p.strip("/") or p) for p in expand_braces(pattern)]
    flags = 0 if case_sensitive else re.IGNORECASE
    return re.compile("(?:" + "|".join(alternatives) + ")", flags)


def glob_match(pattern: str, rel_path: str, *, case_sensitive: bool = True) -> bool:
    return compile_glob(pattern, case_sensitive).fullmatch(rel_path) is not None


def any_glob_match(patterns: Iterable[str], rel_path: str, *, case_sensitive: bool = True) -> bool:
    return any(glob_match(p, rel_path, case_sensitive=case_sensitive) for p in patterns)


def has_magic(pattern: str) -> bool:
    """Whether `pattern` contains glob syntax at all."""
    return any(c in pattern for c in "*?[{")
