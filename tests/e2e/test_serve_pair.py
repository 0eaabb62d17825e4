"""Two `adk-acp serve` instances sharing one PostgreSQL (issue 24.5/24.6), driven by the
official Python SDK's remote transports and by our schema-checked `RemoteAcp`: a
session moves between instances (its lease handed over), a client that comes back on
either receives what it missed and how the turn it lost ended, a killed instance's
session continues on the other, idle sessions are let go, tokens hold on both."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from acp import RequestError, connect_to_agent, schema
from acp.http import create_http_stream
from acp.ws import create_websocket_stream

from acp_server.errors import BUSY
from tests.e2e.acp_client import AGENT_COMMAND, CLEARED_ENV, AcpError, AcpTestClient
from tests.e2e.remote_client import TOKEN, RemoteAcp, RemoteError, Served, bearer, remote
from tests.e2e.serve_pair import LEASE_S, LIMITED, ServePair, serve_pair
from tests.e2e.test_serve_python_sdk import RemoteSdkClient
from tests.e2e.test_sessions import contents_text
from tests.e2e.tools_harness import EDITOR
from tests.fakes.gemini_server import HangPoint, function_call_response, text_response

__all__ = ["serve_pair"]  # the fixture, started once for this module

# Two serve processes for the module; a takeover waits out a lease (6 s) on a busy machine.
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(180),
    pytest.mark.asyncio(loop_scope="module"),
]


class PairSdkClient(RemoteSdkClient):
    """The SDK client, keeping each update's cursor and the turn states it was told."""

    def __init__(self) -> None:
        super().__init__()
        self.cursor = 0
        self.turn_states: list[dict[str, Any]] = []
        self.changed = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **meta: Any) -> None:
        await super().session_update(session_id, update)
        ours = meta.get("adkAcp") or {}
        self.cursor = max(self.cursor, ours.get("cursor", 0))
        if isinstance(update, schema.SessionInfoUpdate) and update.field_meta:
            state = update.field_meta.get("adkAcp", {}).get("turnState")
            if state is not None:
                self.turn_states.append(state)
        self.changed.set()

    async def wait_for(self, condition: Any, timeout: float = 60) -> None:
        async def watch() -> None:
            while not condition():
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(watch(), timeout)


class Sdk:
    """One SDK connection (`kind` "ws" or "http") to one instance."""

    def __init__(self, kind: str, url: str, token: str = TOKEN) -> None:
        self.kind, self.url, self.token = kind, url, token
        self.client = PairSdkClient()
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(60, read=None))
        self.conn: Any = None

    async def __aenter__(self) -> Sdk:
        if self.kind == "ws":
            transport = await create_websocket_stream(self.url, headers=bearer(self.token))
        else:
            transport = create_http_stream(self.url, client=self.http, headers=bearer(self.token))
        self.conn = connect_to_agent(self.client, transport)
        await self.conn.initialize(protocol_version=1)
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None
        await self.http.aclose()

    async def prompt(self, session_id: str, text: str) -> str:
        block = schema.TextContentBlock(type="text", text=text)
        answer = await self.conn.prompt(session_id=session_id, prompt=[block])
        return str(answer.stop_reason)

    def text(self) -> str:
        return "".join(self.client.texts)


async def _listed(sdk: Sdk, ws: Path) -> list[str]:
    listed = await sdk.conn.list_sessions(cwd=str(ws))
    return [s.session_id for s in listed.sessions]


async def _wait_for_holder(pair: ServePair, session_id: str, condition: Any) -> None:
    async def watch() -> None:
        while not condition(await pair.lease_holder(session_id)):
            await asyncio.sleep(0.1)

    await asyncio.wait_for(watch(), 60)


