"""Two interchangeable engines behind `grep_search`: ripgrep, and pure Python.

Both return the same `GrepOutcome` for the same tree: files in path order
(`rg --sort path`), matching lines in line order, `.gitignore` respected inside
git repositories, hidden files searched, `.git` skipped, symlinks not followed,
binary files skipped. A file named as the target is always searched. The include
glob is matched gitignore-style against paths
relative to the searched directory (a pattern without `/` matches file names at
any depth; braces such as `*.{ts,tsx}` expand). Differences left: the regex
dialects (Rust for ripgrep, Python `re` for the fallback) and files over 20 MB,
which the fallback skips.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import re
import shutil
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from runtime.errors import ToolError
from runtime.tools.io.files import MAX_FILE_BYTES, decode_text
from runtime.tools.io.gitignore import walk
from runtime.tools.io.globs import expand_braces
from runtime.tools.policy.sensitive import SENSITIVE_GLOBS, is_sensitive_file

logger = logging.getLogger(__name__)

MAX_LINE_CHARS = 500
"""Matching lines are cut to this many characters in results."""
_BINARY_SNIFF = 8192


class GrepError(ToolError):
    """The search itself failed (an invalid pattern, ripgrep failing)."""

    error_type = "search_failed"


@dataclass(frozen=True)
class GrepQuery:
    """One search. `target` is a directory (searched recursively) or a single file."""

    pattern: str
    target: Path
    case_sensitive: bool = False
    fixed_strings: bool = False
    include: str | None = None
    exclude: str | None = None  # a regex: matching lines are dropped
    max_matches: int = 100
    names_only: bool = False


@dataclass(frozen=True)
class GrepMatch:
    path: Path
    line: int
    text: str


@dataclass
class GrepOutcome:
    """The matches found, in order; `limited` when more existed beyond `max_matches`."""

    matches: list[GrepMatch] = field(default_factory=list)
    limited: bool = False


def find_rg() -> str | None:
    """The ripgrep binary: next to the running Python first (the `ripgrep` wheel), then PATH."""
    candidate = Path(sys.executable).parent / ("rg.exe" if os.name == "nt" else "rg")
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return shutil.which("rg")


def _exclude_regex(query: GrepQuery) -> re.Pattern[str] | None:
    if not query.exclude:
        return None
    try:
        return re.compile(query.exclude)
    except re.error as exc:
        raise GrepError(f"Invalid exclude_pattern {query.exclude!r}: {exc}") from exc


def _search_root(query: GrepQuery) -> tuple[Path, str]:
    """(directory to run in, path argument) so that globs are relative to the searched dir."""
    if query.target.is_dir():
        return query.target, "."
    return query.target.parent, query.target.name


class _Collector:
    """Applies the exclude filter and the match cap, in the same way for both engines."""

    def __init__(self, query: GrepQuery) -> None:
        self.query = query
        self.exclude = _exclude_regex(query)
        self.outcome = GrepOutcome()
        self._files: set[Path] = set()

    def add(self, path: Path, line: int, text: str) -> bool:
        """Record a match; False once the cap is passed (stop searching)."""
        if self.exclude is not None and self.exclude.search(text):
            return True
        if self.query.names_only and path in self._files:
            return True
        if len(self.outcome.matches) >= self.query.max_matches:
            self.outcome.limited = True
            return False
        self._files.add(path)
        self.outcome.matches.append(GrepMatch(path, line, text[:MAX_LINE_CHARS]))
        return True


# ---------------------------------------------------------------- ripgrep


def _rg_args(rg: str, query: GrepQuery, path_arg: str) -> list[str]:
    args = [rg, "--json", "--no-config", "--hidden", "--no-ignore-dot", "--no-ignore-global"]
    args += ["--sort", "path", "--glob", "!.git"]
    if not query.case_sensitive:
        args.append("--ignore-case")
    if query.fixed_strings:
        args.append("--fixed-strings")
    if query.include:
        for pattern in expand_braces(query.include):
            args += ["--glob", pattern]
    if path_arg == ".":  # searching a directory: files that may hold secrets stay unread
        for pattern in SENSITIVE_GLOBS:
            args += ["--glob", f"!{pattern}"]
    args += ["--regexp", query.pattern, "--", path_arg]
    return args


def _rg_text(data: dict[str, object]) -> str:
    if "text" in data:
        return str(data["text"])
    return base64.b64decode(str(data.get("bytes", ""))).decode("utf-8", errors="replace")


def _strip_eol(text: str) -> str:
    if text.endswith("\n"):
        text = text[:-1]
    return text[:-1] if text.endswith("\r") else text


async def search_with_rg(rg: str, query: GrepQuery) -> GrepOutcome:
    """Run ripgrep with `--json`; stops it once the cap is passed."""
    cwd, path_arg = _search_root(query)
    collector = _Collector(query)
    proc = await asyncio.create_subprocess_exec(
        *_rg_args(rg, query, path_arg),
        cwd=str(cwd),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=64 * 1024 * 1024,
    )
    assert proc.stdout is not None and proc.stderr is not None
    stderr_task = asyncio.create_task(proc.stderr.read())
    stopped = False
    try:
        async for raw in proc.stdout:
            message = json.loads(raw)
            if message.get("type") != "match":
                continue
            data = message["data"]
            rel = _rg_text(data["path"]).removeprefix("./")
            if not collector.add(
                cwd / rel, int(data["line_number"]), _strip_eol(_rg_text(data["lines"]))
            ):
                stopped = True
                break
    finally:
        if stopped or proc.returncode is None and not proc.stdout.at_eof():
            _stop_early(proc.pid)
        await proc.wait()
        stderr = (await stderr_task).decode(errors="replace").strip()
    if proc.returncode == 2 and not stopped and not collector.outcome.matches:
        raise GrepError(f"Search failed: {stderr or 'ripgrep exited with an error'}")
    if stderr and proc.returncode == 2:
        logger.debug("ripgrep reported: %s", stderr)
    return collector.outcome


def _stop_early(pid: int) -> None:
    """Kill ripgrep once enough is read.

    Not `Process.kill()`: it polls the child first, and that poll can reap it
    under asyncio's child watcher, which then reports a bogus exit code.
    """
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        logger.debug("rg had already exited")


# ---------------------------------------------------------------- pure Python


def _compile(query: GrepQuery) -> re.Pattern[str]:
    source = re.escape(query.pattern) if query.fixed_strings else query.pattern
    try:
        return re.compile(source, 0 if query.case_sensitive else re.IGNORECASE)
    except re.error as exc:
        raise GrepError(f"Invalid regular expression {query.pattern!r}: {exc}") from exc


def _include_spec(query: GrepQuery) -> pathspec.GitIgnoreSpec | None:
    if not query.include:
        return None
    return pathspec.GitIgnoreSpec.from_lines(expand_braces(query.include))


def _search_file(path: Path, regex: re.Pattern[str], collector: _Collector) -> bool:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return True
        data = path.read_bytes()
    except OSError as exc:
        logger.debug("cannot read %s: %s", path, exc)
        return True
    if b"\x00" in data[:_BINARY_SNIFF] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    lines = decode_text(data).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if regex.search(line) and not collector.add(path, number, _strip_eol(line)):
            return False
    return True


def _python_search(query: GrepQuery, stop: threading.Event) -> GrepOutcome:
    regex = _compile(query)
    collector = _Collector(query)
    include = _include_spec(query)
    cwd, path_arg = _search_root(query)
    if path_arg != ".":  # one file named explicitly: searched whatever the include glob says
        _search_file(query.target, regex, collector)
        return collector.outcome
    for entry in walk(cwd):
        if stop.is_set():
            break
        if entry.is_dir or (include is not None and not include.match_file(entry.rel)):
            continue
        if is_sensitive_file(entry.path):
            continue
        if not _search_file(entry.path, regex, collector):
            break
    return collector.outcome


async def search_with_python(query: GrepQuery) -> GrepOutcome:
    """The fallback engine, run in a worker thread (stopped between files on cancel)."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(_python_search, query, stop)
    finally:
        stop.set()


async def search(query: GrepQuery, *, rg: str | None) -> GrepOutcome:
    """Search with ripgrep when `rg` names a binary, else in Python."""
    if rg:
        return await search_with_rg(rg, query)
    return await search_with_python(query)
