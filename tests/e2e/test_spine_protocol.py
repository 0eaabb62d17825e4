"""Spine e2e (issue #2): initialize, authenticate, session/new and model choice,
through the real `adk-acp` process on stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from acp import schema

from tests.e2e.acp_client import AcpError
from tests.e2e.official_schema import TrafficCheck, official_schema
from tests.e2e.spine import MakeAgent, agent_env, dirs, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, text_response

pytestmark = pytest.mark.e2e


# ---------------------------------------------------------------- initialize


async def test_initialize_negotiates_version_1_and_is_honest(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    d = dirs(tmp_path)
    client = await start_agent(make_agent, d, initialize=False)
    result = await client.initialize()
    schema.InitializeResponse.model_validate(result)
    assert result["protocolVersion"] == 1
    assert result["agentInfo"]["name"] == "adk-acp" and result["agentInfo"]["version"]
    assert {m["id"] for m in result["authMethods"]} == {"gemini-api-key", "vertex-ai"}
    caps = schema.AgentCapabilities.model_validate(result["agentCapabilities"])
    assert caps.prompt_capabilities is not None and caps.mcp_capabilities is not None
    # honest: what is advertised works, what is not advertised is not served
    assert caps.prompt_capabilities.image and caps.prompt_capabilities.embedded_context
    assert not caps.prompt_capabilities.audio
    assert caps.load_session  # sessions are recorded and reload
    with pytest.raises(AcpError) as info:
        await client.request(
            "session/load", {"sessionId": "x", "cwd": str(d.workspace), "mcpServers": []}
        )
    assert info.value.code == -32002  # served; that session does not exist
    served = caps.session_capabilities
    assert served is not None
    for method in ("list", "resume", "close", "delete", "fork"):
        assert getattr(served, method) is not None, method
    assert (await client.request("session/list", {}))["sessions"] == []

    # a second initialize, asking for a newer version, is answered with our highest (ACP v2)
    again = await client.initialize(protocol_version=7)
    assert again["protocolVersion"] == 2


async def test_initialize_higher_version_first_then_session_new_at_once(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    """Both lines written before the agent has started: the fast path answers
    initialize with our highest version (2: the client then speaks ACP v2, checked
    against schema/v2), and session/new right behind it works."""
    d = dirs(tmp_path)
    client = await start_agent(make_agent, d, fake_gemini, initialize=False)
    client.advertised = {}
    v2 = official_schema("v2")
    client.schema_check = TrafficCheck(v2) if v2 is not None else None
    init = client.begin("initialize", {"protocolVersion": 3, "info": {"name": "t", "version": "1"}})
    new = client.begin("session/new", {"cwd": str(d.workspace), "mcpServers": []})
    result = await init.result()
    assert result["protocolVersion"] == 2
    session = await new.result()
    assert session["sessionId"] and session["configOptions"][0]["configId"] == "mode"


async def test_an_editor_opening_a_thread_at_spawn_gets_its_session_at_once(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    """initialize, session/new and the first prompt written together (as Zed and
    `acpx exec` do): session/new is answered while the engine still loads, long before
    the prompt's answer; the prompt waits for the engine and works; the session is
    recorded and listed like any other."""
    import time

    from tests.fakes.gemini_server import text_response

    fake_gemini.add(text_response("ready when you are"))
    d = dirs(tmp_path)
    client = await start_agent(make_agent, d, fake_gemini, initialize=False)
    client.advertised = {}
    started = time.monotonic()
    init = client.begin("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    new = client.begin("session/new", {"cwd": str(d.workspace), "mcpServers": []})
    await init.result()
    session = await new.result()
    answered = time.monotonic() - started
    schema.NewSessionResponse.model_validate(session)
    assert session["modes"]["currentModeId"] == "default"
    sid = session["sessionId"]
    assert await client.prompt(sid, "hi") == {"stopReason": "end_turn"}
    prompted = time.monotonic() - started
    assert client.text_of(sid) == "ready when you are"
    assert answered < prompted  # not held back until the engine was up
    listed = await client.request("session/list", {"cwd": str(d.workspace)})
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]
    assert any(u["sessionUpdate"] == "available_commands_update" for u in client.updates(sid))


async def test_initialize_bad_params_is_invalid_params(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    """Bad params are -32602 on both paths: the first line (answered before the
    engine has loaded) and later ones (validated against acp.schema)."""
    client = await start_agent(make_agent, dirs(tmp_path), initialize=False)
    with pytest.raises(AcpError) as info:
        await client.request("initialize", {"protocolVersion": "one"})
    assert info.value.code == -32602
    with pytest.raises(AcpError) as info:
        await client.request("initialize", {"clientCapabilities": {}})
    assert info.value.code == -32602 and "protocolVersion" in info.value.message
    assert (await client.initialize())["protocolVersion"] == 1


async def test_a_first_line_that_is_not_initialize(make_agent: MakeAgent, tmp_path: Path) -> None:
    client = await start_agent(make_agent, dirs(tmp_path), initialize=False)
    await client.send_raw_line(b"[" * 100_000 + b"]" * 100_000)  # too deep to parse
    error = await client.wait_for_message(lambda m: m.get("id") is None and "error" in m)
    assert error["error"]["code"] == -32700
    assert (await client.initialize())["protocolVersion"] == 1


# ---------------------------------------------------------------- authenticate


async def test_authenticate_api_key_from_env(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    client = await start_agent(make_agent, dirs(tmp_path), fake_gemini, api_key="env-key-1")
    assert await client.authenticate("gemini-api-key") == {}


async def test_authenticate_api_key_in_meta_reaches_the_model(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    fake_gemini.add(text_response("hi"))
    client = await start_agent(make_agent, d, fake_gemini, api_key=None)
    with pytest.raises(AcpError) as info:
        await client.new_session(d.workspace)
    assert info.value.code == -32000
    assert await client.authenticate("gemini-api-key", {"api-key": "meta-key-42"}) == {}
    session_id = (await client.new_session(d.workspace))["sessionId"]
    assert (await client.prompt(session_id, "hello"))["stopReason"] == "end_turn"
    (request,) = fake_gemini.generate_requests
    assert request.headers.get("x-goog-api-key") == "meta-key-42"


async def test_authenticate_unknown_method_and_vertex_without_project(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    client = await start_agent(make_agent, dirs(tmp_path), api_key=None)
    with pytest.raises(AcpError) as info:
        await client.authenticate("oauth-personal")
    assert info.value.code == -32602
    assert "gemini-api-key" in info.value.message
    with pytest.raises(AcpError) as info:
        await client.authenticate("vertex-ai")
    assert info.value.code == -32000
    assert "GOOGLE_CLOUD_PROJECT" in info.value.message
    with pytest.raises(AcpError) as info:
        await client.authenticate("gemini-api-key")
    assert info.value.code == -32000
    assert "GEMINI_API_KEY" in info.value.message


# ---------------------------------------------------------------- session/new


async def test_session_new_without_credentials_says_what_to_set(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    d = dirs(tmp_path)
    client = await start_agent(make_agent, d, api_key=None)
    with pytest.raises(AcpError) as info:
        await client.new_session(d.workspace)
    assert info.value.code == -32000
    assert "GEMINI_API_KEY" in info.value.message


async def test_session_new_checks_cwd_and_returns_modes_and_config(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    client = await start_agent(make_agent, d, fake_gemini)
    for bad in ("relative/dir", str(tmp_path / "does-not-exist")):
        with pytest.raises(AcpError) as info:
            await client.new_session(bad)
        assert info.value.code == -32602, bad
        assert bad in info.value.message
    first = await client.new_session(d.workspace)
    second = await client.new_session(d.workspace, additional_directories=[tmp_path / "home"])
    for result in (first, second):
        parsed = schema.NewSessionResponse.model_validate(result)
        assert parsed.modes is not None and parsed.config_options
    assert first["sessionId"] != second["sessionId"]
    modes = first["modes"]
    assert modes["currentModeId"] == "default"
    assert {"default", "autoEdit", "yolo", "plan"} <= {m["id"] for m in modes["availableModes"]}
    options = {o["id"]: o for o in first["configOptions"]}
    assert options["mode"]["category"] == "mode" and options["mode"]["currentValue"] == "default"
    assert options["model"]["category"] == "model"
    assert options["model"]["currentValue"] in {o["value"] for o in options["model"]["options"]}


# ---------------------------------------------------------------- model choice


@pytest.mark.parametrize("source", ["flag", "env", "settings"])
async def test_model_comes_from_flag_env_or_workspace_settings(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer, source: str
) -> None:
    d = dirs(tmp_path)
    fake_gemini.add(text_response("ok"), text_response("switched"))
    for folder, model in ((d.home, "gemini-user-model"), (d.workspace, "gemini-settings-model")):
        (folder / ".gemini").mkdir()
        (folder / ".gemini" / "settings.json").write_text(json.dumps({"model": {"name": model}}))
    args: list[str] = []
    env: dict[str, str | None] = {}
    if source in ("flag", "env"):
        env["GEMINI_MODEL"] = "gemini-env-model"
    if source == "flag":
        args = ["--model", "gemini-flag-model"]
    client = await start_agent(make_agent, d, fake_gemini, args=args, env=env)
    session = await client.new_session(d.workspace)
    session_id = session["sessionId"]
    (model_option,) = [o for o in session["configOptions"] if o["id"] == "model"]
    assert model_option["currentValue"] == f"gemini-{source}-model"
    assert (await client.prompt(session_id, "which model?"))["stopReason"] == "end_turn"
    assert fake_gemini.models_called == [f"gemini-{source}-model"]
    # the editor's model picker changes it for the next prompt
    options = await client.set_config_option(session_id, "model", "gemini-2.5-flash")
    (model_option,) = [o for o in options["configOptions"] if o["id"] == "model"]
    assert model_option["currentValue"] == "gemini-2.5-flash"
    assert (await client.prompt(session_id, "and now?"))["stopReason"] == "end_turn"
    assert fake_gemini.models_called[-1] == "gemini-2.5-flash"


async def test_console_script_starts_the_same_agent(make_agent: MakeAgent, tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "adk-acp"
    if not script.exists():
        pytest.skip("console script not installed")
    d = dirs(tmp_path)
    client = await make_agent([str(script)], agent_env(d), cwd=str(d.workspace))
    assert (await client.initialize())["agentInfo"]["name"] == "adk-acp"