async def _mid_second_turn(
    pair: ServePair, served: Served, answers: tuple[str, str, str, str]
) -> tuple[Sdk, str, Any, HangPoint]:
    """An SDK client on `served` with a session: prompt "one" answered `answers[0]`,
    prompt "two" running, its answer shown up to `answers[1]` and hanging there (the rest,
    `answers[2]`, once the hang is released); `answers[3]` answers the next prompt."""
    hang = HangPoint()
    pair.fake.add(
        text_response(answers[0]),
        text_response([answers[1], answers[2]]).hang_after(1, hang),
        text_response(answers[3]),
    )
    sdk = Sdk("ws", served.ws_url)
    await sdk.__aenter__()
    session_id = (await sdk.conn.new_session(cwd=str(pair.workspace), mcp_servers=[])).session_id
    assert await sdk.prompt(session_id, "one") == "end_turn"
    turn = asyncio.ensure_future(sdk.prompt(session_id, "two"))
    await sdk.client.wait_for(lambda: answers[1] in sdk.text())
    return sdk, session_id, turn, hang


async def test_a_dropped_client_resumes_on_the_other_instance_with_what_it_missed(
    serve_pair: ServePair,
) -> None:
    pair, ws = serve_pair, serve_pair.workspace
    answers = ("First answer.", "Before the drop, ", "after the drop.", "Continued on B.")
    first, session_id, turn, hang = await _mid_second_turn(pair, pair.a, answers)
    cursor = first.client.cursor
    await first.close()  # gone mid-turn: the turn runs on, on A, with nobody attached
    turn.cancel()
    hang.release()

    async with Sdk("http", pair.b.http_url) as second:
        assert session_id in await _listed(second, ws)  # B lists A's session
        resumed = await second.conn.resume_session(
            session_id=session_id, cwd=str(ws), mcp_servers=[], adkAcp={"replayFrom": cursor}
        )  # A lets go once its turn ended; B takes the lease
        assert "after the drop." in second.text()  # missed while away, from the record
        assert "First answer." not in second.text()  # from the turn the cursor was in
        state = (resumed.field_meta or {})["adkAcp"]["turnState"]
        assert state == {"state": "idle", "stopReason": "end_turn"}
        assert second.client.turn_states[-1] == state
        assert pair.holder_is(pair.b)(await pair.lease_holder(session_id))
        assert await second.prompt(session_id, "three") == "end_turn"
        assert "Continued on B." in second.text()

        # One instance drives it: a client on A is told why, at once, and what to do.
        async with remote("ws", pair.a) as third:
            with pytest.raises(RemoteError) as refused:
                await third.request(
                    "session/load", {"sessionId": session_id, "cwd": str(ws), "mcpServers": []}
                )
            assert refused.value.code == BUSY
            assert "1 client(s) attached there" in str(refused.value.message)
            assert "connect to that process" in str(refused.value.message)
    # B's client gone: A takes the session back, history intact
    async with remote("ws", pair.a) as fourth:
        await fourth.request(
            "session/load", {"sessionId": session_id, "cwd": str(ws), "mcpServers": []}
        )
        users = [u["content"]["text"] for u in fourth.updates(session_id, "user_message_chunk")]
        assert users == ["one", "two", "three"]
        shown = fourth.text_of(session_id)
        for said in ("First answer.", "Before the drop, after the drop.", "Continued on B."):
            assert said in shown


