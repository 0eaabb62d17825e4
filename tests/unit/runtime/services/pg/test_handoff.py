"""Handing a lease over between processes (`LeaseHandoff`, `Lease.take`) against a real
PostgreSQL: the waiting process marks the lease wanted, the holder sees it, and either
lets go (the waiter takes it at once) or says why it keeps the session (the waiter
raises that at once, and a later ask starts afresh)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from runtime.services.pg.store import PgRecordStore
from runtime.services.session_store import LeaseHandoff, NewRecord, SessionLeasedError


@pytest.fixture
async def pair(pg_url: str) -> AsyncIterator[tuple[PgRecordStore, PgRecordStore]]:
    holder, asker = PgRecordStore(pg_url, lease_s=30.0), PgRecordStore(pg_url, lease_s=30.0)
    yield holder, asker
    await holder.close()
    await asker.close()


async def _wanted(store: PgRecordStore) -> list[str]:
    while not (found := await store.wanted()):
        await asyncio.sleep(0.02)
    return found


async def test_the_holder_sees_the_ask_and_either_refuses_with_a_reason_or_lets_go(
    pair: tuple[PgRecordStore, PgRecordStore],
) -> None:
    holder, asker = pair
    assert isinstance(holder, LeaseHandoff)
    recording = await holder.create(NewRecord("s1", Path("/work/project")))
    assert await holder.wanted() == []
    asking = asyncio.ensure_future(asker.open("s1"))
    assert await asyncio.wait_for(_wanted(holder), 30) == ["s1"]
    await holder.refuse("s1", "1 client(s) attached there")
    with pytest.raises(SessionLeasedError) as refused:
        await asyncio.wait_for(asking, 30)  # at once, not after the lease period
    assert "1 client(s) attached there" in str(refused.value)
    assert holder.holder in str(refused.value) and "connect to that process" in str(refused.value)

    asking = asyncio.ensure_future(asker.open("s1"))  # a new ask: not refused by the old answer
    assert await asyncio.wait_for(_wanted(holder), 30) == ["s1"]
    await recording.aclose()  # the holder lets go
    opened = await asyncio.wait_for(asking, 30)
    assert opened is not None
    assert await asker.wanted() == []  # taking the lease cleared the ask
    await opened[0].aclose()
