"""Tool output masking (issue #4), in-process: once a history holds more than 50k tokens
of newer tool output plus at least 30k tokens of older output, the older outputs go
to files under the session's temp dir and the model gets `<tool_output_masked>`
snippets instead, in the request and in the live session events (so later requests
stay masked, and nothing is masked twice)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from runtime.services.masking import MASKING_TAG
from runtime.session import APP_NAME, USER_ID
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    RecordedRequest,
    function_call_response,
    text_response,
)
from tests.runtime.resilience_harness import agent_text, end_of, harness

LINES = 1800  # x ~100 characters: ~45k tokens per file
OPEN, CLOSE = f"<{MASKING_TAG}>", f"</{MASKING_TAG}>"
PATH_RE = re.compile(r"Full output available at: (\S+)\n")


def big_file(path: Path, tag: str) -> str:
    filler = "lorem ipsum dolor sit amet " * 3 + "x" * 10
    text = "".join(f"{tag}-{i:05d} {filler}\n" for i in range(LINES))
    path.write_text(text)
    return text


def responses(request: RecordedRequest) -> list[dict[str, Any]]:
    """The function responses in the request, oldest first."""
    return [
        p["functionResponse"]
        for c in request.contents
        for p in c.get("parts", [])
        if "functionResponse" in p
    ]


def masked_text(response: dict[str, Any]) -> str | None:
    output = response["response"].get("output")
    return output if isinstance(output, str) and OPEN in output else None


async def test_old_bulky_tool_outputs_are_masked_to_files_once_and_stay_masked(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        function_call_response("read_file", {"file_path": "a.txt"}),
        function_call_response("read_file", {"file_path": "b.txt"}),
        function_call_response("read_file", {"file_path": "c.txt"}),
        text_response("read all three"),
        text_response("second answer"),
        text_response("third answer"),
    )
    async with harness(tmp_path, fake_gemini) as h:
        texts = {name: big_file(h.workspace / f"{name}.txt", name) for name in "abc"}
        first = await h.prompt("read a.txt, b.txt and c.txt")
        assert end_of(first).reason == "completed" and agent_text(first) == "read all three"

        # requests 1-3 carry everything; the 4th has a (older than 50k tokens of newer
        # output, 45k >= 30k) masked, b and c intact
        for request in h.requests[:3]:
            assert all(masked_text(r) is None for r in responses(request))
        a, b, c = responses(h.requests[3])
        snippet = masked_text(a)
        assert snippet is not None
        assert masked_text(b) is None and masked_text(c) is None
        assert texts["b"].splitlines()[0] in json.dumps(b["response"])
        assert snippet.startswith(OPEN + "\n") and snippet.endswith(CLOSE)
        assert "\n... [TRUNCATED] ...\n" in snippet
        assert snippet.count(OPEN) == 1

        # the full output is in a file under HOME/.gemini/tmp/<project>/tool-outputs/session-<id>/
        match = PATH_RE.search(snippet)
        assert match is not None
        saved = Path(match.group(1))
        outputs = h.session.config.temp_dir / "tool-outputs" / f"session-{h.session.id}"
        assert saved.parent == outputs
        assert saved.is_relative_to(h.home / ".gemini" / "tmp")
        assert re.fullmatch(r"read_file_[a-z0-9_-]+\.txt", saved.name)
        assert texts["a"].splitlines()[0] in saved.read_text()
        assert texts["a"].splitlines()[-1] in saved.read_text()

        # the live session holds the mask too
        live = await h.session.session_service.get_session(
            app_name=APP_NAME, user_id=USER_ID, session_id=h.session.id
        )
        assert live is not None
        stored = [
            p.function_response.response
            for e in live.events
            if e.content
            for p in e.content.parts or []
            if p.function_response is not None and p.function_response.name == "read_file"
        ]
        assert stored[0] == {"output": snippet}
        assert OPEN not in json.dumps(stored[1]) and OPEN not in json.dumps(stored[2])

        # next prompt: a stays masked exactly as before (not masked again), b is now
        # older than 50k tokens of newer output and gets masked, c stays
        second = await h.prompt("anything else?")
        assert agent_text(second) == "second answer"
        a2, b2, c2 = responses(h.requests[4])
        assert masked_text(a2) == snippet
        b_snippet = masked_text(b2)
        assert b_snippet is not None and b_snippet.count(OPEN) == 1
        assert masked_text(c2) is None
        assert sorted(p.name for p in outputs.iterdir()) == sorted(
            [saved.name, Path(PATH_RE.search(b_snippet).group(1)).name]  # type: ignore[union-attr]
        )

        # and again: nothing changes, nothing is rewritten
        before = {p.name: p.stat().st_mtime_ns for p in outputs.iterdir()}
        await h.prompt("one more")
        a3, b3, c3 = responses(h.requests[5])
        assert (masked_text(a3), masked_text(b3), masked_text(c3)) == (snippet, b_snippet, None)
        assert {p.name: p.stat().st_mtime_ns for p in outputs.iterdir()} == before


async def test_small_histories_are_left_alone(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        function_call_response("read_file", {"file_path": "small.txt"}),
        text_response("done"),
        text_response("done again"),
    )
    async with harness(tmp_path, fake_gemini) as h:
        (h.workspace / "small.txt").write_text("tiny\n" * 100)
        await h.prompt("read small.txt")
        await h.prompt("again")
        assert all(masked_text(r) is None for req in h.requests for r in responses(req))
        assert not (h.session.config.temp_dir / "tool-outputs").exists()


def test_write_back_pairs_stripped_ids_in_history_order_even_for_identical_outputs() -> None:
    """ADK strips its own `adk-` call ids from the request: the masks still land on the
    right live responses, in order, even when two outputs are identical."""
    from google.adk.events.event import Event
    from google.genai import types

    from runtime.adk.processors import write_back_masks
    from runtime.services.masking import MaskedResponse, MaskResult

    def response_event(call_id: str | None) -> Event:
        part = types.Part(
            function_response=types.FunctionResponse(
                id=call_id, name="read_file", response={"output": "same text"}
            )
        )
        return Event(author="user", content=types.Content(role="user", parts=[part]))

    live = [response_event("adk-1"), response_event("adk-2")]
    sent = [e.content for e in [response_event(None), response_event(None)]]
    new = {"output": f"{OPEN}\nsame\n{CLOSE}"}
    mask = MaskedResponse(None, "read_file", new, 1, 0, Path("read_file_x.txt"), 100, 10)
    result = MaskResult(list(sent), [mask], 90)  # type: ignore[arg-type]

    assert write_back_masks(live, result, sent) == 1  # type: ignore[arg-type]
    stored = [
        e.content.parts[0].function_response.response  # type: ignore[union-attr,index]
        for e in live
    ]
    assert stored == [{"output": "same text"}, new]
    assert write_back_masks(live, result, sent) == 0  # type: ignore[arg-type]
