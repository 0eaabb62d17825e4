"""Files that may hold secrets: `.env`, private keys, credential stores.

Reading one is asked in every mode (yolo and autoEdit too) unless a policy rule
with an `argsPattern` allows that very call; the listing and searching tools
leave such files out unless they are named explicitly.

Also here: files under `.git/`, which make git run code (hooks, `core.fsmonitor`);
writing one is asked in every mode (`is_git_metadata`, `writes_git_dir`).
"""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Any

SENSITIVE_GLOBS = (
    ".env",
    ".env.*",
    "*.env",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    ".netrc",
    ".pgpass",
    ".git-credentials",
)
_HARMLESS_SUFFIXES = (".example", ".sample", ".template", ".dist")

READ_TOOLS_WITH_PATHS = {"read_file": ("file_path",), "read_many_files": ("include",)}


def is_sensitive_file(path: str | os.PathLike[str]) -> bool:
    """Whether the file's name says it may hold secrets (`.env.example` and the like do not)."""
    name = os.path.basename(os.fspath(path)).lower()
    if name.endswith(_HARMLESS_SUFFIXES):
        return False
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SENSITIVE_GLOBS)


def sensitive_reads(tool_name: str, args: dict[str, Any]) -> list[str]:
    """The paths a call names explicitly for reading that may hold secrets."""
    found: list[str] = []
    for key in READ_TOOLS_WITH_PATHS.get(tool_name, ()):
        value = args.get(key)
        values = value if isinstance(value, list) else [value]
        found.extend(v for v in values if isinstance(v, str) and is_sensitive_file(v))
    return found


_GIT_DIR_MENTION = re.compile(r"(?:^|[\s/'\"=:])\.git(?:[/\s'\";)]|$)|\bgit\b[^|;&\n]*\sconfig\b")


# Files that make a directory a git directory (with `objects/` and `refs/`, `HEAD` makes
# one that git finds without any `.git`) or point git at another one.
_GIT_DIR_FILES = frozenset({"HEAD", "commondir", "gitdir"})


def is_git_metadata(path: object) -> bool:
    """Whether `path` is under a `.git` directory (hooks, config: git runs code from
    there), is a `.git` file (it points git at another directory), or is a file that
    makes a directory a git directory of its own (`HEAD`)."""
    if not isinstance(path, str):
        return False
    parts = re.split(r"[/\\]+", path)
    return ".git" in parts or parts[-1] in _GIT_DIR_FILES


def writes_git_dir(command: str) -> bool:
    """Whether a shell command may write under `.git/`: it names `.git` or runs
    `git config` (a heuristic; the caller applies it to commands that are not read-only)."""
    return _GIT_DIR_MENTION.search(command) is not None
