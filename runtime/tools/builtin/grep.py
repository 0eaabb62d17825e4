"""`grep_search`: finding lines by regular expression (local disk; ripgrep or Python)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from runtime.errors import RuntimeAgentError
from runtime.protocol import ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.builtin.args import (
    bool_arg,
    int_arg,
    parse_error,
    required_str,
    str_arg,
)
from runtime.tools.builtin.env import location, resolve, short_title_arg, shown
from runtime.tools.builtin.read import split_lines
from runtime.tools.builtin.results import error_from_exception, error_result
from runtime.tools.io.files import decode_text
from runtime.tools.io.grep_engine import GrepMatch, GrepOutcome, GrepQuery, find_rg, search

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _GrepArgs:
    pattern: str
    dir_path: str
    include: str | None
    exclude: str | None
    names_only: bool
    case_sensitive: bool
    fixed_strings: bool
    context: int
    total_max_matches: int


def _parse_grep(args: dict[str, Any]) -> _GrepArgs:
    return _GrepArgs(
        pattern=required_str(args, "pattern"),
        dir_path=str_arg(args, "dir_path") or ".",
        include=str_arg(args, "include_pattern") or None,
        exclude=str_arg(args, "exclude_pattern") or None,
        names_only=bool_arg(args, "names_only", False),
        case_sensitive=bool_arg(args, "case_sensitive", False),
        fixed_strings=bool_arg(args, "fixed_strings", False),
        context=int_arg(args, "context", default=0, minimum=0) or 0,
        total_max_matches=int_arg(args, "total_max_matches", default=100, minimum=1) or 100,
    )


def _with_context(path: Path, hits: list[GrepMatch], context: int) -> list[str]:
    """The matching lines of one file, with `context` lines around them (`-` marks context)."""
    if context <= 0:
        return [f"L{m.line}: {m.text}" for m in hits]
    try:
        lines = split_lines(decode_text(path.read_bytes()))
    except OSError as exc:
        logger.debug("no context for %s: %s", path, exc)
        return [f"L{m.line}: {m.text}" for m in hits]
    matched = {m.line: m.text for m in hits}
    wanted = sorted(
        {
            n
            for m in hits
            for n in range(m.line - context, m.line + context + 1)
            if 1 <= n <= len(lines)
        }
    )
    out: list[str] = []
    previous = None
    for number in wanted:
        if previous is not None and number != previous + 1:
            out.append("--")
        out.append(
            f"L{number}: {matched[number]}"
            if number in matched
            else f"L{number}- {lines[number - 1][:500]}"
        )
        previous = number
    return out


def format_grep(outcome: GrepOutcome, parsed: _GrepArgs, env: ToolEnv, where: str) -> str:
    """The model's view of a search: the same for both engines."""
    scope = f'for pattern "{parsed.pattern}" in {where}'
    if parsed.include:
        scope += f' (filter: "{parsed.include}")'
    if not outcome.matches:
        return f"No matches found {scope}."
    limited = (
        f"\n(Results are limited to {parsed.total_max_matches} matches; narrow the search with "
        "dir_path or include_pattern, or raise total_max_matches.)"
        if outcome.limited
        else ""
    )
    if parsed.names_only:
        names = [shown(env, m.path) for m in outcome.matches]
        return f"Found {len(names)} file(s) with matches {scope}:\n" + "\n".join(names) + limited
    by_file: dict[Path, list[GrepMatch]] = {}
    for match in outcome.matches:
        by_file.setdefault(match.path, []).append(match)
    count = len(outcome.matches)
    parts = [f"Found {count} match{'es' if count != 1 else ''} {scope}:", "---"]
    for path, hits in by_file.items():
        parts.append(f"File: {shown(env, path)}")
        parts.extend(_with_context(path, hits, parsed.context))
        parts.append("---")
    return "\n".join(parts) + limited


class GrepSearchTool(GcliTool):
    """`grep_search`: lines matching a regular expression, with ripgrep when available.

    `ripgrep`: "auto" finds the `rg` binary (next to Python, then PATH); a path
    forces that binary; None forces the pure-Python engine.
    """

    name = "grep_search"
    kind = "search"
    description = (
        "Searches file contents for a regular expression (or a literal string with "
        "fixed_strings) and returns the matching lines grouped by file, with line numbers. "
        "Case-insensitive unless case_sensitive is true. Files ignored by .gitignore are "
        "skipped. At most total_max_matches (default 100) matches are returned."
    )

    def __init__(self, *, ripgrep: str | None | Literal["auto"] = "auto") -> None:
        self._rg = find_rg() if ripgrep == "auto" else ripgrep

    @property
    def engine(self) -> str:
        return "ripgrep" if self._rg else "python"

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "The regular expression to search for.",
                },
                "dir_path": {
                    "type": "string",
                    "description": (
                        "Optional: directory (searched recursively) or file; the workspace root "
                        "when omitted."
                    ),
                },
                "include_pattern": {
                    "type": "string",
                    "description": (
                        "Optional: glob of files to search, e.g. '*.py', '*.{ts,tsx}', 'src/**'."
                    ),
                },
                "exclude_pattern": {
                    "type": "string",
                    "description": (
                        "Optional: regular expression; matching lines that also match it are "
                        "left out."
                    ),
                },
                "names_only": {
                    "type": "boolean",
                    "description": "Optional: return only the paths of matching files.",
                },
                "case_sensitive": {
                    "type": "boolean",
                    "description": "Optional: match case. Default false.",
                },
                "fixed_strings": {
                    "type": "boolean",
                    "description": "Optional: treat pattern as literal text.",
                },
                "context": {
                    "type": "integer",
                    "description": "Optional: lines of context around each match.",
                },
                "total_max_matches": {
                    "type": "integer",
                    "description": "Optional: maximum number of matches returned. Default 100.",
                },
            },
            "required": ["pattern"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        return parse_error(_parse_grep, args)

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        pattern = args.get("pattern") if isinstance(args.get("pattern"), str) else ""
        dir_path = args.get("dir_path") if isinstance(args.get("dir_path"), str) else None
        title = f"Search for `{short_title_arg(str(pattern))}`"
        if dir_path and dir_path != ".":
            title += f" in {shown(env, dir_path)}"
        include = args.get("include_pattern")
        if isinstance(include, str) and include:
            title += f" ({include})"
        return ToolDisplay(title=title, kind="search", locations=location(env, dir_path))

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        try:
            parsed = _parse_grep(args)
            target = resolve(env, parsed.dir_path)
            if not target.exists():
                return error_result(f"Path not found: {shown(env, target)}", "file_not_found")
            query = GrepQuery(
                pattern=parsed.pattern,
                target=target,
                case_sensitive=parsed.case_sensitive,
                fixed_strings=parsed.fixed_strings,
                include=parsed.include,
                exclude=parsed.exclude,
                max_matches=parsed.total_max_matches,
                names_only=parsed.names_only,
            )
            outcome = await search(query, rg=self._rg)
        except (RuntimeAgentError, OSError) as exc:
            return error_from_exception(exc)
        text = format_grep(outcome, parsed, env, shown(env, target))
        raw = {
            "matches": len(outcome.matches),
            "limited": outcome.limited,
            "files": sorted({str(m.path) for m in outcome.matches}),
        }
        return ToolResult(llm_content=text, raw_output=raw)
