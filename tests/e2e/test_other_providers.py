"""Models beyond Gemini (issue 34): `--model openai/NAME` and `ollama/NAME` through the
real process, ADK's `OpenAILlm` and the real `openai` client, against a fake
OpenAI-compatible server in the real wire format (tests/fakes/openai_server.py):
streamed text and reasoning, tool calls whose arguments arrive in pieces (parallel
calls too) run by the scheduler with the editor's approval, usage against the
provider's context window, retries of a 429 (its `retry-after`) and of a dropped
stream, a context-length 400 told clearly, a cancel, `-p` without any Google key, and
`session/load` of a session recorded on the other provider.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.acp_client import AcpError
from tests.e2e.headless_harness import run_cli
from tests.e2e.spine import dirs
from tests.e2e.test_sessions import env_of
from tests.e2e.tools_harness import AGENT, EDITOR, Agent, MakeAgent, start_agent
from tests.fakes.gemini_server import FakeGeminiServer
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    HangPoint,
    Reply,
    ToolCall,
    context_too_long,
    error_reply,
    rate_limited,
    text_reply,
    tool_reply,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

MODEL = "openai/fake-model"
SCALE = {"ADK_ACP_RETRY_DELAY_SCALE": "0.001"}


@pytest.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server


def provider_env(server: FakeOpenAIServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test", **SCALE}


def user_settings(tmp_path: Path, settings: dict[str, object]) -> None:
    """The user's `~/.gemini/settings.json` of the agent `start_agent` starts."""
    folder = tmp_path / "home" / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(settings))


async def start(
    make_agent: MakeAgent,
    tmp_path: Path,
    gemini: FakeGeminiServer,
    server: FakeOpenAIServer,
    *,
    model: str = MODEL,
    env_extra: dict[str, str] | None = None,
    **options: object,
) -> Agent:
    env = env_extra or provider_env(server)
    return await start_agent(
        make_agent,
        tmp_path,
        gemini,
        EDITOR,
        args=["--model", model],
        env_extra=env,
        **options,  # type: ignore[arg-type]
    )


