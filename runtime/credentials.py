"""The Gemini API key a user saved with `adk-acp --login` (the registry's terminal auth).

Stored outside every workspace, in `$XDG_CONFIG_HOME/adk-acp/credentials.json`
(default `~/.config/adk-acp/`), the directory 0700 and the file 0600, written
atomically. Read when the environment has no key; never logged.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from runtime.services.atomic_write import write_atomically

logger = logging.getLogger(__name__)

KEY_FIELD = "geminiApiKey"


def credentials_path(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or os.path.join(
        env.get("HOME") or str(Path.home()), ".config"
    )
    return Path(base) / "adk-acp" / "credentials.json"


def saved_api_key(env: Mapping[str, str]) -> str | None:
    """The saved key, or None (no file, or a file that is unreadable or not ours)."""
    path = credentials_path(env)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        logger.warning("cannot read saved credentials %s: %s", path, type(exc).__name__)
        return None
    key = data.get(KEY_FIELD) if isinstance(data, dict) else None
    return key if isinstance(key, str) and key.strip() else None


def save_api_key(env: Mapping[str, str], key: str) -> Path:
    """Save `key` with owner-only permissions; returns where."""
    path = credentials_path(env)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)
    write_atomically(path, json.dumps({KEY_FIELD: key.strip()}).encode("utf-8"), mode=0o600)
    return path
