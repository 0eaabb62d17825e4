"""Gemini CLI's chats listed by the PostgreSQL store (a real database, `pg_url`), as
the files store lists them: with a `cwd`, the workspace's chats not imported yet,
among the database's sessions by time, a page at a time without repeats or gaps; an
imported chat is listed once, as the database's session."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from runtime.services.gemini_cli_chats import GeminiCliChats, chats_dir
from runtime.services.pg.store import PgRecordStore
from runtime.services.session_store import NewRecord

CWD = Path("/work/project")


def _chat(home: Path, chat_id: str, text: str, mtime: float) -> None:
    folder = chats_dir(home, CWD)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"session-{chat_id}.json"
    message = {"id": "m1", "type": "user", "content": text}
    path.write_text(json.dumps({"sessionId": chat_id, "messages": [message]}), encoding="utf-8")
    os.utime(path, (mtime, mtime))


@pytest.fixture
async def store(pg_url: str, tmp_path: Path) -> AsyncIterator[PgRecordStore]:
    made = PgRecordStore(pg_url, gemini_cli=GeminiCliChats(tmp_path))
    yield made
    await made.close()


async def test_chats_are_listed_among_the_sessions_by_time_a_page_at_a_time(
    store: PgRecordStore, tmp_path: Path
) -> None:
    for session_id in ("s-old", "gemini-cli-ccc", "s-new"):  # one chat imported already
        recording = await store.create(NewRecord(session_id, CWD))
        await recording.aclose()
    now = time.time()
    _chat(tmp_path, "aaa", "an older chat", now - 3600)
    _chat(tmp_path, "bbb", "a newer chat", now + 3600)
    _chat(tmp_path, "ccc", "the imported chat", now + 7200)

    pages, cursor = [], None
    while True:
        page = await store.page(CWD, cursor, 2)
        pages.append([(s.session_id, s.source) for s in page.sessions])
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert pages == [
        [("gemini-cli-bbb", "gemini-cli"), ("s-new", "adk-acp")],
        [("gemini-cli-ccc", "adk-acp"), ("s-old", "adk-acp")],
        [("gemini-cli-aaa", "gemini-cli")],
    ]
    whole = await store.page(CWD, None, 50)
    titles = {s.session_id: s.title for s in whole.sessions}
    assert titles["gemini-cli-aaa"] == "an older chat" and whole.next_cursor is None
    everywhere = await store.page(None, None, 50)  # chats belong to a workspace
    assert [s.session_id for s in everywhere.sessions] == ["s-new", "gemini-cli-ccc", "s-old"]