async def test_an_answer_streams_with_thoughts_and_usage_from_the_other_provider(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    fake_openai.add(Reply(text=["The ", "answer."], reasoning=["let me ", "see"], usage=(40, 9)))
    agent = await start(make_agent, tmp_path, fake_gemini, fake_openai)
    model_option = next(o for o in agent.new_session["configOptions"] if o["id"] == "model")
    assert model_option["currentValue"] == MODEL

    assert await agent.prompt("what?") == {"stopReason": "end_turn"}
    assert agent.text() == "The answer."
    assert agent.client.text_of(agent.session_id, "agent_thought_chunk") == "let me see"
    [usage] = agent.updates("usage_update")[-1:]
    assert usage["used"] == 49 and usage["size"] == 128_000

    [chat] = fake_openai.chats()
    assert fake_gemini.generate_requests == []
    assert chat.model == "fake-model"
    assert chat.headers["authorization"] == "Bearer sk-test"
    assert chat.body["stream"] is True
    assert chat.body["stream_options"] == {"include_usage": True}
    assert chat.messages[0]["role"] == "system"
    assert chat.messages[-1] == {"role": "user", "content": "what?"}
    assert {"read_file", "write_file", "run_shell_command"} <= set(chat.tool_names)
    assert "google_web_search" in chat.tool_names  # with a Google key: run by Gemini

    fake_openai.add(text_reply(["Second."]))
    assert await agent.prompt("and?") == {"stopReason": "end_turn"}
    history = [(m["role"], m.get("content")) for m in fake_openai.chats()[1].messages[1:]]
    assert history == [("user", "what?"), ("assistant", "The answer."), ("user", "and?")]


async def test_a_tool_call_in_pieces_is_approved_run_and_answered(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    fake_openai.add(
        tool_reply(
            ToolCall(
                "write_file", {"file_path": "a.txt", "content": "hello\n"}, id="call_w", pieces=5
            ),
            text=["Writing it."],
        ),
        text_reply(["Done."]),
    )
    agent = await start(make_agent, tmp_path, fake_gemini, fake_openai, permission_policy="queue")
    pending = agent.client.start_prompt(agent.session_id, "write a.txt")
    request = await agent.client.next_permission_request()
    request.select("proceed_once")
    assert await pending.result(60) == {"stopReason": "end_turn"}
    assert (agent.workspace / "a.txt").read_text() == "hello\n"
    assert agent.text() == "Writing it.Done."
    [call] = agent.tool_calls()
    assert agent.final(call["toolCallId"])["status"] == "completed"

    first, second = fake_openai.chats()
    assistant, tool = second.messages[-2:]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"][0]["id"] == "call_w"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {
        "file_path": "a.txt",
        "content": "hello\n",
    }
    assert tool["role"] == "tool" and tool["tool_call_id"] == "call_w"


async def test_parallel_tool_calls_both_run(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    fake_openai.add(
        tool_reply(
            ToolCall("read_file", {"file_path": "a.txt"}, id="call_a"),
            ToolCall("read_file", {"file_path": "b.txt"}, id="call_b"),
        ),
        text_reply(["Both read."]),
    )
    agent = await start(
        make_agent,
        tmp_path,
        fake_gemini,
        fake_openai,
        files={"a.txt": "alpha\n", "b.txt": "beta\n"},
    )
    assert await agent.prompt("read both") == {"stopReason": "end_turn"}
    assert agent.text() == "Both read."
    assert len(agent.tool_calls()) == 2
    second = fake_openai.chats()[1]
    tools = {m["tool_call_id"]: m["content"] for m in second.messages if m["role"] == "tool"}
    assert set(tools) == {"call_a", "call_b"}
    assert "alpha" in tools["call_a"] and "beta" in tools["call_b"]


async def test_a_429_with_retry_after_and_a_dropped_stream_are_retried_and_told(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    fake_openai.add(
        rate_limited(2),
        error_reply(500, "The server had an error while processing your request."),
        text_reply(["after the limit"]),
        Reply(text=["The stream ", "broke ", "off"], drop_after=2),
        text_reply(["The stream ", "was retried"]),
    )
    agent = await start(make_agent, tmp_path, fake_gemini, fake_openai)
    assert await agent.prompt("one") == {"stopReason": "end_turn"}
    text = agent.text()
    assert text.endswith("after the limit")
    assert f"The model call failed ({MODEL} at {fake_openai.base_url}: HTTP 429" in text
    assert "attempt 1 of 10" in text
    assert "HTTP 500 (server error): The server had an error" in text and "attempt 2 of 10" in text

    mark = len(agent.updates("agent_message_chunk"))
    assert await agent.prompt("two") == {"stopReason": "end_turn"}
    chunks = [u["content"]["text"] for u in agent.updates("agent_message_chunk")[mark:]]
    assert chunks[0] == "The stream "
    assert "interrupted" in chunks[1]
    assert "".join(chunks[2:]) == "The stream was retried"
    assert len(fake_openai.chats()) == 5


async def test_a_context_length_400_ends_the_turn_with_the_servers_reason(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    fake_openai.add(context_too_long(8192, 9000), text_reply(["fine"]))
    agent = await start(make_agent, tmp_path, fake_gemini, fake_openai)
    with pytest.raises(AcpError) as failed:
        await agent.prompt("a long one")
    assert "maximum context length is 8192 tokens" in failed.value.message
    assert len(fake_openai.chats()) == 1  # a 400 is never retried
    assert await agent.prompt("again") == {"stopReason": "end_turn"}
    assert agent.text().endswith("fine")


async def test_cancel_while_the_other_provider_streams(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    hang = HangPoint()
    fake_openai.add(Reply(text=["partial ", "never"], hang=hang, hang_after=2), text_reply(["ok"]))
    agent = await start(make_agent, tmp_path, fake_gemini, fake_openai)
    pending = agent.client.start_prompt(agent.session_id, "go")
    await asyncio.to_thread(hang.reached.wait, 60)
    await agent.client.cancel(agent.session_id)
    assert await pending.result(60) == {"stopReason": "cancelled"}
    hang.release()
    assert await agent.prompt("next") == {"stopReason": "end_turn"}
    assert agent.text().endswith("ok")


@pytest.mark.parametrize("continue_on", ["openai", "gemini"])
async def test_a_session_recorded_on_the_other_provider_loads_and_continues(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
    continue_on: str,
) -> None:
    """Loaded by a process configured for the same provider it continues there; by one
    on Gemini, Gemini gets the other provider's history (the call and its result)."""
    from tests.fakes.gemini_server import text_response

    fake_openai.add(
        tool_reply(ToolCall("read_file", {"file_path": "a.txt"}, id="call_r")),
        text_reply(["It says alpha."]),
        text_reply(["Still here."]),
    )
    fake_gemini.add(text_response("Gemini here."))
    agent = await start(make_agent, tmp_path, fake_gemini, fake_openai, files={"a.txt": "alpha\n"})
    assert await agent.prompt("read a.txt") == {"stopReason": "end_turn"}
    await agent.client.close()

    env = {**env_of(agent), **provider_env(fake_openai)}
    args = ["--model", MODEL] if continue_on == "openai" else []
    other = await make_agent([*AGENT, *args], env, cwd=agent.workspace)
    await other.initialize(EDITOR)
    await other.load_session(agent.session_id, agent.workspace)
    assert "It says alpha." in other.text_of(agent.session_id)
    assert await other.prompt(agent.session_id, "and now?") == {"stopReason": "end_turn"}
    if continue_on == "openai":
        assert other.text_of(agent.session_id).endswith("Still here.")
        roles = [m["role"] for m in fake_openai.chats()[-1].messages]
        assert roles[-5:] == ["user", "assistant", "tool", "assistant", "user"]
        assert fake_gemini.generate_requests == []
    else:
        assert other.text_of(agent.session_id).endswith("Gemini here.")
        [request] = fake_gemini.generate_requests
        parts = [p for c in request.contents for p in c.get("parts", [])]
        calls = [p["functionCall"]["name"] for p in parts if "functionCall" in p]
        answers = [p["functionResponse"]["name"] for p in parts if "functionResponse" in p]
        assert calls == answers == ["read_file"]


def test_p_with_only_an_openai_compatible_endpoint_and_no_google_key(tmp_path: Path) -> None:
    d = dirs(tmp_path)
    with FakeOpenAIServer([text_reply(["Hello ", "there."])]) as server:
        done = run_cli(
            d, ["-p", "hi", "--model", MODEL], api_key=None, env=dict(provider_env(server))
        )
        chats = server.chats()
    assert done.code == 0, done.stderr
    assert done.stdout.strip() == "Hello there."
    assert [c.model for c in chats] == ["fake-model"]
    # Google Search grounding is Gemini's: not offered without Google credentials, and said
    assert "google_web_search" not in chats[0].tool_names
    assert "No Google credentials: Google Search (google_web_search)" in done.stderr


def test_p_against_ollama_uses_its_host_and_v1(tmp_path: Path) -> None:
    d = dirs(tmp_path)
    with FakeOpenAIServer([text_reply(["from ", "ollama"])], flavor="ollama") as server:
        env = {"OLLAMA_HOST": server.root_url.removeprefix("http://"), **SCALE}
        done = run_cli(d, ["-p", "hi", "--model", "ollama/qwen2.5-coder"], api_key=None, env=env)
        chats = server.chats()
    assert done.code == 0, done.stderr
    assert done.stdout.strip() == "from ollama"
    assert [(c.path, c.model) for c in chats] == [("/v1/chat/completions", "qwen2.5-coder")]


def test_p_with_a_gemini_model_and_no_google_key_still_asks_for_credentials(
    tmp_path: Path,
) -> None:
    done = run_cli(dirs(tmp_path), ["-p", "hi"], api_key=None)
    assert done.code == 41
    assert "Authentication required" in done.stderr


async def test_the_quota_fallback_offers_the_other_providers_model_and_switches_to_it(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    """`model.fallbackModels` names another provider's model: a daily quota on Gemini asks
    the editor to continue there, and "for the rest of the session" stays there."""
    from tests.e2e.acp_client import selected
    from tests.fakes.gemini_server import per_day_quota_429

    fake_gemini.add(per_day_quota_429("gemini-2.5-pro"))
    fake_openai.add(text_reply(["from the other provider"]), text_reply(["still there"]))
    settings = {"model": {"fallbackModels": [MODEL]}}
    asked: list[dict[str, object]] = []

    def answer(params: dict[str, object]) -> dict[str, object]:
        asked.append(params)
        return selected("retry_always")

    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        EDITOR,
        env_extra=provider_env(fake_openai),
        files={".gemini/settings.json": json.dumps(settings)},
        permission_policy=answer,
    )
    assert await agent.prompt("hello") == {"stopReason": "end_turn"}
    assert agent.text().endswith("from the other provider")
    [question] = asked
    title = question["toolCall"]["title"]  # type: ignore[index]
    assert title == f"gemini-2.5-pro is out of quota — switch to {MODEL}?"
    [update] = agent.updates("config_option_update")[-1:]
    model = next(o for o in update["configOptions"] if o["id"] == "model")
    assert model["currentValue"] == MODEL

    assert await agent.prompt("again") == {"stopReason": "end_turn"}
    assert agent.text().endswith("still there")
    assert fake_gemini.models_called == ["gemini-2.5-pro"]
    assert [c.model for c in fake_openai.chats()] == ["fake-model", "fake-model"]


async def test_the_model_choice_lists_the_servers_models_and_switching_uses_them(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    settings = {"modelProviders": {"ollama": {"models": ["declared-one"], "contextWindow": 16384}}}
    user_settings(tmp_path, settings)  # providers are the user's own to declare
    async with FakeOpenAIServer(models=["fake-model", "other-model"]) as server:
        server.add(text_reply(["from other"]))
        agent = await start_agent(
            make_agent,
            tmp_path,
            fake_gemini,
            EDITOR,
            env_extra=provider_env(server),
        )

        def lists_the_servers(update: dict[str, object]) -> bool:
            if update.get("sessionUpdate") != "config_option_update":
                return False
            options = update["configOptions"]  # type: ignore[index]
            model = next(o for o in options if o["id"] == "model")  # type: ignore[union-attr]
            return "openai/other-model" in [c["value"] for c in model["options"]]

        update = await agent.client.wait_for_update(lists_the_servers, timeout=30)
        model = next(o for o in update["configOptions"] if o["id"] == "model")
        values = [c["value"] for c in model["options"]]
        assert values[0] == "auto" and "gemini-2.5-pro" in values  # Gemini's stay first
        assert {"openai/fake-model", "openai/other-model", "ollama/declared-one"} <= set(values)
        assert model["currentValue"] == "gemini-2.5-pro"

        await agent.client.set_config_option(agent.session_id, "model", "openai/other-model")
        assert await agent.prompt("hi") == {"stopReason": "end_turn"}
        assert agent.text() == "from other"
        assert [c.model for c in server.chats()] == ["other-model"]
        assert fake_gemini.generate_requests == []


async def test_model_hooks_see_gemini_shapes_and_usage_is_estimated_without_the_servers(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    """BeforeModel and AfterModel get the same `llm_request`/`llm_response` shapes on the
    other provider (AfterModel's rewrite is what the user sees); a server that sends no
    usage still gets the prompt's size estimated (compression keeps its threshold)."""
    from tests.e2e.test_hooks import calls, hook

    rewrite = {
        "hookSpecificOutput": {
            "llm_response": {"candidates": [{"content": {"parts": ["[reviewed]"]}}]}
        }
    }
    hooks = {
        "BeforeModel": [{"hooks": [{"type": "command", "command": hook(tmp_path, "before")}]}],
        "AfterModel": [
            {"hooks": [{"type": "command", "command": hook(tmp_path, "after", rewrite)}]}
        ],
    }
    fake_openai.add(Reply(text=["the raw answer"], usage=None))
    agent = await start(
        make_agent,
        tmp_path,
        fake_gemini,
        fake_openai,
        files={".gemini/settings.json": json.dumps({"hooks": hooks})},
    )
    assert await agent.prompt("hello") == {"stopReason": "end_turn"}
    [before] = calls(tmp_path, "before")
    assert set(before["llm_request"]) >= {"model", "messages", "config"}
    assert before["llm_request"]["model"] == MODEL
    after = calls(tmp_path, "after")
    assert after and all("candidates" in c["llm_response"] for c in after)
    assert "[reviewed]" in agent.text() and "raw answer" not in agent.text()
    [usage] = agent.updates("usage_update")[-1:]
    assert usage["used"] > 100 and usage["size"] == 128_000  # the system prompt's share


def test_demo_with_another_providers_model_runs_offline(tmp_path: Path) -> None:
    """`--demo` is a scripted model whatever `--model` names: it needs no key, no server."""
    done = run_cli(dirs(tmp_path), ["--demo", "--model", MODEL], api_key=None)
    assert done.code == 0, done.stderr
    assert 'prints "Hello, Ada!"' in done.stdout + done.stderr


async def test_an_mcp_tool_is_offered_with_an_acceptable_schema_and_runs(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    import sys

    from tests.fakes.mcp_server import SCRIPT

    settings = {
        "mcpServers": {"demo": {"command": sys.executable, "args": [SCRIPT], "trust": True}}
    }
    fake_openai.add(
        tool_reply(ToolCall("mcp_demo_echo", {"text": "back", "times": 2}, id="call_m")),
        text_reply(["echoed"]),
    )
    agent = await start(
        make_agent,
        tmp_path,
        fake_gemini,
        fake_openai,
        files={".gemini/settings.json": json.dumps(settings)},
        env_extra={**provider_env(fake_openai), "ADK_ACP_MCP_PROMPT_WAIT_S": "60"},
    )
    assert await agent.prompt("echo it") == {"stopReason": "end_turn"}
    assert agent.text() == "echoed"
    first, second = fake_openai.chats()
    [echo] = [t for t in first.body["tools"] if t["function"]["name"] == "mcp_demo_echo"]
    parameters = echo["function"]["parameters"]
    assert parameters["type"] == "object" and "$schema" not in parameters
    assert set(parameters["properties"]) == {"text", "times"}
    [answer] = [m for m in second.messages if m["role"] == "tool"]
    assert answer["tool_call_id"] == "call_m" and "back" in answer["content"]


async def test_a_length_finish_is_the_max_tokens_stop_as_on_gemini(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    fake_openai.add(Reply(text=["cut sh"], finish="length"))
    agent = await start(make_agent, tmp_path, fake_gemini, fake_openai)
    assert await agent.prompt("long answer please") == {"stopReason": "max_tokens"}
    assert agent.text().startswith("cut sh")


REVIEWER = """---
name: reviewer
description: Reviews a file.
display_name: Reviewer
tools: [read_file]
max_turns: 4
---
You review code, then call complete_task with a one-line verdict.
"""


async def test_a_subagent_runs_on_the_sessions_provider(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    fake_openai.add(
        tool_reply(ToolCall("reviewer", {"task": "review a.py"}, id="call_1")),
        tool_reply(ToolCall("read_file", {"file_path": "a.py"}, id="call_2")),
        tool_reply(ToolCall("complete_task", {"result": "a.py looks fine"}, id="call_3")),
        text_reply(["The reviewer says a.py looks fine."]),
    )
    files = {"a.py": "x = 1\n", ".gemini/agents/reviewer.md": REVIEWER}
    agent = await start(make_agent, tmp_path, fake_gemini, fake_openai, files=files)
    assert await agent.prompt("get a.py reviewed") == {"stopReason": "end_turn"}
    assert agent.text().endswith("The reviewer says a.py looks fine.")
    main_first, sub_first, sub_last, main_last = fake_openai.chats()
    assert sorted(sub_first.tool_names) == ["complete_task", "read_file"]
    assert sub_first.messages[0]["role"] == "system"
    assert "You review code" in sub_first.messages[0]["content"]
    assert {c.model for c in fake_openai.chats()} == {"fake-model"}
    answer = next(m for m in main_last.messages if m["role"] == "tool")
    assert answer["tool_call_id"] == "call_1" and "a.py looks fine" in answer["content"]
    assert fake_gemini.generate_requests == []


async def test_loop_detection_nudges_then_stops_a_looping_model_of_the_other_provider(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    same = ToolCall("read_file", {"file_path": "same.txt"})
    fake_openai.add(*[tool_reply(same) for _ in range(10)], text_reply(["a fresh answer"]))
    agent = await start(
        make_agent, tmp_path, fake_gemini, fake_openai, files={"same.txt": "nothing new\n"}
    )
    assert await agent.prompt("read same.txt until it changes") == {"stopReason": "end_turn"}
    chats = fake_openai.chats()
    assert len(chats) == 10
    nudge = "System: Potential loop detected. Details: Repeated tool call: read_file"
    users = [m["content"] for m in chats[5].messages if m["role"] == "user"]
    assert isinstance(users[-1], str) and users[-1].startswith(nudge)
    assert "loop" in agent.text() and "read_file" in agent.text()
    assert await agent.prompt("something else") == {"stopReason": "end_turn"}
    assert agent.text().endswith("a fresh answer")


async def test_compression_starts_at_the_providers_context_window(
    make_agent: MakeAgent,
    fake_gemini: FakeGeminiServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    """The threshold is half of the declared `contextWindow` (10 000 here): past it, the
    next prompt first compresses through the provider (summary, verification pass)."""
    one, two = (" ".join(f"{stem}-{i}" for i in range(30)) for stem in ("one", "two"))
    fake_openai.add(
        text_reply(["answer one"]),
        Reply(text=["answer two"], usage=(6_000, 20)),
        text_reply(["<state_snapshot>counted</state_snapshot>"]),
        text_reply(["<state_snapshot>the user counted to two</state_snapshot>"]),
        text_reply(["answer three"]),
    )
    user_settings(tmp_path, {"modelProviders": {"openai": {"contextWindow": 10_000}}})
    agent = await start(make_agent, tmp_path, fake_gemini, fake_openai)
    await agent.prompt(one)
    await agent.prompt(two)
    assert await agent.prompt("three") == {"stopReason": "end_turn"}
    assert "Compressed the conversation: about 6,000 →" in agent.text()
    summary, verify, main = fake_openai.chats()[-3:]
    assert summary.body.get("stream") is not True and verify.body.get("stream") is not True
    firsts = [m for m in main.messages if m["role"] != "system"]
    assert firsts[0]["content"] == "<state_snapshot>the user counted to two</state_snapshot>"
    assert firsts[-1] == {"role": "user", "content": "three"}
