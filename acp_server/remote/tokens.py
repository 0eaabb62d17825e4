"""Bearer tokens for `adk-acp serve`: who may connect, and to which workspaces.

Tokens come from `--token`, the `ADK_ACP_TOKEN` environment variable or a token file
(one token a line, optionally followed by the workspace roots it is limited to;
`#` starts a comment). The file is read again when it changes, so a token taken out
of it is refused from the next connection on, and the endpoint closes the connections
it opened (`TokenBook.refresh`, `TokenBook.grants`). Tokens are compared in constant time
(`hmac.compare_digest`) and never logged: a grant is known by a short hash only.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

TOKEN_ENV = "ADK_ACP_TOKEN"
MIN_TOKEN_CHARS = 16


class TokenError(ValueError):
    """A token source that cannot be used (missing file, too short a token)."""


@dataclass(frozen=True)
class Grant:
    """What one token allows: its workspace roots (empty: any folder)."""

    key: str
    """A short hash of the token: binds HTTP connections to it; safe to log."""
    roots: tuple[Path, ...] = ()

    def allows(self, path: str) -> bool:
        """Whether a session folder lies inside this grant's roots."""
        if not self.roots:
            return True
        resolved = Path(path).expanduser().resolve()
        return any(resolved == root or resolved.is_relative_to(root) for root in self.roots)


OPEN_GRANT = Grant(key="loopback")
"""`--insecure-loopback` without a token: one unrestricted client identity."""


def _key(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:12]


def _grant(token: str, roots: list[str]) -> tuple[str, Grant]:
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenError(f"a token must have at least {MIN_TOKEN_CHARS} characters")
    resolved = tuple(Path(r).expanduser().resolve() for r in roots)
    return token, Grant(key=_key(token), roots=resolved)


def parse_token_file(text: str) -> list[tuple[str, Grant]]:
    """Lines `TOKEN [ROOT ...]`; blank lines and `#` comments are skipped."""
    grants = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            grants.append(_grant(words[0], words[1:]))
    return grants


class TokenBook:
    """The accepted tokens: fixed ones and those of a token file (re-read on change)."""

    def __init__(self, tokens: list[str], token_file: Path | None = None) -> None:
        self._fixed = [_grant(t, []) for t in tokens if t]
        self._file = token_file
        self._file_stamp: tuple[int, int, int, int] | None = None
        self._from_file: list[tuple[str, Grant]] = []
        if token_file is not None:
            self._reload(force=True)

    @classmethod
    def from_sources(
        cls, token: str | None, token_file: Path | None, env: dict[str, str]
    ) -> TokenBook:
        tokens = [t for t in (token, env.get(TOKEN_ENV)) if t]
        return cls(tokens, token_file)

    @property
    def empty(self) -> bool:
        return not self._fixed and not self._from_file

    def _reload(self, *, force: bool = False) -> None:
        assert self._file is not None
        try:
            st = os.stat(self._file)
        except OSError as exc:
            if force:
                raise TokenError(f"cannot read the token file {self._file}: {exc}") from exc
            logger.warning("the token file %s is gone; keeping the tokens read before", self._file)
            return
        stamp = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        if stamp == self._file_stamp:
            return
        try:
            grants = parse_token_file(self._file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, TokenError) as exc:
            if force:
                raise TokenError(f"the token file {self._file}: {exc}") from exc
            logger.warning(
                "the token file %s did not read (%s); keeping the old tokens", self._file, exc
            )
            return
        self._file_stamp = stamp
        self._from_file = grants
        logger.info("token file read: %d token(s)", len(grants))

    def refresh(self) -> bool:
        """Read the token file again if it changed; whether the tokens changed."""
        if self._file is None:
            return False
        before = self._from_file
        self._reload()
        return self._from_file is not before

    def grants(self) -> frozenset[Grant]:
        """Every grant in force (a token whose roots changed is another grant)."""
        return frozenset(grant for _, grant in [*self._fixed, *self._from_file])

    def check(self, authorization: str | None) -> Grant | None:
        """The grant of an `Authorization: Bearer …` header value, or None."""
        if self._file is not None:
            self._reload()
        if not authorization:
            return None
        scheme, _, presented = authorization.partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            return None
        given = presented.strip().encode("utf-8")
        found: Grant | None = None
        for token, grant in [*self._fixed, *self._from_file]:
            if hmac.compare_digest(token.encode("utf-8"), given) and found is None:
                found = grant
        return found
