"""Unit tests of the headless pieces (`runtime/headless/`): the exit-code mapping, stdin
joining, escape stripping, the statistics, and the terminal's questions and answers."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from runtime.headless.output import RunError, StreamJsonOutput, TextOutput, strip_escapes
from runtime.headless.run import end_error, prompt_with_stdin, read_piped_stdin
from runtime.headless.stats import RunStats, changed_lines
from runtime.headless.terminal import (
    AutoAnswers,
    TerminalHost,
    choose,
    describe,
    options_line,
)
from runtime.host import PermissionRequest
from runtime.protocol import (
    AgentEndEvent,
    DisplayDiff,
    ErrorEvent,
    MessageEvent,
    TextPart,
    ToolDisplay,
    ToolRequestEvent,
    ToolResponseEvent,
    ToolUpdateEvent,
    UsageEvent,
)
from runtime.tools.scheduling.approvals import PERMISSION_OPTIONS


def _end(reason: str, **data: object) -> AgentEndEvent:
    return AgentEndEvent(id="1", stream_id="s", reason=reason, data=data or None)  # type: ignore[arg-type]


def _error(message: str, *, fatal: bool, **meta: object) -> ErrorEvent:
    return ErrorEvent(
        id="2", stream_id="s", status="INTERNAL", message=message, fatal=fatal, meta=meta or None
    )


# ---------------------------------------------------------------- exit codes


def test_end_reasons_map_to_gemini_cli_exit_codes() -> None:
    assert end_error(_end("completed"), None, None) is None
    cancelled = end_error(_end("aborted"), None, None)
    assert cancelled == RunError("FatalCancellationError", "Operation cancelled.", 130)
    stop = _error("Stopped: 3 turns", fatal=False, code="MAX_TURNS_EXCEEDED")
    turns = end_error(_end("max_turns", code="MAX_TURNS_EXCEEDED"), None, stop)
    assert turns == RunError("FatalTurnLimitedError", "Stopped: 3 turns", 53)
    tokens = end_error(_end("max_budget", code="MAX_TOKENS_EXCEEDED"), None, None)
    assert tokens is not None and tokens.code == 53
    cut = end_error(_end("max_budget", finishReason="MAX_TOKENS"), None, None)
    assert cut is not None and (cut.type, cut.code) == ("MAX_TOKENS", 1)
    refusal = end_error(_end("refusal", finishReason="SAFETY"), None, None)
    assert refusal is not None and refusal.code == 1 and "SAFETY" in refusal.message
    fatal = _error("quota gone", fatal=True, code="QUOTA")
    failed = end_error(_end("failed"), fatal, None)
    assert failed == RunError("QUOTA", "quota gone", 1)
    unknown = end_error(_end("failed"), None, None)
    assert unknown is not None and unknown.code == 1


# ---------------------------------------------------------------- stdin


def test_piped_text_comes_first_then_a_blank_line_then_the_prompt() -> None:
    assert prompt_with_stdin("explain", "data\n") == "data\n\n\nexplain"
    assert prompt_with_stdin("explain", "") == "explain"
    assert prompt_with_stdin("", "only stdin") == "only stdin"


def test_piped_stdin_is_read_to_its_end_and_bounded(tmp_path: Path) -> None:
    read, write = os.pipe()
    os.write(write, "héllo".encode())
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        assert read_piped_stdin(stream, wait_first=True) == "héllo"
    with open(os.devnull, "rb") as empty:
        assert read_piped_stdin(empty, wait_first=False) == ""


def test_a_silent_open_stdin_counts_as_nothing_piped() -> None:
    read, write = os.pipe()
    try:
        with os.fdopen(read, "rb") as stream:
            assert read_piped_stdin(stream, wait_first=True) == ""
    finally:
        os.close(write)


# ---------------------------------------------------------------- output


def test_escape_sequences_are_removed_from_model_text() -> None:
    text = "a\x1b[31mred\x1b[0m b\x1b]0;title\x07 c\x1b]8;;http://x\x1b\\link\x07\ttab\nnl\x08"
    assert strip_escapes(text) == "ared b clink\ttab\nnl"


def test_text_output_keeps_stdout_for_the_answer() -> None:
    out, err = io.StringIO(), io.StringIO()
    text = TextOutput(out, err, RunStats())
    text.event(MessageEvent(id="1", stream_id="s", role="agent", content=(TextPart(text="Hi"),)))
    display = ToolDisplay(title="Read a.txt", kind="read")
    text.event(ToolRequestEvent(id="2", stream_id="s", request_id="c", name="read_file", args={}))
    text.event(
        ToolResponseEvent(
            id="3",
            stream_id="s",
            request_id="c",
            name="read_file",
            display=display,
            data={"output": "boom\nmore"},
            is_error=True,
        )
    )
    sub = MessageEvent(
        id="4", stream_id="s", role="agent", content=(TextPart(text="sub"),), thread_id="t"
    )
    text.event(sub)  # a subagent's own text is not the answer
    text.end(RunError("X", "it failed", 1))
    assert out.getvalue() == "Hi\n"
    assert err.getvalue() == "✗ Read a.txt: boom\n[ERROR] it failed\n"


def test_stream_json_result_carries_the_error() -> None:
    out = io.StringIO()
    stream = StreamJsonOutput(out, io.StringIO(), RunStats())
    stream.begin("sid", "gemini-2.5-pro", "hi")
    stream.end(RunError("FatalCancellationError", "Operation cancelled.", 130))
    init, user, result = (json.loads(line) for line in out.getvalue().splitlines())
    assert (init["type"], init["session_id"], init["model"]) == ("init", "sid", "gemini-2.5-pro")
    assert (user["role"], user["content"]) == ("user", "hi")
    assert result["status"] == "error"
    assert result["error"] == {"type": "FatalCancellationError", "message": "Operation cancelled."}


# ---------------------------------------------------------------- stats


def test_stats_count_tokens_tools_decisions_and_lines() -> None:
    now = [0.0]
    stats = RunStats(clock=lambda: now[0])
    stats.prompt_sent()
    now[0] = 0.5
    stats.observe(UsageEvent(id="1", stream_id="s", model="m", input_tokens=100, output_tokens=7))
    stats.observe(ToolRequestEvent(id="2", stream_id="s", request_id="c1", name="replace", args={}))
    stats.decided("c1", "accept")
    stats.observe(ToolUpdateEvent(id="3", stream_id="s", request_id="c1"))
    now[0] = 0.75
    diff = DisplayDiff(path="/w/a.py", before_text="a\nb\nc\n", after_text="a\nB\nc\nd\n")
    display = ToolDisplay(title="Edit a.py", kind="edit", content=(diff,))
    stats.observe(
        ToolResponseEvent(id="4", stream_id="s", request_id="c1", name="replace", display=display)
    )
    stats.observe(
        ToolRequestEvent(id="5", stream_id="s", request_id="c2", name="read_file", args={})
    )
    stats.observe(ToolUpdateEvent(id="6", stream_id="s", request_id="c2"))
    stats.observe(ToolResponseEvent(id="7", stream_id="s", request_id="c2", name="read_file"))
    now[0] = 1.0
    stats.observe(
        UsageEvent(
            id="8", stream_id="s", model="m", input_tokens=50, output_tokens=3, cached_tokens=20
        )
    )
    metrics = stats.metrics()
    model = metrics["models"]["m"]
    assert model["api"] == {"totalRequests": 2, "totalErrors": 0, "totalLatencyMs": 750}
    assert model["tokens"]["prompt"] == 150 and model["tokens"]["input"] == 130
    assert model["tokens"]["total"] == 160
    tools = metrics["tools"]
    assert tools["totalCalls"] == 2 and tools["totalDurationMs"] == 250
    assert tools["totalDecisions"] == {"accept": 1, "reject": 0, "modify": 0, "auto_accept": 1}
    assert metrics["files"] == {"totalLinesAdded": 2, "totalLinesRemoved": 1}
    streamed = stats.stream_stats()
    assert (streamed["total_tokens"], streamed["tool_calls"], streamed["duration_ms"]) == (
        160,
        2,
        1000,
    )


def test_changed_lines_of_a_new_file() -> None:
    assert changed_lines(DisplayDiff(path="n", before_text=None, after_text="x\ny\n")) == (2, 0)


# ---------------------------------------------------------------- terminal


def _request(**extra: object) -> PermissionRequest:
    fields: dict[str, object] = {
        "tool_call_id": "c1",
        "title": "Edit a.py",
        "kind": "edit",
        "options": PERMISSION_OPTIONS,
    }
    fields.update(extra)
    return PermissionRequest(**fields)  # type: ignore[arg-type]


def _picked(answer: str) -> str | None:
    option = choose(PERMISSION_OPTIONS, answer)
    return option.option_id if option is not None else None


def test_answers_by_key_number_or_name() -> None:
    assert _picked("y\n") == "proceed_once"
    assert _picked("A") == "proceed_always"
    assert _picked("no") == "cancel"
    assert _picked("5") == "reject_always"
    assert _picked("reject always") == "reject_always"
    assert _picked("maybe") is None and _picked("") is None
    line = options_line(PERMISSION_OPTIONS)
    assert line.startswith("[y/1] Allow  [a/2] Allow for this session  [3] ")


def test_the_question_shows_the_diff_relative_to_the_workspace() -> None:
    diff = DisplayDiff(path="/w/src/a.py", before_text="x = 1\n", after_text="x = 2\n")
    shown = describe(_request(content=(diff,)), Path("/w"))
    assert shown.startswith("? Edit a.py\n--- a/src/a.py\n+++ b/src/a.py\n")
    assert "-x = 1\n+x = 2\n" in shown
    command = describe(_request(kind="execute", title="Run", raw_input={"command": "ls -l"}))
    assert command.endswith("$ ls -l\n")


async def test_the_question_reaches_the_terminal_without_escape_sequences() -> None:
    out = io.StringIO()
    hostile = _request(
        kind="execute", title="Run \x1b]0;pwned\x07x", raw_input={"command": "a\x1b[2Jb"}
    )
    await TerminalHost(AutoAnswers("n", out, "test"), out).request_permission(hostile)
    assert "\x1b" not in out.getvalue() and "$ ab" in out.getvalue()


@pytest.mark.parametrize(
    ("reply", "option", "decision"), [("y", "proceed_once", "accept"), ("n", "cancel", "reject")]
)
async def test_terminal_host_answers_and_reports_the_decision(
    reply: str, option: str, decision: str
) -> None:
    out = io.StringIO()
    decisions: list[tuple[str, str]] = []
    host = TerminalHost(
        AutoAnswers(reply, out, "test"), out, on_decision=lambda c, d: decisions.append((c, d))
    )
    outcome = await host.request_permission(_request())
    assert outcome.option_id == option
    assert decisions == [("c1", decision)]
    assert f"Answer: {reply}  (test)" in out.getvalue()


async def test_end_of_input_rejects() -> None:
    class Closed(AutoAnswers):
        async def answer(self) -> str | None:
            return None

    out = io.StringIO()
    outcome = await TerminalHost(Closed("", out, ""), out).request_permission(_request())
    assert outcome.option_id == "cancel" and "no more input" in out.getvalue()