async def test_a_turn_ended_alone_reports_its_stop_reason_and_idle_sessions_are_let_go(
    serve_pair: ServePair,
) -> None:
    pair, ws = serve_pair, serve_pair.workspace
    hang = HangPoint()
    pair.fake.add(text_response(["Half ", "whole."]).hang_after(1, hang))
    first = await RemoteAcp.websocket(pair.a.ws_url)
    await first.initialize()
    session_id = await first.new_session(ws)
    first.start("session/prompt", first.prompt_params(session_id, "go"))
    await first.wait_until(lambda: "Half " in first.text_of(session_id))
    cursor = first.last_cursor()
    await first.close()
    hang.release()
    await pair.wait_for_record(session_id, "adkAcpLastTurn")  # the turn ended, nobody there
    resume = {"sessionId": session_id, "cwd": str(ws), "mcpServers": []}

    # the same instance, from its log: what was missed, then how the turn ended
    async with remote("ws", pair.a) as again:
        answer = await again.request(
            "session/resume", {**resume, "_meta": {"adkAcp": {"replayFrom": cursor}}}
        )
        missed = again.updates(session_id)
        assert [u["content"]["text"] for u in missed if "content" in u] == ["whole."]
        ended = [u["_meta"]["adkAcp"]["turnState"] for u in missed if "_meta" in u]
        idle = {"state": "idle", "stopReason": "end_turn"}
        assert ended == [idle, idle]  # the turn's end as it happened, then the state now
        assert answer["_meta"]["adkAcp"]["turnState"] == idle
    # nobody attached, no turn, no question: let go after --session-idle-timeout
    await _wait_for_holder(pair, session_id, lambda holder: holder is None)
    assert f"session {session_id} let go (idle)" in pair.a.log()
    # resumed later, elsewhere, from the store: the stop reason came with the record
    async with remote("http", pair.b) as later:
        answer = await later.request("session/resume", resume)
        assert answer["_meta"]["adkAcp"]["turnState"] == idle
        assert later.updates(session_id)[-1]["_meta"]["adkAcp"]["turnState"] == idle


async def test_kill_9_of_the_driving_instance_mid_turn_and_the_session_goes_on_elsewhere(
    serve_pair: ServePair,
) -> None:
    pair, ws = serve_pair, serve_pair.workspace
    answers = ("Recorded answer.", "Cut ", "off", "Answered by A after the takeover.")
    doomed, session_id, turn, hang = await _mid_second_turn(pair, pair.b, answers)
    recorded = await pair.wait_for_record(session_id, '"text":"two"')  # the prompt in flight
    cursor = doomed.client.cursor
    pair.kill(1)  # B dies mid-turn holding the lease
    hang.release()
    turn.cancel()
    await doomed.close()
    try:
        async with Sdk("ws", pair.a.ws_url) as rescued:
            await rescued.conn.resume_session(
                session_id=session_id, cwd=str(ws), mcp_servers=[], adkAcp={"replayFrom": cursor}
            )  # waits out B's lease, then A takes it over
            assert (await pair.record(session_id))[: len(recorded)] == recorded  # nothing lost
            assert pair.holder_is(pair.a)(await pair.lease_holder(session_id))
            assert await rescued.prompt(session_id, "third") == "end_turn"
            assert "Answered by A after the takeover." in rescued.text()
            request = pair.fake.generate_requests[-1]
            said = [p.get("text") for c in request.contents for p in c.get("parts", [])]
            assert [t for t in said if t] == ["one", "Recorded answer.", "two", "third"]
    finally:
        await pair.restart(1)


async def test_token_refusals_hold_on_both_instances(serve_pair: ServePair) -> None:
    pair = serve_pair
    for served in pair.served:
        for wrong in ("not-the-token", None):
            with pytest.raises(Exception) as refused:
                await create_websocket_stream(served.ws_url, headers=bearer(wrong))
            assert "401" in str(refused.value)
            async with httpx.AsyncClient() as http:
                answer = await http.post(
                    served.http_url,
                    json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
                    headers=bearer(wrong),
                )
            assert answer.status_code == 401
        async with Sdk("http", served.http_url, LIMITED) as limited:
            assert await _listed(limited, pair.limited_root) == []
            with pytest.raises(RequestError) as outside:
                await _listed(limited, pair.workspace)
            assert "outside the workspace roots" in str(outside.value)


async def _editor_agent(pair: ServePair, home: Path) -> AcpTestClient:
    """An editor's `adk-acp` over stdio on the pair's database, model and workspace."""
    home.mkdir()
    env: dict[str, str | None] = {key: None for key in CLEARED_ENV}
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GEMINI_API_KEY": "x",
        "GOOGLE_GEMINI_BASE_URL": pair.fake.base_url,
        "ADK_ACP_LEASE_SECONDS": str(LEASE_S),
    }
    argv = [*AGENT_COMMAND, "--store", pair.url]
    editor = await AcpTestClient.spawn(argv, env=env, cwd=pair.workspace, permission_policy="queue")
    await editor.initialize(EDITOR)
    return editor


