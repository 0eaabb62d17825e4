"""Spine e2e (issue #2): prompt turns through the real `adk-acp` process —
streaming updates, @-mentioned files, embedded resources, images, big lines and
two sessions prompting at once."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.e2e.acp_client import AcpError
from tests.e2e.spine import (
    MakeAgent,
    assert_chunks_follow,
    dirs,
    request_texts,
    start_agent,
    start_session,
)
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    HangPoint,
    RecordedRequest,
    Reply,
    text_response,
    usage,
)

pytestmark = pytest.mark.e2e

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5Er"
    "kJggg=="
)


async def test_text_prompt_streams_chunks_thoughts_usage_and_title(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    chunks = ["The answer", " is ", "forty-two", "."]
    fake_gemini.add(
        text_response(
            chunks, thoughts=["Let me think", " about it"], usage=usage(120, 30)
        ).with_delay(0.05),
        text_response("second answer"),
    )
    client, sid = await start_session(make_agent, dirs(tmp_path), fake_gemini)
    result = await client.prompt(sid, "What is the answer to everything?\nBe brief.")
    assert result == {"stopReason": "end_turn"}

    messages = [m["content"]["text"] for m in client.updates(sid, "agent_message_chunk")]
    assert_chunks_follow(messages, chunks)
    assert len(messages) >= 2  # streamed as it came, not one final block
    assert client.text_of(sid, "agent_thought_chunk") == "Let me think about it"
    (usage_update,) = client.updates(sid, "usage_update")
    assert usage_update["used"] == 150 and usage_update["size"] >= 150
    (info,) = client.updates(sid, "session_info_update")
    assert info["title"] == "What is the answer to everything?"
    # thoughts come before the answer, and every update of the turn before its result
    kinds = [u["sessionUpdate"] for u in client.updates(sid)]
    assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk")
    last = client.transcript[-1][1]
    turn_usage = {"totalTokens": 150, "inputTokens": 120, "outputTokens": 30}
    assert client.turn_usages == [turn_usage]  # the answer's `usage` (ACP unstable)
    assert last.get("result") == {**result, "usage": turn_usage}

    (request,) = fake_gemini.generate_requests
    assert request.stream and request.last_user_text.startswith("What is the answer")

    # the second prompt of the session: the history goes along, no new title
    assert (await client.prompt(sid, "and again?"))["stopReason"] == "end_turn"
    assert client.text_of(sid).endswith("second answer")
    assert len(client.updates(sid, "session_info_update")) == 1
    second = fake_gemini.generate_requests[1]
    roles = [c.get("role") for c in second.contents]
    assert roles == ["user", "model", "user"]
    assert "forty-two" in "".join(p.get("text", "") for p in second.contents[1]["parts"])


async def test_resource_link_is_read_through_the_editor(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    source = d.workspace / "src" / "app.py"
    source.parent.mkdir()
    source.write_text("ON_DISK = 1\n")
    fake_gemini.add(text_response("seen"))
    client, sid = await start_session(
        make_agent,
        d,
        fake_gemini,
        caps={"fs": {"readTextFile": True, "writeTextFile": True}},
        unsaved_buffers={str(source): "UNSAVED_BUFFER = 2\n"},
    )
    blocks = [
        {"type": "text", "text": "Explain"},
        {"type": "resource_link", "uri": source.as_uri(), "name": "app.py"},
    ]
    assert (await client.prompt(sid, blocks))["stopReason"] == "end_turn"
    assert client.files.reads == [str(source)]
    (text,) = request_texts(fake_gemini)
    assert "UNSAVED_BUFFER = 2" in text and "ON_DISK" not in text
    assert "Explain" in text


async def test_resource_link_from_disk_and_outside_the_workspace(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    inside = d.workspace / "notes.txt"
    inside.write_text("DISK_CONTENT_7\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("OUTSIDE_CONTENT\n")
    fake_gemini.add(text_response("read it"), text_response("after the error"))
    client, sid = await start_session(make_agent, d, fake_gemini, caps={})
    link = {"type": "resource_link", "uri": inside.as_uri(), "name": "notes.txt"}
    assert (await client.prompt(sid, [{"type": "text", "text": "see"}, link]))["stopReason"] == (
        "end_turn"
    )
    assert client.files.calls == []
    assert "DISK_CONTENT_7" in request_texts(fake_gemini)[0]

    bad = {"type": "resource_link", "uri": outside.as_uri(), "name": "secret.txt"}
    with pytest.raises(AcpError) as info:
        await client.prompt(sid, [{"type": "text", "text": "see"}, bad])
    assert info.value.code == -32602
    assert "outside the workspace" in info.value.message and str(outside) in info.value.message
    assert len(fake_gemini.generate_requests) == 1  # nothing reached the model
    missing = {"type": "resource_link", "uri": (d.workspace / "nope.txt").as_uri(), "name": "x"}
    with pytest.raises(AcpError) as info:
        await client.prompt(sid, [missing])
    assert info.value.code == -32602 and "does not exist" in info.value.message
    # the session still works
    assert (await client.prompt(sid, "go on"))["stopReason"] == "end_turn"
    assert all("OUTSIDE_CONTENT" not in t for t in request_texts(fake_gemini))


async def test_embedded_resource_and_image_reach_the_model(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(text_response("a pixel"))
    client, sid = await start_session(make_agent, dirs(tmp_path), fake_gemini)
    blocks = [
        {"type": "text", "text": "What is in these?"},
        {
            "type": "resource",
            "resource": {
                "uri": "file:///elsewhere/notes.md",
                "mimeType": "text/markdown",
                "text": "EMBEDDED_NOTE_99",
            },
        },
        {"type": "image", "mimeType": "image/png", "data": base64.b64encode(PNG).decode()},
    ]
    assert (await client.prompt(sid, blocks))["stopReason"] == "end_turn"
    (request,) = fake_gemini.generate_requests
    parts = request.contents[-1]["parts"]
    assert "EMBEDDED_NOTE_99" in request.last_user_text
    (inline,) = [p["inlineData"] for p in parts if "inlineData" in p]
    assert inline["data"] == base64.b64encode(PNG).decode()
    # the genai SDK writes the proto field name; the API accepts both spellings
    assert inline.get("mimeType", inline.get("mime_type")) == "image/png"

    with pytest.raises(AcpError) as info:  # audio is not advertised
        await client.prompt(sid, [{"type": "audio", "mimeType": "audio/wav", "data": "AAAA"}])
    assert info.value.code == -32602


async def test_a_twenty_megabyte_prompt_line(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    big = "big prompt line\n" + "x" * (20 * 1024 * 1024)
    fake_gemini.add(text_response("that was long"))
    client, sid = await start_session(make_agent, dirs(tmp_path), fake_gemini)
    result = await client.prompt(sid, big, timeout=60)
    assert result == {"stopReason": "end_turn"}
    assert client.text_of(sid) == "that was long"
    (request,) = fake_gemini.generate_requests
    assert len(request.last_user_text) == len(big)
    assert client.updates(sid, "session_info_update")[0]["title"] == "big prompt line"


async def test_two_sessions_prompting_at_once_do_not_mix(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    hangs = {"alpha": HangPoint(), "beta": HangPoint()}

    def answer(request: RecordedRequest) -> Reply:
        tag = "alpha" if "alpha" in request.last_user_text else "beta"
        chunks = [f"{tag}-1 ", f"{tag}-2 ", f"{tag}-3"]
        return text_response(chunks).hang_after(1, hangs[tag])

    fake_gemini.default = answer
    d = dirs(tmp_path)
    client = await start_agent(make_agent, d, fake_gemini)
    first = (await client.new_session(d.workspace))["sessionId"]
    second = (await client.new_session(d.workspace))["sessionId"]
    p1 = client.start_prompt(first, "question alpha")
    p2 = client.start_prompt(second, "question beta")
    # both model calls are in flight at the same time
    await hangs["alpha"].wait_reached_async()
    await hangs["beta"].wait_reached_async()
    hangs["beta"].release()
    assert await p2.result() == {"stopReason": "end_turn"}
    hangs["alpha"].release()
    assert await p1.result() == {"stopReason": "end_turn"}
    assert client.text_of(first) == "alpha-1 alpha-2 alpha-3"
    assert client.text_of(second) == "beta-1 beta-2 beta-3"
    for request in fake_gemini.generate_requests:
        text = request_texts_of(request)
        assert ("alpha" in text) != ("beta" in text), text
    # the next round: each prompt carries only its own history, and cancelling one
    # session's turn leaves the other's running to the end
    hangs.update(alpha=HangPoint(), beta=HangPoint())
    p1 = client.start_prompt(first, "more alpha")
    p2 = client.start_prompt(second, "more beta")
    await hangs["alpha"].wait_reached_async()
    await hangs["beta"].wait_reached_async()
    await client.cancel(first)
    assert await p1.result() == {"stopReason": "cancelled"}
    assert not p2.done()
    hangs["beta"].release()
    assert await p2.result() == {"stopReason": "end_turn"}
    assert client.text_of(second) == "beta-1 beta-2 beta-3" * 2
    assert client.text_of(first) == "alpha-1 alpha-2 alpha-3alpha-1 "
    requests = fake_gemini.generate_requests
    assert len(requests) == 4
    for request in requests:
        text = request_texts_of(request)
        assert ("alpha" in text) != ("beta" in text), text


def request_texts_of(request: RecordedRequest) -> str:
    return "".join(p.get("text", "") for c in request.contents for p in c.get("parts", []))
