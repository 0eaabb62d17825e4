"""Tool output masking over ACP (issue #4): after the model has read three big files,
the oldest output goes to a file under HOME/.gemini/tmp/ and the next requests carry a
`<tool_output_masked>` snippet for it, the same one every time."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.resilience_harness import MakeAgent, function_responses, start
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e

TAG = "<tool_output_masked>"
PATH_RE = re.compile(r"Full output available at: (\S+)\n")


def output_of(response: dict[str, object]) -> str:
    body = response.get("response")
    return str(body.get("output", "")) if isinstance(body, dict) else ""


async def test_old_big_tool_outputs_reach_the_model_as_masked_snippets(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    fake_gemini.add(
        *[function_call_response("read_file", {"file_path": f"{n}.txt"}) for n in "abc"],
        text_response("read them"),
        text_response("still here"),
    )
    agent = await start(make_agent, tmp_path, fake_gemini)
    for name in "abc":  # ~45k tokens each
        lines = (f"{name}-{i:05d} {'lorem ipsum dolor sit amet ' * 3}\n" for i in range(1800))
        (agent.workspace / f"{name}.txt").write_text("".join(lines))

    assert await agent.prompt("read a.txt, b.txt and c.txt") == {"stopReason": "end_turn"}
    assert [c.path for c in agent.client.files.calls][:3] == [
        str(agent.workspace / f"{n}.txt") for n in "abc"
    ]
    fourth = fake_gemini.generate_requests[3]
    a, b, c = (output_of(r) for r in function_responses(fourth))
    assert a.startswith(TAG) and a.count(TAG) == 1
    assert TAG not in b and TAG not in c
    assert "a-00000" in a and "a-01799" in a  # the head and tail of the output are kept
    match = PATH_RE.search(a)
    assert match is not None
    saved = Path(match.group(1))
    assert saved.is_relative_to(agent.home / ".gemini" / "tmp")
    assert saved.parent.name.startswith("session-")
    assert "a-00900" in saved.read_text()  # the full output is on disk

    assert await agent.prompt("anything else?") == {"stopReason": "end_turn"}
    fifth = fake_gemini.generate_requests[4]
    a5, b5, c5 = (output_of(r) for r in function_responses(fifth))
    assert a5 == a  # the same snippet, not masked again
    assert b5.startswith(TAG) and TAG not in c5
    assert sorted(p.name for p in saved.parent.iterdir()) == sorted(
        [saved.name, Path(PATH_RE.search(b5).group(1)).name]  # type: ignore[union-attr]
    )