@pytest.mark.cold  # the lease names the spawned pid
async def test_a_stdio_agent_hands_its_idle_session_over_keeps_a_busy_one_and_takes_it_back(
    serve_pair: ServePair, tmp_path: Path
) -> None:
    pair, ws = serve_pair, serve_pair.workspace
    editor = await _editor_agent(pair, tmp_path / "editor-home")
    session_id = (await editor.new_session(ws))["sessionId"]
    resume = {"sessionId": session_id, "cwd": str(ws), "mcpServers": []}
    pair.fake.add(text_response("Answered in the editor."), text_response("Answered on A."))
    assert await editor.prompt(session_id, "one") == {"stopReason": "end_turn"}

    # idle in the editor: A's client gets it at once (the editor renews its lease, so
    # waiting it out would end in a refusal)
    async with remote("ws", pair.a) as there:
        await there.request("session/resume", resume)
        assert pair.holder_is(pair.a)(await pair.lease_holder(session_id))
        assert "handed over to another process" in editor.stderr_text
        answer = await there.request("session/prompt", there.prompt_params(session_id, "two"))
        assert answer["stopReason"] == "end_turn"
        with pytest.raises(AcpError) as refused:  # driven on A with its client there
            await editor.prompt(session_id, "too early")
        assert refused.value.code == BUSY
        assert "1 client(s) attached there" in refused.value.message
    # A's client gone: the editor's next prompt takes the session back, with A's turn
    pair.fake.add(text_response("Back in the editor."))
    assert await editor.prompt(session_id, "three") == {"stopReason": "end_turn"}
    assert contents_text(pair.fake.generate_requests[-1]) == [
        ("user", "one"),
        ("model", "Answered in the editor."),
        ("user", "two"),
        ("model", "Answered on A."),
        ("user", "three"),
    ]
    assert f"pid {editor.process.pid} " in str(await pair.lease_holder(session_id))

    # busy in the editor (a permission question waits there): A's client is told at once
    pair.fake.add(
        function_call_response("write_file", {"file_path": str(ws / "kept.txt"), "content": "x"}),
        text_response("Written."),
    )
    pending = editor.start_prompt(session_id, "write it")
    asked = await editor.next_permission_request()
    async with remote("ws", pair.a) as there:
        with pytest.raises(RemoteError) as busy:
            await there.request("session/resume", resume)
        assert busy.value.code == BUSY
        message = str(busy.value.message)
        assert "a permission request waits there for an answer" in message
        assert "in an editor (adk-acp over stdio)" in message
        assert f"pid {editor.process.pid} " in message and "connect to" not in message
    asked.select_kind("allow_once")
    assert await pending.result() == {"stopReason": "end_turn"}

    # busy with a slash command (`/compress` waits for the model's summary): kept too
    hang = HangPoint()
    pair.fake.add(
        text_response("<state_snapshot>the gist</state_snapshot>").hang_after(0, hang),
        text_response(""),  # an empty verification keeps the summary
    )
    compressing = editor.start_prompt(session_id, "/compress")
    await hang.wait_reached_async()
    async with remote("ws", pair.a) as there:
        with pytest.raises(RemoteError) as busy:
            await there.request("session/resume", resume)
        assert busy.value.code == BUSY
        assert "a command runs there, in an editor" in str(busy.value.message)
    hang.release()
    assert await compressing.result() == {"stopReason": "end_turn"}
    await editor.close()  # its lines written, its lease let go

    lines = await pair.record(session_id)
    typed = [json.loads(line) for line in lines]
    prompts = [
        m["displayContent"] for m in typed if m.get("type") == "user" and "displayContent" in m
    ]
    assert prompts == ["one", "two", "three", "write it"]  # nothing lost on either side
    assert not any("too early" in line for line in lines)
    assert [m["summary"] for m in typed if m.get("type") == "compression"] == [
        "<state_snapshot>the gist</state_snapshot>"
    ]  # recorded by the editor's agent, which kept its lease
