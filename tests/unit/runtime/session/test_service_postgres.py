"""SessionService on the PostgreSQL store (a real database, `pg_url`), with the
injected factory of `test_service.py`: open, reopen, fork, list, remove go through the
store seam; a bad store URL is a clear configuration error."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from runtime.errors import ConfigError
from runtime.services.pg.recording import PgChatRecording
from runtime.session import SessionNotFoundError, SessionService
from tests.unit.runtime.session.test_service import _request, _service, box  # noqa: F401


async def written(service: SessionService, session_id: str, messages: int) -> None:
    """Until the database holds `messages` of the session's messages."""
    while True:
        record = await service.records().read(session_id)
        if record is not None and len(record.messages) >= messages:
            return
        await asyncio.sleep(0.02)


@pytest.fixture
def pg_box(box: dict[str, Any], pg_url: str) -> dict[str, Any]:  # noqa: F811
    box["flags"] = replace(box["flags"], store=pg_url)
    return box


async def test_open_reopen_fork_list_and_remove_go_through_the_database(
    pg_box: dict[str, Any],
) -> None:
    service = _service(pg_box)
    try:
        built = await service.open("s1", _request(pg_box))
        recording = built.spec.recording
        assert isinstance(recording, PgChatRecording) and built.spec.records is service.records()
        recording.record_message({"id": "u1", "type": "user", "content": [{"text": "hi"}]})
        recording.set_metadata(title="Hello", mode="autoEdit")

        await written(service, "s1", 1)
        forked = await service.fork("s1", _request(pg_box), None)  # read while s1 is driven
        assert forked.spec.recording.metadata["forkedFrom"] == "s1"
        assert [m["id"] for m in forked.spec.history] == ["u1"]
        assert forked.spec.recording.metadata["title"] == "Hello (fork)"
        await forked.spec.recording.aclose()
        await recording.aclose()

        reopened, record = await service.reopen("s1", _request(pg_box))
        assert [m["id"] for m in record.messages] == ["u1"]
        assert reopened.spec.config.approval_mode == "autoEdit"
        await reopened.spec.recording.aclose()

        page = await service.list(str(pg_box["work"]))
        assert [s.session_id for s in page.sessions] == [forked.id, "s1"]
        assert await service.remove("s1") is True and await service.remove("s1") is False
        with pytest.raises(SessionNotFoundError):
            await service.reopen("s1", _request(pg_box))
    finally:
        await service.aclose()


async def test_a_store_that_is_not_a_database_url_is_refused(box: dict[str, Any]) -> None:  # noqa: F811
    box["flags"] = replace(box["flags"], store="mysql://nope")
    with pytest.raises(ConfigError, match="postgresql://"):
        await _service(box).open("s1", _request(box))


async def test_an_unreachable_database_is_a_clear_error(box: dict[str, Any]) -> None:  # noqa: F811
    box["flags"] = replace(box["flags"], store="postgresql://nobody@127.0.0.1:1/none")
    service: SessionService = _service(box)
    with pytest.raises(ConfigError, match="cannot reach the session database"):
        await service.open("s1", _request(box))
