"""The PostgreSQL session store against a real PostgreSQL (a throwaway cluster,
`tests/pg_cluster.py`; a fresh database per test): records appended and read back as
the JSONL store reads them, listing newest first with a cursor, delete, migrations,
and leases (renewed, refused, taken over after expiry, raced for by two processes)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from runtime.services.pg.lease import Lease
from runtime.services.pg.migrations import migrate, shipped
from runtime.services.pg.recording import PgChatRecording
from runtime.services.pg.store import PgRecordStore
from runtime.services.session_store import InvalidCursorError, NewRecord, SessionLeasedError

CWD = Path("/work/project")


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[PgRecordStore]:
    made = PgRecordStore(pg_url, lease_s=1.0)
    yield made
    await made.close()


@pytest.fixture
async def other(pg_url: str) -> AsyncIterator[PgRecordStore]:
    """Another process's store on the same database."""
    made = PgRecordStore(pg_url, lease_s=1.0)
    yield made
    await made.close()


async def _recorded(store: PgRecordStore, session_id: str, *texts: str, cwd: Path = CWD) -> None:
    recording = await store.create(NewRecord(session_id, cwd))
    for n, text in enumerate(texts):
        recording.record_message({"id": f"{session_id}-{n}", "type": "user", "content": text})
    await recording.aclose()


async def test_lines_are_appended_in_order_and_read_back_like_the_files(
    store: PgRecordStore,
) -> None:
    recording = await store.create(NewRecord("s1", CWD, (Path("/extra"),)))
    recording.record_message({"id": "u1", "type": "user", "content": [{"text": "hi"}]})
    answer = {"id": "g1", "type": "gemini", "content": "hel"}
    recording.record_message(answer)  # type: ignore[arg-type]
    answer["content"] = "hello"  # the recorder updates a message: the last write wins
    recording.record_message(answer)  # type: ignore[arg-type]
    recording.set_metadata(title="Greeting", mode="plan")
    recording.record_message({"id": "u2", "type": "user", "content": "again"})
    recording.rewind_to("u2")
    await recording.aclose()

    record = await store.read("s1")
    assert record is not None
    assert [(m["id"], m["content"]) for m in record.messages] == [
        ("u1", [{"text": "hi"}]),
        ("g1", "hello"),
    ]
    assert record.title == "Greeting" and record.metadata["mode"] == "plan"
    assert record.cwd == str(CWD) and record.metadata["additionalDirectories"] == ["/extra"]
    page = await store.page(CWD, None, 10)
    [listed] = page.sessions
    assert (listed.session_id, listed.title, listed.additional_directories) == (
        "s1",
        "Greeting",
        ("/extra",),
    )
    assert await store.read("unknown") is None and await store.open("unknown") is None


async def test_listing_is_newest_first_a_page_at_a_time(store: PgRecordStore) -> None:
    for n in range(5):
        await _recorded(store, f"s{n}", "hello")
    await _recorded(store, "elsewhere", "hello", cwd=Path("/other"))
    child = await store.create(NewRecord("s0-child", CWD, kind="subagent"))
    await child.aclose()
    opened = await store.open("s1")  # reopened and written last: listed first
    assert opened is not None
    opened[0].record_message({"id": "late", "type": "user", "content": "later"})
    await opened[0].aclose()

    seen: list[str] = []
    cursor = None
    for _ in range(5):
        page = await store.page(CWD, cursor, 2)
        seen += [s.session_id for s in page.sessions]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen[0] == "s1" and sorted(seen) == ["s0", "s1", "s2", "s3", "s4"]
    assert seen[1:] == ["s4", "s3", "s2", "s0"]
    everything = await store.page(None, None, 50)
    assert {s.session_id for s in everything.sessions} == {*seen, "elsewhere"}
    with pytest.raises(InvalidCursorError):
        await store.page(CWD, "bm90LW91cnM=", 2)


