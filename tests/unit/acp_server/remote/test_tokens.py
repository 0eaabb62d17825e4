"""Tokens of `adk-acp serve`: parsing, checking, roots, and a token file read again
when it changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_server.remote.tokens import TokenBook, TokenError, parse_token_file

TOKEN = "t" * 20
OTHER = "o" * 20


def test_a_header_is_checked_as_a_bearer_token() -> None:
    book = TokenBook([TOKEN])
    assert book.check(f"Bearer {TOKEN}") is not None
    assert book.check(f"bearer  {TOKEN} ") is not None
    for bad in (
        None,
        "",
        TOKEN,
        f"Basic {TOKEN}",
        f"Bearer {TOKEN}x",
        "Bearer ",
        f"Bearer {OTHER}",
    ):
        assert book.check(bad) is None


def test_short_tokens_are_refused() -> None:
    with pytest.raises(TokenError, match="at least"):
        TokenBook(["short"])


def test_a_token_file_limits_tokens_to_roots(tmp_path: Path) -> None:
    grants = parse_token_file(f"# comment\n\n{TOKEN}\n{OTHER} {tmp_path}/a {tmp_path}/b  # two\n")
    (_, free), (_, limited) = grants
    assert free.allows("/anywhere")
    assert limited.allows(str(tmp_path / "a" / "x")) and limited.allows(str(tmp_path / "b"))
    assert not limited.allows(str(tmp_path / "ab")) and not limited.allows(str(tmp_path))
    assert free.key != limited.key and TOKEN not in free.key


def test_the_token_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"{TOKEN}\n")
    book = TokenBook([], path)
    assert book.check(f"Bearer {TOKEN}") is not None
    path.write_text(f"{OTHER}\n")
    os.utime(path, ns=(1, 10**18))  # a new stamp, however fast the rewrite
    assert book.check(f"Bearer {TOKEN}") is None
    assert book.check(f"Bearer {OTHER}") is not None
    path.write_text("bad\n")  # a broken file keeps the tokens read before
    os.utime(path, ns=(1, 2 * 10**18))
    assert book.check(f"Bearer {OTHER}") is not None


def test_a_missing_token_file_stops_the_start(tmp_path: Path) -> None:
    with pytest.raises(TokenError, match="cannot read"):
        TokenBook([], tmp_path / "missing")


def test_tokens_from_the_environment() -> None:
    book = TokenBook.from_sources(None, None, {"ADK_ACP_TOKEN": TOKEN})
    assert not book.empty and book.check(f"Bearer {TOKEN}") is not None
    assert TokenBook.from_sources(None, None, {}).empty
