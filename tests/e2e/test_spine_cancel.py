"""Spine e2e (issue #2): `session/cancel` and `$/cancel_request` through the real
`adk-acp` process. A cancelled turn answers stopReason `cancelled` — never an
error, never end_turn — and the session keeps working."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_client import AcpError, AcpTestClient
from tests.e2e.spine import AGENT, MakeAgent, agent_env, dirs, start_session
from tests.fakes.gemini_server import FakeGeminiServer, HangPoint, text_response

pytestmark = pytest.mark.e2e


async def test_cancel_mid_stream_then_prompt_again(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    hang = HangPoint()
    fake_gemini.add(
        text_response(["partial ", "never sent"]).hang_after(1, hang),
        text_response("fresh answer"),
    )
    client, sid = await start_session(make_agent, dirs(tmp_path), fake_gemini)
    pending = client.start_prompt(sid, "tell me a long story")
    await client.wait_for_update(
        lambda u: u.get("sessionUpdate") == "agent_message_chunk", session_id=sid
    )
    await hang.wait_reached_async()
    await client.cancel(sid)
    assert await pending.result(timeout=5) == {"stopReason": "cancelled"}
    updates_at_answer = len(client.updates(sid))
    assert client.text_of(sid) == "partial "
    # the model call was abandoned: the agent closed the connection
    await asyncio.get_running_loop().run_in_executor(None, hang.client_gone.wait, 5)
    assert hang.client_gone.is_set() and not hang.released.is_set()
    assert len(client.updates(sid)) == updates_at_answer  # nothing of that turn came later

    assert await client.prompt(sid, "something else") == {"stopReason": "end_turn"}
    assert client.text_of(sid) == "partial fresh answer"
    assert fake_gemini.generate_requests[-1].last_user_text == "something else"


async def test_cancel_while_waiting_for_the_model(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    hang = HangPoint()
    fake_gemini.add(text_response(["never"]).hang_after(0, hang), text_response("back"))
    client, sid = await start_session(make_agent, dirs(tmp_path), fake_gemini)
    pending = client.start_prompt(sid, "are you there?")
    await hang.wait_reached_async()
    second = client.start_prompt(sid, "me too")  # steers the running turn (queued)
    await asyncio.sleep(0.2)
    assert not second.done()
    await client.cancel(sid)
    assert await pending.result(timeout=5) == {"stopReason": "cancelled"}
    assert await second.result(timeout=5) == {"stopReason": "cancelled"}
    assert client.updates(sid, "agent_message_chunk") == []
    assert await client.prompt(sid, "again") == {"stopReason": "end_turn"}
    assert client.text_of(sid) == "back"


async def test_cancel_when_idle_changes_nothing(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(text_response("first"), text_response("second"))
    client, sid = await start_session(make_agent, dirs(tmp_path), fake_gemini)
    await client.cancel(sid)  # before any prompt
    await client.cancel("no-such-session")  # unknown: ignored, no answer
    assert await client.prompt(sid, "one") == {"stopReason": "end_turn"}
    await client.cancel(sid)  # after the turn ended
    assert await client.prompt(sid, "two") == {"stopReason": "end_turn"}
    assert client.text_of(sid) == "firstsecond"
    assert client.orphan_errors == []


async def test_cancel_request_for_a_pending_prompt(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    hang = HangPoint()
    fake_gemini.add(text_response(["a", "b"]).hang_after(1, hang), text_response("still here"))
    client, sid = await start_session(make_agent, dirs(tmp_path), fake_gemini)
    pending = client.start_prompt(sid, "slow one")
    await hang.wait_reached_async()
    await client.cancel_request(pending.id)
    with pytest.raises(AcpError) as info:
        await pending.result(timeout=5)
    assert info.value.code == -32800
    assert await client.prompt(sid, "next") == {"stopReason": "end_turn"}
    assert client.text_of(sid).endswith("still here")


class _GatedReadsClient(AcpTestClient):
    """A client whose `fs/read_text_file` answers only once the test opens the gate."""

    def _register_client_methods(self) -> None:
        self.read_started = asyncio.Event()
        self.read_gate = asyncio.Event()
        plain = self.files.read

        async def gated_read(params: dict[str, Any]) -> dict[str, Any]:
            self.read_started.set()
            await self.read_gate.wait()
            return plain(params)

        self.files.read = gated_read  # type: ignore[method-assign]
        super()._register_client_methods()


async def test_cancel_while_the_editor_reads_a_mentioned_file(
    tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    """session/cancel arrives while the agent is still reading an @-mentioned file
    through the editor: the turn ends `cancelled` and the model is never called."""
    d = dirs(tmp_path)
    mentioned = d.workspace / "big.py"
    mentioned.write_text("print('hi')\n")
    fake_gemini.add(text_response("should not be needed"), text_response("next turn"))
    client = await _GatedReadsClient.spawn(AGENT, env=agent_env(d, fake_gemini), cwd=d.workspace)
    async with client:
        await client.initialize({"fs": {"readTextFile": True}})
        sid = (await client.new_session(d.workspace))["sessionId"]
        link = {"type": "resource_link", "uri": mentioned.as_uri(), "name": "big.py"}
        pending = client.start_prompt(sid, [{"type": "text", "text": "explain"}, link])
        await asyncio.wait_for(client.read_started.wait(), 60)
        await client.cancel(sid)
        # Requests and notifications are handled in the order they came: once a later
        # request is answered, the cancel was seen (however slow the machine) before
        # the read is answered.
        await client.request("session/list", {"cwd": str(d.workspace)}, timeout=60)
        client.read_gate.set()
        assert await pending.result(timeout=60) == {"stopReason": "cancelled"}
        assert fake_gemini.generate_requests == []
        assert await client.prompt(sid, "next") == {"stopReason": "end_turn"}