async def test_delete_removes_the_session_and_its_lines(store: PgRecordStore, pg_url: str) -> None:
    await _recorded(store, "gone", "a", "b")
    assert await store.delete("gone") is True
    assert await store.read("gone") is None and await store.delete("gone") is False
    conn = await asyncpg.connect(pg_url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM adk_records") == 0
    finally:
        await conn.close()


async def test_migrations_are_versioned_and_idempotent(pg_url: str) -> None:
    conn = await asyncpg.connect(pg_url)
    try:
        newest = shipped()[-1].version
        assert await migrate(conn) == [m.version for m in shipped()]
        assert await migrate(conn) == []
        rows = await conn.fetch("SELECT version, name FROM adk_acp_migrations ORDER BY version")
        assert [r["version"] for r in rows] == [m.version for m in shipped()]
        assert rows[0]["name"] == "sessions"
        # a store connecting to an up-to-date database migrates nothing and works
        fresh = PgRecordStore(pg_url)
        await _recorded(fresh, "x", "hi")
        await fresh.close()
        await conn.execute("INSERT INTO adk_acp_migrations VALUES ($1, 'future')", newest + 1)
        with pytest.raises(Exception, match="newer than this adk-acp knows"):
            await migrate(conn)
    finally:
        await conn.close()


async def test_the_lease_is_renewed_refused_to_others_and_let_go_on_close(
    pg_url: str, other: PgRecordStore
) -> None:
    holder = PgRecordStore(pg_url, lease_s=5.0)  # long: a busy machine does not lose it
    recording = await holder.create(NewRecord("s1", CWD))
    other.wait_s = 0.0
    try:
        pool = await holder.pool()
        query = "SELECT expires_at FROM adk_leases WHERE session_id = 's1'"
        first = await pool.fetchval(query)
        while await pool.fetchval(query) == first:
            await asyncio.sleep(0.05)  # renewed while held
        with pytest.raises(SessionLeasedError) as refused:
            await other.open("s1")
        assert holder.holder in str(refused.value) and "driven by another" in str(refused.value)
        with pytest.raises(SessionLeasedError):
            await other.delete("s1")
        await recording.aclose()  # lets go: the other takes it at once
        opened = await other.open("s1")
        assert opened is not None
        await opened[0].aclose()
    finally:
        await holder.close()


async def test_a_dead_holders_lease_is_taken_over_after_it_expires_and_its_writes_are_fenced(
    store: PgRecordStore, other: PgRecordStore
) -> None:
    recording = await store.create(NewRecord("s1", CWD))
    assert isinstance(recording, PgChatRecording)
    recording.record_message({"id": "u1", "type": "user", "content": "before"})
    keeper = recording.lease._keeper
    assert keeper is not None
    keeper.cancel()  # the holder stops renewing, as a killed process does
    opened = await other.open("s1")  # waits for the expiry, then takes over
    assert opened is not None
    taken, record = opened
    assert [m["id"] for m in record.messages] == ["u1"]
    assert await taken.still_driving() and not await recording.still_driving()
    taken.record_message({"id": "u2", "type": "user", "content": "new holder"})
    await taken.aclose()
    recording.record_message({"id": "u3", "type": "user", "content": "old holder, too late"})
    await recording.aclose()
    final = await other.read("s1")
    assert final is not None and [m["id"] for m in final.messages] == ["u1", "u2"]


RACER = textwrap.dedent(
    """
    import asyncio, sys
    import asyncpg
    from runtime.services.pg.lease import Lease, new_holder
    from runtime.services.session_store import SessionLeasedError

    async def main():
        pool = await asyncpg.create_pool(sys.argv[1], min_size=1, max_size=1)
        sys.stdin.readline()  # both start together
        try:
            await Lease.take(pool, "raced", new_holder(), 30.0, 0.0)
            print("won", flush=True)
        except SessionLeasedError:
            print("lost", flush=True)
        await pool.close()

    asyncio.run(main())
    """
)


async def test_two_processes_racing_for_a_lease_one_wins(store: PgRecordStore, pg_url: str) -> None:
    await _recorded(store, "raced", "hi")
    for _ in range(3):
        pool = await store.pool()
        await pool.execute("DELETE FROM adk_leases WHERE session_id = 'raced'")
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", RACER, pg_url],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=Path(__file__).resolve().parents[5],
            )
            for _ in range(2)
        ]
        for racer in racers:
            assert racer.stdin is not None
            racer.stdin.write("go\n")
            racer.stdin.flush()
        results = [await asyncio.to_thread(r.communicate, timeout=30) for r in racers]
        assert sorted(out.strip() for out, _ in results) == ["lost", "won"]
        assert all(r.returncode == 0 for r in racers)


async def test_a_lease_taken_twice_by_its_holder_is_renewed_not_refused(
    store: PgRecordStore,
) -> None:
    await _recorded(store, "s1", "hi")
    pool = await store.pool()
    first = await Lease.take(pool, "s1", store.holder, 1.0, 0.0)
    again = await Lease.take(pool, "s1", store.holder, 1.0, 0.0)
    assert first.holder == again.holder
    await again.release()
