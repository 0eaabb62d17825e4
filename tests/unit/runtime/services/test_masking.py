"""ToolOutputMaskingService thresholds, formats, file names, idempotence; token estimates."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from google.genai import types

from runtime.models.tokens import (
    estimate_contents_tokens,
    estimate_part_tokens,
    estimate_text_tokens,
    estimate_tokens,
)
from runtime.services.masking import (
    MaskResult,
    ToolOutputMaskingService,
    output_file_name,
)


def tool_response(name: str, call_id: str | None, response: dict[str, object]) -> types.Content:
    fr = types.FunctionResponse(id=call_id, name=name, response=response)
    return types.Content(role="user", parts=[types.Part(function_response=fr)])


def tool_call(name: str, call_id: str) -> types.Content:
    fc = types.FunctionCall(id=call_id, name=name, args={})
    return types.Content(role="model", parts=[types.Part(function_call=fc)])


def sized(tokens: int) -> str:
    """An ASCII output of about `tokens` tokens (4 characters per token)."""
    return "x" * (4 * tokens)


def history(*outputs: tuple[str, int], latest: types.Content | None = None) -> list[types.Content]:
    """A conversation with one tool round per (tool name, tokens) output, oldest first."""
    contents = [types.Content(role="user", parts=[types.Part(text="go")])]
    for i, (name, tokens) in enumerate(outputs):
        contents.append(tool_call(name, f"call-{i}"))
        contents.append(tool_response(name, f"call-{i}", {"output": sized(tokens)}))
    contents.append(latest or types.Content(role="model", parts=[types.Part(text="done")]))
    return contents


@pytest.fixture
def service(tmp_path: Path) -> ToolOutputMaskingService:
    return ToolOutputMaskingService(tmp_path / "tool-outputs")


def masked_ids(result: MaskResult) -> list[str]:
    return sorted(m.function_call_id or "" for m in result.masked)


# ------------------------------------------------------------------- thresholds


def test_nothing_prunable_below_30k(service: ToolOutputMaskingService) -> None:
    # newest 50k protected (crossing output included in prunable): 20k + 20k + 20k + 9k
    contents = history(
        ("read_file", 9_000), ("read_file", 20_000), ("read_file", 20_000), ("read_file", 9_000)
    )
    result = service.mask(contents)
    assert result.masked == [] and result.tokens_saved == 0
    assert all(a is b for a, b in zip(result.contents, contents, strict=True))
    assert not service.output_dir.exists()


def test_masks_older_outputs_once_prunable_reaches_30k(service: ToolOutputMaskingService) -> None:
    contents = history(*(("read_file", 20_000),) * 4)
    result = service.mask(contents)
    # newest first: call-3 (20k), call-2 (40k) protected; call-1 crosses 50k → prunable; call-0
    assert masked_ids(result) == ["call-0", "call-1"]
    assert result.tokens_saved > 39_000
    assert result.masked_count == 2


def test_protection_is_exactly_50k(tmp_path: Path) -> None:
    service = ToolOutputMaskingService(tmp_path, protection_threshold=100, min_prunable_threshold=1)
    contents = history(("read_file", 1_000), ("read_file", 1_000))
    result = service.mask(contents)
    assert masked_ids(result) == ["call-0", "call-1"]  # call-1 alone already crosses 100


def test_outputs_within_protection_stay(service: ToolOutputMaskingService) -> None:
    contents = history(("read_file", 24_000), ("read_file", 24_000))
    assert service.mask(contents).masked == []


def test_latest_turn_is_skipped(tmp_path: Path) -> None:
    latest = tool_response("read_file", "newest", {"output": sized(40_000)})
    contents = history(("read_file", 40_000), latest=latest)
    assert ToolOutputMaskingService(tmp_path).mask(contents).masked == []
    unprotected = ToolOutputMaskingService(tmp_path, protect_latest_turn=False)
    assert masked_ids(unprotected.mask(contents)) == ["call-0"]


def test_exempt_tools_are_neither_counted_nor_masked(service: ToolOutputMaskingService) -> None:
    contents = history(
        ("ask_user", 40_000),
        ("activate_skill", 40_000),
        ("enter_plan_mode", 40_000),
        ("exit_plan_mode", 40_000),
        ("read_file", 40_000),
    )
    assert service.mask(contents).masked == []


# ---------------------------------------------------------------------- formats


def test_general_preview_and_snippet_format(service: ToolOutputMaskingService) -> None:
    contents = history(*(("read_file", 20_000),) * 4)
    result = service.mask(contents)
    item = next(m for m in result.masked if m.function_call_id == "call-0")
    stored = json.dumps({"output": sized(20_000)}, indent=2)
    path = service.output_dir / "read_file_call-0.txt"
    assert item.file_path == path
    assert path.read_text(encoding="utf-8") == stored
    preview = stored[:250] + "\n... [TRUNCATED] ...\n" + stored[-250:]
    assert item.new_response == {
        "output": f"<tool_output_masked>\n{preview}\n\nOutput too large. Full output "
        f"available at: {path}\n</tool_output_masked>"
    }
    parts = result.contents[item.content_index].parts
    assert parts is not None
    response = parts[item.part_index].function_response
    assert response is not None
    assert response.response == item.new_response
    assert response.id == "call-0" and response.name == "read_file"
    assert item.name == "read_file"


def test_shell_preview_keeps_sections_and_shortens_output(tmp_path: Path) -> None:
    lines = [f"line {i:02d} " + "y" * 90 for i in range(30)]
    output = (
        "Command: make test\nDirectory: (root)\nOutput: "
        + "\n".join(lines)
        + "\nError: (none)\nExit Code: 2"
    )
    contents = [
        tool_call("run_shell_command", "sh-1"),
        tool_response("run_shell_command", "sh-1", {"output": output, "exitCode": 2}),
        types.Content(role="model", parts=[types.Part(text="done")]),
    ]
    service = ToolOutputMaskingService(tmp_path, protection_threshold=0, min_prunable_threshold=1)
    (item,) = service.mask(contents).masked
    expected_preview = (
        "Command: make test\nDirectory: (root)\n"
        "Output: "
        + "\n".join(lines[:10])
        + "\n\n... [10 lines omitted] ...\n\n"
        + "\n".join(lines[-10:])
        + "\nError: (none)\nExit Code: 2\n[Exit Code: 2]"
    )
    snippet = item.new_response["output"]
    assert snippet == (
        f"<tool_output_masked>\n{expected_preview}\n\nOutput too large. Full output available "
        f"at: {tmp_path / 'run_shell_command_sh-1.txt'}\n</tool_output_masked>"
    )


def test_shell_output_without_sections_uses_line_preview(tmp_path: Path) -> None:
    lines = [f"row {i} " + "z" * 80 for i in range(25)]
    contents = [
        tool_response("run_shell_command", "sh-2", {"output": "\n".join(lines)}),
        types.Content(role="model", parts=[types.Part(text="done")]),
    ]
    service = ToolOutputMaskingService(tmp_path, protection_threshold=0, min_prunable_threshold=1)
    (item,) = service.mask(contents).masked
    assert "\n\n... [5 lines omitted] ...\n\n" in item.new_response["output"]


# ------------------------------------------------------- files, idempotence, input


def test_file_names_are_deterministic() -> None:
    assert output_file_name("read_file", "Call/42", "x") == "read_file_call_42.txt"
    digest = hashlib.sha256(b"content").hexdigest()[:16]
    assert output_file_name("MCP:Tool", None, "content") == f"mcp_tool_{digest}.txt"
    assert output_file_name("", None, "content") == f"unknown_tool_{digest}.txt"


def test_same_input_gives_same_files(tmp_path: Path) -> None:
    contents = history(*(("read_file", 20_000),) * 4)
    first = ToolOutputMaskingService(tmp_path).mask(contents)
    second = ToolOutputMaskingService(tmp_path).mask(contents)
    assert [m.file_path for m in first.masked] == [m.file_path for m in second.masked]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "read_file_call-0.txt",
        "read_file_call-1.txt",
    ]


def test_idempotent(service: ToolOutputMaskingService) -> None:
    contents = history(*(("read_file", 20_000),) * 6)
    once = service.mask(contents)
    assert once.masked_count == 4
    twice = service.mask(once.contents)
    assert twice.masked == []


def test_input_is_not_mutated(service: ToolOutputMaskingService) -> None:
    contents = history(*(("read_file", 20_000),) * 4)
    snapshot = [c.model_dump() for c in contents]
    result = service.mask(contents)
    assert [c.model_dump() for c in contents] == snapshot
    changed = {m.content_index for m in result.masked}
    for index, (old, new) in enumerate(zip(contents, result.contents, strict=True)):
        assert (old is new) is (index not in changed)


def test_no_call_id_uses_content_hash(tmp_path: Path) -> None:
    text = sized(40_000)
    contents = [
        tool_response("web_fetch", None, {"output": text}),
        tool_response("read_file", "r", {"output": sized(45_000)}),
        types.Content(role="model", parts=[types.Part(text="done")]),
    ]
    (item,) = ToolOutputMaskingService(tmp_path).mask(contents).masked
    stored = json.dumps({"output": text}, indent=2)
    digest = hashlib.sha256(stored.encode()).hexdigest()[:16]
    assert item.function_call_id is None
    assert item.file_path.name == f"web_fetch_{digest}.txt"


# ----------------------------------------------------------------------- tokens


def test_text_tokens() -> None:
    assert estimate_text_tokens("abcd") == 1.0
    assert estimate_text_tokens("é") == pytest.approx(1.3)
    assert estimate_tokens([types.Part(text="abcdefgh"), types.Part(text="日本")]) == 4
    assert estimate_text_tokens("é" * 100_001) == pytest.approx(100_001 / 4)


def test_function_response_tokens() -> None:
    part = types.Part(function_response=types.FunctionResponse(name="abcd", response={"a": 1}))
    # len("abcd") + len('{"a":1}') = 4 + 7
    assert estimate_part_tokens(part) == pytest.approx(11 / 4)


def test_media_and_other_parts() -> None:
    image = types.Part(inline_data=types.Blob(mime_type="image/png", data=b"123"))
    pdf = types.Part(file_data=types.FileData(mime_type="application/pdf", file_uri="gs://x"))
    call = types.Part(function_call=types.FunctionCall(name="f", args={}))
    assert estimate_part_tokens(image) == 3_000
    assert estimate_part_tokens(pdf) == 25_800
    assert estimate_part_tokens(call) > 0
    contents = [types.Content(role="user", parts=[image, types.Part(text="abcd")])]
    assert estimate_contents_tokens(contents) == 3_001


def test_outputs_of_contents_sent_before_are_kept_not_looked_at_again(tmp_path: Path) -> None:
    """`mask(contents, seen)` finds what `mask(contents)` finds while the history only
    grows at its end, and starts afresh when the leading contents are not the same."""
    import random

    rng = random.Random(5)
    kept = ToolOutputMaskingService(
        tmp_path / "a", protection_threshold=300, min_prunable_threshold=200
    )
    fresh_dir = tmp_path / "b"
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text="go")])]
    seen = 0
    for i in range(120):
        name = rng.choice(["read_file", "run_shell_command", "ask_user"])
        contents += [
            tool_call(name, f"c{i}"),
            tool_response(name, f"c{i}", {"output": sized(rng.randint(1, 120))}),
        ]
        if rng.random() < 0.1:  # a rebuilt history: new objects, and nothing counts as seen
            contents = [c.model_copy() for c in contents]
            seen = 0
        fresh = ToolOutputMaskingService(
            fresh_dir, protection_threshold=300, min_prunable_threshold=200
        )
        expected = fresh._candidates(contents)
        assert kept._candidates(contents, seen) == expected, i
        seen = len(contents) - rng.randint(0, 2)
