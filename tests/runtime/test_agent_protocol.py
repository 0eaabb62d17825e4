"""AdkAgentProtocol in-process: a scripted model behind a real ADK Runner."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from runtime.config import AuthConfig, Limits, RuntimeConfig
from runtime.errors import StreamActiveError
from runtime.host import HeadlessHost
from runtime.models.fake_generator import FakeContentGenerator
from runtime.models.genai_generator import GenaiContentGenerator
from runtime.protocol import AgentEvent, MessageSend, TextPart, UpdateSend
from runtime.session import AgentSession, SessionSpec, create_session
from tests.fakes.gemini_server import FakeGeminiServer, HangPoint, text_response


def _line(*texts: str, finish: str = "STOP") -> dict[str, object]:
    chunks = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": t}]}}]} for t in texts
    ]
    chunks[-1]["candidates"][0]["finishReason"] = finish  # type: ignore[index]
    chunks[-1]["usageMetadata"] = {
        "promptTokenCount": 10,
        "candidatesTokenCount": 2,
        "totalTokenCount": 12,
    }
    return {"method": "generateContentStream", "response": chunks}


def _config(tmp_path: Path) -> RuntimeConfig:
    return RuntimeConfig(
        workspace=tmp_path, model="gemini-2.5-pro", settings={}, limits=Limits(), home=tmp_path
    )


async def _session(tmp_path: Path, generator: object) -> tuple[AgentSession, list[AgentEvent]]:
    session = await create_session(
        SessionSpec(config=_config(tmp_path), auth=None, host=HeadlessHost(), generator=generator)  # type: ignore[arg-type]
    )
    events: list[AgentEvent] = []
    session.protocol.subscribe(events.append)
    return session, events


def _say(text: str) -> MessageSend:
    return MessageSend(content=(TextPart(text=text),))


async def test_a_turn_emits_start_model_deltas_usage_end(tmp_path: Path) -> None:
    session, events = await _session(tmp_path, FakeContentGenerator([_line("Hel", "lo")]))
    result = await session.protocol.send(_say("Say hello\nplease"))
    assert result.stream_id
    await session.protocol.wait()
    kinds = [e.type for e in events]
    assert kinds == [
        "agent_start",
        "message",  # the user's prompt (recorded; not shown again by the editor)
        "session_update",
        "session_update",
        "message",
        "message",
        "usage",
        "agent_end",
    ]
    assert events[1].role == "user"  # type: ignore[union-attr]
    assert events[2].title == "Say hello"  # type: ignore[union-attr]
    assert events[3].model == "gemini-2.5-pro"  # type: ignore[union-attr]
    assert all(e.stream_id == result.stream_id for e in events)
    assert [e.id for e in events] == [f"{result.stream_id}-{i}" for i in range(1, 9)]
    assert events[-1].reason == "completed"  # type: ignore[union-attr]
    await session.close()


async def test_history_carries_over_and_a_second_send_while_busy_is_refused(tmp_path: Path) -> None:
    gen = FakeContentGenerator([_line("one"), _line("two")])
    session, events = await _session(tmp_path, gen)
    await session.protocol.send(_say("first"))
    with pytest.raises(StreamActiveError):
        await session.protocol.send(_say("too soon"))
    await session.protocol.wait()
    await session.protocol.send(_say("second"))
    await session.protocol.wait()
    _, contents = gen.requests[1]
    assert [c.role for c in contents] == ["user", "model", "user"]
    assert contents[1].parts[0].text == "one"  # type: ignore[index]
    await session.close()


async def test_update_send_emits_session_update_without_a_stream(tmp_path: Path) -> None:
    session, events = await _session(tmp_path, FakeContentGenerator([]))
    result = await session.protocol.send(UpdateSend(title="renamed"))
    assert result.stream_id is None
    assert events[-1].type == "session_update" and events[-1].title == "renamed"  # type: ignore[union-attr]
    await session.close()


async def test_model_errors_end_the_stream_as_failed_and_the_session_recovers(
    tmp_path: Path,
) -> None:
    gen = FakeContentGenerator(
        [
            {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "bad request"}},
            _line("fine"),
        ]
    )
    session, events = await _session(tmp_path, gen)
    await session.protocol.send(_say("x"))
    await session.protocol.wait()
    errors = [e for e in events if e.type == "error"]
    assert errors and errors[0].status == "INVALID_ARGUMENT" and errors[0].fatal  # type: ignore[union-attr]
    assert events[-1].reason == "failed"  # type: ignore[union-attr]
    events.clear()
    await session.protocol.send(_say("again"))
    await session.protocol.wait()
    assert events[-1].reason == "completed"  # type: ignore[union-attr]
    await session.close()


@pytest.mark.parametrize("hang_after", [0, 1])
async def test_abort_while_waiting_or_streaming_ends_aborted_and_next_prompt_works(
    tmp_path: Path, fake_gemini: FakeGeminiServer, hang_after: int
) -> None:
    hang = HangPoint()
    fake_gemini.add(
        text_response(["partial ", "rest"]).hang_after(hang_after, hang), text_response("after")
    )
    gen = GenaiContentGenerator(
        AuthConfig(kind="api_key", api_key="k", base_url=fake_gemini.base_url)
    )
    session, events = await _session(tmp_path, gen)
    await session.protocol.send(_say("go"))
    await hang.wait_reached_async()
    started = asyncio.get_running_loop().time()
    await session.protocol.abort()
    assert asyncio.get_running_loop().time() - started < 0.5
    assert events[-1].type == "agent_end" and events[-1].reason == "aborted"  # type: ignore[union-attr]
    events.clear()
    await session.protocol.send(_say("next"))
    await session.protocol.wait()
    texts = [
        p.text  # type: ignore[union-attr]
        for e in events
        if e.type == "message" and e.role == "agent"  # type: ignore[union-attr]
        for p in e.content  # type: ignore[union-attr]
    ]
    assert texts == ["after"]
    assert events[-1].reason == "completed"  # type: ignore[union-attr]
    hang.release()
    await session.close()
    await gen.aclose()


async def test_an_update_changes_the_session_and_is_confirmed(tmp_path: Path) -> None:

    gen = FakeContentGenerator([_line("hello")])
    session, events = await _session(tmp_path, gen)
    try:
        await session.send(
            UpdateSend(model="gemini-2.5-flash", config={"mode": "plan"}, title="Mine")
        )
        assert session.model_choice == "gemini-2.5-flash" and session.mode == "plan"
        (update,) = [e for e in events if e.type == "session_update"]
        assert update.model == "gemini-2.5-flash" and update.title == "Mine"
        assert update.config == {"mode": "plan"}
    finally:
        await session.close()


async def test_the_protocols_event_log_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`events` keeps the newest events only: a session streaming for hours must not
    keep every chunk; subscribers still see each one."""
    from runtime.adk import agent_protocol

    monkeypatch.setattr(agent_protocol, "EVENT_LOG_LIMIT", 12)
    chunks = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": f"w{i} "}]}}]}
        for i in range(30)
    ]
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    script = [{"method": "generateContentStream", "response": chunks}] * 3
    config = RuntimeConfig(
        workspace=tmp_path, model="gemini-2.5-pro", settings={}, limits=Limits(), home=tmp_path
    )
    session = await create_session(
        SessionSpec(
            config=config, auth=None, host=HeadlessHost(), generator=FakeContentGenerator(script)
        )
    )
    seen: list[object] = []
    session.subscribe(seen.append)
    try:
        for i in range(3):
            await session.send(MessageSend(content=(TextPart(text=f"stream {i}"),)))
            await session.protocol.wait()
        assert len(session.events) == 12
        assert len(seen) > 12
        assert list(session.events) == seen[-12:]
    finally:
        await session.close()
