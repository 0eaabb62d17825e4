"""`google_web_search` end to end: the real agent process, the fake Gemini server.

The model calls the tool; the tool's own request (Gemini CLI's `web-search` config:
the query alone, `tools: [{googleSearch: {}}]`) gets a grounded answer; the cited
text and its sources reach the model's next request, and the editor sees a `search`
call that ran without asking (in plan mode too). A failed search is told to the model;
a cancel abandons the search's request.
A headless run scripted by `--fake-responses` carries the grounding the same way.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.e2e import model_script
from tests.e2e.headless_harness import run_cli, write_script
from tests.e2e.spine import dirs
from tests.e2e.tools_harness import (
    EDITOR,
    MakeAgent,
    function_responses,
    response_text,
    start_agent,
)
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    HangPoint,
    function_call_response,
    grounded_response,
    merge_chunks,
    server_error_500,
    text_response,
)

pytestmark = pytest.mark.e2e

QUERY = "latest Python release"
ANSWER = "Python 3.14 – released in October 2025. It adds template strings."
SOURCES = [
    ("python.org", "https://www.python.org/downloads/"),
    ("PEP 745", "https://peps.python.org/pep-0745/"),
]


async def test_search_result_reaches_the_model_cited_with_sources(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    first_sentence = len("Python 3.14 – released in October 2025.".encode())  # "–" is 3 bytes
    fake_gemini.add(
        function_call_response("google_web_search", {"query": QUERY}),
        grounded_response(
            ANSWER,
            SOURCES,
            [(0, first_sentence, [0, 1]), (first_sentence + 1, len(ANSWER.encode()), [1])],
            queries=[QUERY],
        ),
        text_response("Python 3.14 is the latest."),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, permission_policy="queue")

    assert await agent.prompt("What is the latest Python?") == {"stopReason": "end_turn"}

    main, searching, after = fake_gemini.generate_requests
    assert "google_web_search" in main.function_declaration_names
    # the tool's own request: Gemini CLI's web-search model config, the query alone
    assert searching.uses_google_search and not main.uses_google_search
    assert searching.model == "gemini-3-flash-preview" and not searching.stream
    assert searching.contents == [{"role": "user", "parts": [{"text": QUERY}]}]
    assert searching.body["tools"] == [{"googleSearch": {}}]
    assert searching.body["generationConfig"] == {"temperature": 0, "topP": 1}
    assert searching.function_declaration_names == []

    (response,) = function_responses(after)
    assert response["name"] == "google_web_search"
    assert response_text(response) == (
        f'Web search results for "{QUERY}":\n\n'
        "Python 3.14 – released in October 2025.[1][2] It adds template strings.[2]\n\n"
        "Sources:\n[1] python.org (https://www.python.org/downloads/)\n"
        "[2] PEP 745 (https://peps.python.org/pep-0745/)"
    )
    assert "error" not in response["response"]

    # the editor: a search call, titled with the query, run without asking
    assert agent.client.permission_requests == []
    (call,) = agent.tool_calls()
    assert call["kind"] == "search"
    assert call["title"] == f'Searching the web for: "{QUERY}"'
    assert call["rawInput"] == {"query": QUERY}
    final = agent.final(call["toolCallId"])
    assert final["status"] == "completed"
    assert final["content"] == [
        {
            "type": "content",
            "content": {"type": "text", "text": f'Search results for "{QUERY}" returned.'},
        }
    ]
    assert agent.text() == "Python 3.14 is the latest."


async def test_a_failed_search_is_told_to_the_model_and_the_turn_goes_on(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response("google_web_search", {"query": QUERY}),
        server_error_500("search backend down"),
        text_response("The search failed."),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)

    assert await agent.prompt("What is the latest Python?") == {"stopReason": "end_turn"}

    after = fake_gemini.generate_requests[-1]
    (response,) = function_responses(after)
    text = response_text(response)
    assert "error" in response["response"]
    assert text.startswith(f'Error: Error during web search for query "{QUERY}": ')
    assert "search backend down" in text
    (call,) = agent.tool_calls()
    assert agent.final(call["toolCallId"])["status"] == "failed"
    assert agent.text() == "The search failed."


async def test_cancel_during_the_search_abandons_its_request(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    hang = HangPoint()
    fake_gemini.add(
        function_call_response("google_web_search", {"query": QUERY}),
        grounded_response(ANSWER, SOURCES).hang_after(0, hang),
    )
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR)
    pending = agent.client.start_prompt(agent.session_id, "search")
    await hang.wait_reached_async()
    await agent.client.cancel(agent.session_id)
    assert await pending.result(10) == {"stopReason": "cancelled"}
    # the search's request was abandoned: the agent closed its connection
    await asyncio.get_running_loop().run_in_executor(None, hang.client_gone.wait, 10)
    assert hang.client_gone.is_set() and not hang.released.is_set()
    (call,) = agent.tool_calls()
    assert agent.final(call["toolCallId"])["status"] == "failed"

    fake_gemini.add(text_response("ready"))
    assert await agent.prompt("next") == {"stopReason": "end_turn"}


async def test_plan_mode_offers_the_search_and_runs_it_without_asking(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.add(
        function_call_response("google_web_search", {"query": QUERY}),
        grounded_response(ANSWER, SOURCES[:1]),
        text_response("Planned."),
    )
    agent = await start_agent(
        make_agent,
        tmp_path,
        fake_gemini,
        EDITOR,
        args=["--approval-mode", "plan"],
        permission_policy="queue",
    )

    assert await agent.prompt("plan an upgrade") == {"stopReason": "end_turn"}

    planning, _, after = fake_gemini.generate_requests
    assert "google_web_search" in planning.function_declaration_names
    (response,) = function_responses(after)
    assert response_text(response).endswith(
        "\n\nSources:\n[1] python.org (https://www.python.org/downloads/)"
    )
    assert agent.client.permission_requests == []


def test_a_fake_responses_script_carries_the_grounding(tmp_path: Path) -> None:
    """`--fake-responses` (Gemini CLI's JSONL): the search's line is a `generateContent`
    response whose candidate has `groundingMetadata`, as the API sends it."""
    d = dirs(tmp_path)
    grounded = merge_chunks(grounded_response(ANSWER, SOURCES, [(0, 5, [1])]).chunks)
    script = write_script(
        tmp_path / "script.jsonl",
        [
            model_script.call("google_web_search", {"query": QUERY}),
            json.dumps({"method": "generateContent", "response": grounded}),
            model_script.text("Searched."),
        ],
    )
    done = run_cli(
        d, ["-p", "search it", "-o", "stream-json", "--fake-responses", str(script)], api_key=None
    )
    assert done.code == 0, done.stderr
    (result,) = [e for e in done.lines() if e["type"] == "tool_result"]
    assert result["status"] == "success"
    assert result["output"].startswith(f'Web search results for "{QUERY}":\n\nPytho[2]n 3.14')
    assert result["output"].endswith("[2] PEP 745 (https://peps.python.org/pep-0745/)")
