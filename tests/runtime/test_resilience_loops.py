"""Loop detection (issue #4), in-process: the first strike adds a nudge to the next model
request as a user turn; the second stops the turn with a clear message and end reason
`completed` (ACP: end_turn), never a crash; a new prompt starts with a clean slate."""

from __future__ import annotations

from pathlib import Path

from runtime.services.loop_detection import NUDGE_TEMPLATE
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    RecordedRequest,
    function_call_part,
    function_call_response,
    parts_response,
    text_part,
    text_response,
)
from tests.runtime.resilience_harness import agent_text, end_of, errors, harness

NUDGE_START = NUDGE_TEMPLATE.split("{detail}")[0]
SENTENCE = "I am checking the configuration files once again. "  # 50 characters


def last_user_text(request: RecordedRequest) -> str:
    last = request.contents[-1]
    assert last.get("role") == "user"
    return "".join(p.get("text", "") for p in last["parts"])


def nudged(request: RecordedRequest) -> bool:
    return any(
        NUDGE_START in p.get("text", "")
        for c in request.contents
        if c.get("role") == "user"
        for p in c["parts"]
    )


async def test_a_repeated_tool_call_is_nudged_once_then_stopped(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    same_call = function_call_response("read_file", {"file_path": "a.txt"})
    fake_gemini.add(*[same_call] * 10)
    fake_gemini.default = text_response("unexpected extra call")
    async with harness(tmp_path, fake_gemini) as h:
        (h.workspace / "a.txt").write_text("same content every time\n")
        events = await h.prompt("read a.txt until it changes")

        requests = h.requests
        # calls 1-5: the fifth identical call is the first strike; request 6 carries the nudge
        assert [nudged(r) for r in requests[:5]] == [False] * 5
        nudge = last_user_text(requests[5])
        assert nudge == NUDGE_TEMPLATE.format(
            detail='Repeated tool call: read_file with arguments {"file_path":"a.txt"}'
        )
        # the nudge follows the tool result of the fifth call
        assert "functionResponse" in requests[5].contents[-2]["parts"][0]
        # the second strike (five more identical calls) ends the turn
        assert len(requests) == 10
        end = end_of(events)
        assert end.reason == "completed"
        assert (end.data or {}).get("code") == "LOOP_DETECTED"
        (error,) = errors(events)
        assert not error.fatal and error.meta == {"code": "LOOP_DETECTED"}
        assert "loop" in error.message and "read_file" in error.message

        # a new prompt starts clean: no nudge, no stop
        fake_gemini.add(text_response("fresh start"))
        after = await h.prompt("something else")
        assert end_of(after).reason == "completed"
        assert agent_text(after) == "fresh start"
        assert errors(after) == []
        assert not nudged(h.requests[-1])


async def test_repeated_streamed_content_is_nudged_once_then_stopped(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    assert len(SENTENCE) == 50
    looping_then_tool = parts_response(
        [[text_part(SENTENCE)] for _ in range(12)]
        + [[function_call_part("list_directory", {"dir_path": "."})]]
    )
    # a model that would go on and on (40 chunks, 10 ms apart) is cut short
    looping = parts_response([[text_part(SENTENCE)] for _ in range(40)]).with_delay(0.01)
    fake_gemini.add(looping_then_tool, looping)
    fake_gemini.default = text_response("unexpected extra call")
    async with harness(tmp_path, fake_gemini) as h:
        events = await h.prompt("check the configuration")

        first, second = h.requests
        assert not nudged(first)
        nudge = last_user_text(second)
        assert nudge.startswith(NUDGE_START + "Repeating content detected: ")
        assert SENTENCE.strip()[:20] in nudge
        end = end_of(events)
        assert end.reason == "completed"
        assert (end.data or {}).get("code") == "LOOP_DETECTED"
        (error,) = errors(events)
        assert "loop" in error.message and "Repeating content" in error.message
        assert not error.fatal and error.meta == {"code": "LOOP_DETECTED"}
        # the second response was cut short once the loop was detected again
        assert agent_text(events).count(SENTENCE) < 12 + 40
