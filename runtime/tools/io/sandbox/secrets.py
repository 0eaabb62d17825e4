"""What a sandbox hides from the commands it runs: the user's keys and tokens, our own
credentials file, and the workspace's `.env*` files (each one that exists, per command)."""

from __future__ import annotations

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


def env_files(roots: Iterable[Path]) -> list[Path]:
    """The `.env*` files at the top of each root (`.env`, `.env.local`, `.envrc`, ...)."""
    found: list[Path] = []
    for root in roots:
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        found += [Path(e.path) for e in entries if e.name.startswith(".env") and not e.is_dir()]
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
