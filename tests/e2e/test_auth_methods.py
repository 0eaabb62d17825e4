"""Auth methods as ACP defines them today (issue 22), through the real process: the
`agent` methods (no `type`, the default) go through `authenticate`, the `terminal`
method is offered only to a client that can run it and is never passed to
`authenticate`; `session/new` without credentials is refused with auth-required
(-32000), on the early path too; and the ACP registry's nightly protocol matrix
(initialize, session/new, list, fork, resume, set_model, close) passes, plus cancel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_client import AcpError, AcpTestClient
from tests.e2e.spine import MakeAgent, dirs, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, HangPoint, text_response

pytestmark = pytest.mark.e2e

MATRIX_CAPS = {
    "terminal": True,
    "fs": {"readTextFile": True, "writeTextFile": True},
    "_meta": {"terminal_output": True, "terminal-auth": True},
}
"""The client capabilities the registry's protocol matrix sends (its legacy terminal-auth
flag in `_meta`)."""

SUPPORTED = {"success", "invalid_params", "resource_not_found"}
"""Probe outcomes the matrix counts as "the method is served"."""


async def probe(client: AcpTestClient, method: str, params: dict[str, Any]) -> str:
    """The matrix's verdict on one request: success, or the error's class."""
    try:
        await client.request(method, params, timeout=30)
    except AcpError as exc:
        return {
            -32601: "method_not_found",
            -32000: "auth_required",
            -32602: "invalid_params",
            -32002: "resource_not_found",
            -32800: "cancelled",
        }.get(exc.code, f"error {exc.code}: {exc.message}")
    return "success"


def auth_type(method: dict[str, Any]) -> str:
    return str(method.get("type") or "agent")


async def test_the_registry_matrix_without_credentials(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    """The matrix's unauthenticated run: initialize and session/new written at once
    (session/new meets the early path), each method probe served."""
    d = dirs(tmp_path)
    client = await start_agent(make_agent, d, api_key=None, initialize=False)
    client.advertised = MATRIX_CAPS
    init = client.begin(
        "initialize",
        {
            "protocolVersion": 1,
            "clientInfo": {"name": "ACP Registry Protocol Matrix", "version": "0.1.0"},
            "clientCapabilities": MATRIX_CAPS,
        },
    )
    new = client.begin("session/new", {"cwd": str(d.workspace), "mcpServers": []})
    result = await init.result()
    assert sorted({auth_type(m) for m in result["authMethods"]}) == ["agent", "terminal"]
    assert result["agentCapabilities"]["auth"] == {"logout": {}}
    session_caps = result["agentCapabilities"]["sessionCapabilities"]
    for name in ("list", "fork", "resume", "close"):
        assert isinstance(session_caps[name], dict), name
    with pytest.raises(AcpError) as info:
        await new.result()
    assert info.value.code == -32000 and "GEMINI_API_KEY" in info.value.message

    where = {"sessionId": "sess_matrix_probe", "cwd": str(d.workspace), "mcpServers": []}
    outcomes = {
        "session/list": await probe(client, "session/list", {}),
        "session/fork": await probe(client, "session/fork", where),
        "session/resume": await probe(client, "session/resume", where),
        "session/set_model": await probe(
            client, "session/set_model", {"sessionId": "sess_matrix_probe", "modelId": "m"}
        ),
    }
    assert set(outcomes.values()) <= SUPPORTED, outcomes
    # later: the server (not the early path) refuses the same way
    with pytest.raises(AcpError) as info:
        await client.new_session(d.workspace)
    assert info.value.code == -32000


async def test_the_registry_matrix_signed_in_with_cancel_and_model_switching(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    """The same probes on a real session (close last, with an object result), plus a
    turn cancelled mid-stream and a model switch by config option."""
    hang = HangPoint()
    fake_gemini.add(text_response(["partial ", "never"]).hang_after(1, hang), text_response("ok"))
    d = dirs(tmp_path)
    client = await start_agent(make_agent, d, fake_gemini, caps=MATRIX_CAPS)
    sid = (await client.new_session(d.workspace))["sessionId"]
    where = {"sessionId": sid, "cwd": str(d.workspace), "mcpServers": []}
    assert await probe(client, "session/list", {}) == "success"
    assert await probe(client, "session/fork", where) == "success"
    assert await probe(client, "session/resume", where) == "success"
    unknown_model = {"sessionId": sid, "modelId": "matrix-model"}
    assert await probe(client, "session/set_model", unknown_model) in SUPPORTED

    pending = client.start_prompt(sid, "a long story")
    await hang.wait_reached_async()
    await client.cancel(sid)
    assert await pending.result(timeout=30) == {"stopReason": "cancelled"}
    answer = await client.set_config_option(sid, "model", "gemini-2.5-flash")
    (model,) = [o for o in answer["configOptions"] if o["id"] == "model"]
    assert model["currentValue"] == "gemini-2.5-flash"
    assert await client.prompt(sid, "again") == {"stopReason": "end_turn"}
    assert fake_gemini.generate_requests[-1].model == "gemini-2.5-flash"

    assert await client.request("session/close", {"sessionId": sid}) == {}


async def test_terminal_method_is_offered_only_when_the_client_runs_it_and_never_authenticates(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    plain = await start_agent(make_agent, d, fake_gemini, caps={})
    methods = (await plain.initialize({}))["authMethods"]
    assert {auth_type(m) for m in methods} == {"agent"}
    assert all("type" not in m for m in methods)  # the default type, as the schema says
    await plain.close()

    client = await start_agent(make_agent, d, fake_gemini, caps={"auth": {"terminal": True}})
    methods = (await client.initialize({"auth": {"terminal": True}}))["authMethods"]
    (terminal,) = [m for m in methods if auth_type(m) == "terminal"]
    assert terminal["args"] == ["--login"] and terminal["env"] == {}
    with pytest.raises(AcpError) as info:
        await client.authenticate(terminal["id"])
    assert info.value.code == -32602 and "adk-acp --login" in info.value.message
    # each agent method authenticates (the key comes from the environment here)
    assert await client.authenticate("gemini-api-key") == {}
    session = await client.new_session(d.workspace)
    assert session["sessionId"]
    # logout forgets the authenticate choice; the environment's key still serves
    assert await client.request("logout", {}) == {}


async def test_authenticate_then_logout_refuses_new_sessions_again(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    client = await start_agent(make_agent, d, fake_gemini, api_key=None)
    with pytest.raises(AcpError) as info:
        await client.new_session(d.workspace)
    assert info.value.code == -32000
    assert await client.authenticate("gemini-api-key", {"api-key": "meta-key-7"}) == {}
    assert (await client.new_session(d.workspace))["sessionId"]
    assert await client.request("logout", {}) == {}
    with pytest.raises(AcpError) as info:
        await client.new_session(d.workspace)
    assert info.value.code == -32000
