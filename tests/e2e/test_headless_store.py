"""Headless runs with `--store postgresql://…` (a throwaway cluster, `pg_url`): the real
`adk-acp -p` records its session in the database, not in files: the store lists it
and reads its record (as an editor's agent on that database loads it); a database it
cannot reach is a configuration error (exit 52) that says so."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from runtime.services.pg.store import PgRecordStore
from runtime.services.recording import ConversationRecord
from tests.e2e.headless_harness import run_cli
from tests.e2e.spine import dirs
from tests.fakes.gemini_server import FakeGeminiServer, text_response

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


async def _read(url: str, session_id: str) -> tuple[ConversationRecord | None, list[str]]:
    store = PgRecordStore(url)
    try:
        page = await store.page(None, None, 10)
        return await store.read(session_id), [s.session_id for s in page.sessions]
    finally:
        await store.close()


def test_a_headless_run_records_into_the_database_and_an_unreachable_one_is_exit_52(
    tmp_path: Path, fake_gemini_thread: FakeGeminiServer, pg_url: str
) -> None:
    d = dirs(tmp_path)
    fake_gemini_thread.add(text_response("Recorded in the database."))
    done = run_cli(
        d, ["-p", "where am I kept?", "--store", pg_url, "-o", "json"], fake_gemini_thread
    )
    assert done.code == 0, done.stderr
    session_id = done.json()["session_id"]
    record, listed = asyncio.run(_read(pg_url, session_id))
    assert listed == [session_id]
    assert record is not None and record.cwd == str(d.workspace)
    assert record.metadata.get("title") == "where am I kept?"
    said = [(m["type"], m.get("displayContent") or m.get("content")) for m in record.messages]
    assert said == [("user", "where am I kept?"), ("gemini", "Recorded in the database.")]
    assert not list(tmp_path.rglob("*.jsonl"))  # no session file beside it
    assert "Traceback" not in done.stderr

    unreachable = "postgresql://nobody@127.0.0.1:1/none"
    failed = run_cli(d, ["-p", "hi", "--store", unreachable], fake_gemini_thread)
    assert failed.code == 52, failed.stderr
    assert "cannot reach the session database" in failed.stderr
    assert "Traceback" not in failed.stderr
    assert len(fake_gemini_thread.generate_requests) == 1  # the failed run asked no model
