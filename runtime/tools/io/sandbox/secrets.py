"""What a sandbox hides from the commands it runs: the user's keys and tokens, our own
credentials file, and the workspace's `.env*` files (each one that exists, in any folder
of a root, looked for at each command)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

HOME_SECRETS: tuple[str, ...] = (
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".netrc",
    ".config/gh",
    ".docker/config.json",
    ".gemini/oauth_creds.json",
)
"""Paths under the home folder (and, for `.config/...`, under `$XDG_CONFIG_HOME`)."""

logger = logging.getLogger(__name__)

CREDENTIALS_FILE = "adk-acp/credentials.json"
"""Our own credentials file, under `$XDG_CONFIG_HOME` (by default `~/.config`)."""


def _config_home(home: Path, env: Mapping[str, str]) -> Path:
    configured = env.get("XDG_CONFIG_HOME")
    return Path(configured) if configured else home / ".config"


def secret_candidates(home: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
    """Every path the sandbox hides when it exists (the workspace's `.env*` aside)."""
    config_home = _config_home(home, env)
    paths = [home / name for name in HOME_SECRETS]
    paths += [
        config_home / name.removeprefix(".config/")
        for name in HOME_SECRETS
        if name.startswith(".config/")
    ]
    paths.append(config_home / CREDENTIALS_FILE)
    paths.append(home / ".config" / CREDENTIALS_FILE)
    unique: dict[Path, None] = dict.fromkeys(paths)
    return tuple(unique)


SKIPPED_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", ".cache"}
)
"""Folders the `.env*` search does not enter (tools' and dependencies' trees)."""
MAX_ENTRIES = 50_000
"""How many entries one search looks at, at the most (a huge tree: the rest unsearched)."""
MAX_DEPTH = 8


def env_files(roots: Iterable[Path]) -> list[Path]:
    """The `.env*` files in each root (`.env`, `.env.local`, `.envrc`, ...), at its top
    and in its folders (`SKIPPED_DIRS` aside, `MAX_DEPTH` deep, `MAX_ENTRIES` at most;
    symbolic links to folders are not followed)."""
    found: list[Path] = []
    for root in roots:
        budget = MAX_ENTRIES
        folders: list[tuple[str, int]] = [(str(root), 0)]
        while folders and budget > 0:
            folder, depth = folders.pop()
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        budget -= 1
                        if budget <= 0:
                            logger.debug("the .env* search of %s stopped at %d entries", root,
                                         MAX_ENTRIES)  # fmt: skip
                            break
                        try:
                            is_dir = entry.is_dir(follow_symlinks=False)
                        except OSError:
                            continue
                        if is_dir:
                            if entry.name not in SKIPPED_DIRS and depth < MAX_DEPTH:
                                folders.append((entry.path, depth + 1))
                        elif entry.name.startswith(".env"):
                            found.append(Path(entry.path))
            except OSError:
                continue
    return found


def existing_secrets(
    home: Path, env: Mapping[str, str], roots: Iterable[Path]
) -> list[tuple[Path, bool]]:
    """(resolved path, is a folder) of each secret that exists now, shortest path first
    (a folder is hidden before a file in it)."""
    seen: dict[Path, bool] = {}
    for path in (*secret_candidates(home, env), *env_files(roots)):
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        seen[real] = real.is_dir()
    return sorted(seen.items(), key=lambda item: len(item[0].parts))
