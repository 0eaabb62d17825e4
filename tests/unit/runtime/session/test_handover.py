"""Handover (runtime/session/handover.py) on a real PostgreSQL (`pg_url`): a session's
lease let go keeps the engine; the next use takes the lease back with what the other
process recorded meanwhile (the model sees it), keeps the mode the editor shows, and
records nothing while handed over; a busy session is not let go; a holder that keeps
the session or a deleted record is a clear error."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from runtime.config import Limits, RuntimeConfig
from runtime.host import HeadlessHost
from runtime.models.fake_generator import FakeContentGenerator
from runtime.protocol import MessageSend, TextPart
from runtime.services.pg.store import PgRecordStore
from runtime.services.session_store import NewRecord, SessionLeasedError
from runtime.session import AgentSession, SessionSpec, create_session
from runtime.session.handover import SessionGoneError
from tests.unit.runtime.services.pg.test_handoff import pair

__all__ = ["pair"]  # the fixture: two processes' stores on one database


def _reply(text: str) -> dict[str, Any]:
    candidate = {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
    return {"method": "generateContentStream", "response": [{"candidates": [candidate]}]}


def _said(generator: FakeContentGenerator) -> list[tuple[str | None, str]]:
    _model, contents = generator.requests[-1]
    return [(c.role, p.text or "") for c in contents for p in c.parts or () if p.text]


async def _session(
    store: PgRecordStore, tmp_path: Path, generator: FakeContentGenerator
) -> AgentSession:
    config = RuntimeConfig(
        workspace=tmp_path, model="gemini-2.5-pro", settings={}, limits=Limits(), home=tmp_path
    )
    spec = SessionSpec(
        config=config,
        auth=None,
        host=HeadlessHost(),
        session_id="s1",
        generator=generator,
        recording=await store.create(NewRecord("s1", tmp_path)),
        records=store,
    )
    return await create_session(spec)


async def _turn(session: AgentSession, text: str) -> None:
    await session.send(MessageSend(content=(TextPart(text=text),)))
    await session.protocol.wait()


async def test_let_go_then_taken_back_with_what_the_other_process_recorded(
    pair: tuple[PgRecordStore, PgRecordStore], tmp_path: Path
) -> None:
    ours, theirs = pair  # this process's store, and another process's
    generator = FakeContentGenerator(
        [_reply("first answer"), _reply("second answer"), _reply("third answer")]
    )
    session = await _session(ours, tmp_path, generator)
    try:
        await _turn(session, "one")
        await session.send(MessageSend(content=(TextPart(text="two"),)))
        assert await session.handover.let_go() is False  # a turn runs: kept
        await session.protocol.wait()

        assert await session.handover.let_go() is True
        opened = await theirs.open("s1")  # at once: the lease is free
        assert opened is not None
        recording, record = opened
        assert any(m.get("displayContent") == "one" for m in record.messages)  # all written
        recording.record_message(
            {
                "id": "u9",
                "type": "user",
                "content": [{"text": "elsewhere"}],
                "displayContent": "elsewhere",
            }
        )
        recording.record_message(
            {
                "id": "g9",
                "type": "gemini",
                "content": "answered elsewhere",
                "parts": [{"text": "answered elsewhere"}],
            }
        )
        recording.set_metadata(mode="plan")
        session.set_mode("autoEdit")  # while handed over: shown, not written
        await recording.aclose()

        await _turn(session, "three")
        said = _said(generator)
        assert said[-3:] == [
            ("user", "elsewhere"),
            ("model", "answered elsewhere"),
            ("user", "three"),
        ]
        assert ("user", "one") in said and ("model", "first answer") in said
        assert session.handover.handed_over is False and session.mode == "autoEdit"
        assert session.recorder is not None
        await session.recorder.recording.aclose()  # its lines written
        final = await theirs.read("s1")
        assert final is not None and final.metadata["mode"] == "autoEdit"
        typed = [m.get("displayContent") for m in final.messages if m["type"] == "user"]
        assert typed[-2:] == ["elsewhere", "three"]
    finally:
        await session.close()


async def test_a_holder_that_keeps_it_or_a_deleted_record_is_a_clear_error(
    pair: tuple[PgRecordStore, PgRecordStore], tmp_path: Path
) -> None:
    ours, theirs = pair  # this process's store, and another process's
    session = await _session(ours, tmp_path, FakeContentGenerator([]))
    try:
        assert await session.handover.let_go() is True
        opened = await theirs.open("s1")
        assert opened is not None
        taking = asyncio.ensure_future(session.handover.drive())
        while not await theirs.wanted():
            await asyncio.sleep(0.02)
        await theirs.refuse("s1", "a turn runs there", "let it end there and try again")
        with pytest.raises(SessionLeasedError) as refused:
            await asyncio.wait_for(taking, 30)
        assert str(refused.value).endswith("a turn runs there; let it end there and try again")
        assert session.handover.handed_over is True

        await opened[0].aclose()
        assert await theirs.delete("s1") is True
        with pytest.raises(SessionGoneError):
            await session.handover.drive()
    finally:
        await session.close()


async def test_work_in_use_is_not_let_go_even_when_it_starts_after_the_face_looked(
    pair: tuple[PgRecordStore, PgRecordStore], tmp_path: Path
) -> None:
    ours, _theirs = pair
    session = await _session(ours, tmp_path, FakeContentGenerator([]))
    handover = session.handover
    try:
        async with handover.in_use():  # a slash command runs (`/compress` calls the model)
            assert handover.busy
            assert await handover.let_go() is False
        assert not handover.busy

        # the face found it idle, but its let-go waits for the lock while a command starts
        await handover._lock.acquire()
        letting_go = asyncio.ensure_future(handover.let_go())
        await asyncio.sleep(0)
        async with handover.in_use():
            handover._lock.release()
            assert await asyncio.wait_for(letting_go, 10) is False
        assert handover.handed_over is False
        assert await handover.let_go() is True  # idle again: handed over
    finally:
        await session.close()
