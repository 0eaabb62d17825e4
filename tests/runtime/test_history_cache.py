"""The incremental history (runtime/adk/history_cache.py): the request's contents are
exactly what ADK builds from the whole session, turn after turn, with tool calls in
them, across a rewind (the events replaced), and each finished turn is built once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.adk.flows.llm_flows.context import _contents

from runtime.adk.history_cache import HISTORY_CACHE
from runtime.config import Limits, RuntimeConfig
from runtime.host import HeadlessHost
from runtime.models.fake_generator import FakeContentGenerator
from runtime.protocol import MessageSend, TextPart
from runtime.services.recording import SessionStore
from runtime.session import APP_NAME, USER_ID, SessionSpec, create_session


def _reply(*parts: dict[str, Any]) -> dict[str, Any]:
    candidate = {"content": {"role": "model", "parts": list(parts)}, "finishReason": "STOP"}
    return {"method": "generateContentStream", "response": [{"candidates": [candidate]}]}


def _read(path: str) -> dict[str, Any]:
    return _reply({"functionCall": {"name": "read_file", "args": {"file_path": path}}})


def _dump(contents: list[Any]) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json", exclude_none=True) for c in contents]


async def test_the_cached_history_is_what_adk_builds(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    script = [
        _reply({"text": "hello"}),
        _read("a.txt"),
        _reply({"text": "it says alpha"}),
        _read("a.txt"),
        _read("missing.txt"),
        _reply({"text": "done"}),
        _reply({"text": "after the rewind"}),
    ]
    config = RuntimeConfig(
        workspace=tmp_path, model="gemini-2.5-pro", settings={}, limits=Limits(), home=tmp_path
    )
    session = await create_session(
        SessionSpec(
            config=config,
            auth=None,
            host=HeadlessHost(),
            generator=FakeContentGenerator(script),
            recording=SessionStore(tmp_path / "rec").create("s", tmp_path),
        )
    )
    live = await session.session_service.get_session(
        app_name=APP_NAME, user_id=USER_ID, session_id=session.id
    )
    cache = session.protocol._history
    assert cache is not None

    def adk_view() -> list[dict[str, Any]]:
        token = HISTORY_CACHE.set(None)
        try:
            return _dump(_contents._get_contents(None, live.events, session.agent.name))
        finally:
            HISTORY_CACHE.reset(token)

    def cached_view() -> list[dict[str, Any]]:
        token = HISTORY_CACHE.set(cache)
        try:
            return _dump(_contents._get_contents(None, live.events, session.agent.name))
        finally:
            HISTORY_CACHE.reset(token)

    for text in ("hi", "read a.txt", "read both"):
        await session.send(MessageSend(content=(TextPart(text=text),)))
        await session.protocol.wait()
        assert cached_view() == adk_view()
    rebuilt = cache.rebuilt
    cached_view()
    assert cache.rebuilt == rebuilt  # nothing dropped between calls
    await session.rewind(1)  # the events are replaced: the kept history is dropped
    await session.send(MessageSend(content=(TextPart(text="again"),)))
    await session.protocol.wait()
    assert cached_view() == adk_view()
    assert cache.rebuilt > rebuilt
    await session.close()
