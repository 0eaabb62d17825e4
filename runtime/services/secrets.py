"""Credentials kept where they belong: out of child processes, logs and traces.

Two jobs, one vocabulary of what a secret looks like:

- `child_environment()` is the environment every process we start gets (local
  shell commands, hooks, stdio MCP servers): the agent's own environment minus
  every variable that holds a credential, judged by its name (`*_API_KEY`,
  `*_TOKEN`, `*_SECRET*`, `*PASSWORD*`, `*CREDENTIALS*`, AWS keys, ...) or by
  its value (a known key shape). Names in `security.environmentVariableAllowlist`
  (settings) are passed on anyway.
- `redact_text()` replaces known secret shapes (Google, OpenAI, Anthropic,
  GitHub, AWS keys, bearer tokens, PEM private keys) in any text; the protocol
  trace and the log handlers use it (`RedactingFilter`).

Standard library only: the protocol trace uses it on the start-up path.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "***"

ALLOWLIST_SETTING = ("security", "environmentVariableAllowlist")
"""Where settings.json names the credential variables a user wants passed on."""

_SECRET_NAME = re.compile(
    r"(^|_)(API_?KEYS?|ACCESS_?KEY|PRIVATE_?KEY|SECRETS?|SECRET_?KEY|TOKENS?|PASSWORD|PASSWD|"
    r"PASSPHRASE|CREDENTIALS?|AUTH_?TOKEN|SESSION_?TOKEN|CLIENT_?SECRET)(_|$)",
    re.IGNORECASE,
)
_SECRET_NAMES = frozenset({"GOOGLE_APPLICATION_CREDENTIALS", "AWS_SECRET_ACCESS_KEY", "NETRC"})

_SECRET_SHAPES = re.compile(
    "|".join(
        (
            r"AIza[0-9A-Za-z_\-]{20,}",  # Google API keys
            r"ya29\.[0-9A-Za-z_\-]{20,}",  # Google OAuth access tokens
            r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}",  # OpenAI and Anthropic keys
            r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}",  # GitHub tokens
            r"github_pat_[A-Za-z0-9_]{30,}",
            r"(?:AKIA|ASIA)[0-9A-Z]{16}",  # AWS access key ids
            r"(?i:aws_secret_access_key)[\"']?\s*[=:]\s*[\"']?[A-Za-z0-9/+=]{30,}",
            r"(?i:bearer)\s+[A-Za-z0-9._~+/\-]{12,}=*",  # Authorization: Bearer ...
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)",
        )
    )
)


_named_credentials: set[str] = set()
"""Variables the settings name as holding a key (`modelProviders.*.apiKeyEnv`), whatever
their name looks like; only ever added to (more is kept out of children, never less)."""


def remember_credential_name(name: str) -> None:
    """`name` holds a credential (a model provider's key): kept out of child processes."""
    _named_credentials.add(name.upper())


def is_credential_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential."""
    upper = name.upper()
    return (
        upper in _SECRET_NAMES
        or upper in _named_credentials
        or _SECRET_NAME.search(name) is not None
    )


def looks_secret(value: str) -> bool:
    """Whether `value` contains a known secret shape."""
    return _SECRET_SHAPES.search(value) is not None


def redact_text(text: str) -> str:
    """`text` with every known secret shape replaced by '***'."""
    return _SECRET_SHAPES.sub(REDACTED, text)


def allowlist_from(settings: Mapping[str, Any]) -> tuple[str, ...]:
    """The variable names `security.environmentVariableAllowlist` lets through."""
    section = settings.get(ALLOWLIST_SETTING[0])
    names = section.get(ALLOWLIST_SETTING[1]) if isinstance(section, Mapping) else None
    if not isinstance(names, list):
        return ()
    return tuple(name for name in names if isinstance(name, str))


def child_environment(
    allow: Iterable[str] = (), base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for a process we start: `base` (the agent's) without credentials."""
    allowed = set(allow)
    source = os.environ if base is None else base
    return {
        name: value
        for name, value in source.items()
        if name in allowed or not (is_credential_name(name) or looks_secret(value))
    }


class RedactingFilter(logging.Filter):
    """A logging filter that redacts secret shapes from every record it passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact_text(message)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
