"""Headless runs end to end (issue #19, point 8): the real `adk-acp -p` process.

Against the fake Gemini API (or a `--fake-responses` script): the three output
formats (text, json, stream-json, with Gemini CLI's shapes), approvals decided by
the policy without a terminal (yolo runs them, default mode denies asked calls and
says how to allow them), approvals asked on a terminal (a pty, answered y or n),
text piped on stdin put before the prompt, and Gemini CLI's exit codes.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.e2e import model_script
from tests.e2e.headless_harness import full_env, run_cli, run_in_pty, write_script
from tests.e2e.spine import AGENT, dirs
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    HangPoint,
    error_response,
    function_call_response,
    text_response,
    usage,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


def _function_response(fake: FakeGeminiServer, request: int) -> dict[str, object]:
    """The function response the model got in generate request `request`."""
    contents = fake.generate_requests[request].contents
    parts = [p for c in contents for p in c.get("parts", []) if "functionResponse" in p]
    response: dict[str, object] = parts[-1]["functionResponse"]["response"]
    return response


def test_text_streams_the_answer_to_stdout_and_nothing_else(
    tmp_path: Path, fake_gemini_thread: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    fake_gemini_thread.add(text_response(["Hel", "lo ", "there."], usage=usage(12, 3)))
    done = run_cli(d, ["-p", "say hello"], fake_gemini_thread)
    assert done.code == 0, done.stderr
    assert done.stdout == "Hello there.\n"
    assert fake_gemini_thread.generate_requests[0].last_user_text == "say hello"
    assert "Traceback" not in done.stderr


def test_json_gives_the_final_answer_with_stats_and_the_recorded_session(
    tmp_path: Path, fake_gemini_thread: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    (d.workspace / "notes.txt").write_text("alpha\nbeta\n")
    fake_gemini_thread.add(
        function_call_response(
            "read_file", {"file_path": "notes.txt"}, text="Reading.", usage=usage(100, 10)
        ),
        text_response(["The file has ", "two lines."], usage=usage(140, 6, cached=40)),
    )
    done = run_cli(d, ["-p", "how many lines?", "--output-format", "json"], fake_gemini_thread)
    assert done.code == 0, done.stderr
    body = done.json()
    assert body["response"] == "The file has two lines."  # the answer after the last tool
    assert "error" not in body
    (model,) = body["stats"]["models"].values()
    assert model["api"]["totalRequests"] == 2
    assert model["tokens"]["prompt"] == 240
    assert model["tokens"]["candidates"] == 16
    assert model["tokens"]["cached"] == 40
    assert model["tokens"]["input"] == 200
    tools = body["stats"]["tools"]
    assert tools["totalCalls"] == 1 and tools["totalSuccess"] == 1
    assert tools["byName"]["read_file"]["decisions"]["auto_accept"] == 1
    assert "alpha" in str(_function_response(fake_gemini_thread, 1))
    # the run is recorded like an editor's session, under its id
    records = list((d.home / ".local" / "state" / "adk-acp" / "sessions").rglob("*.jsonl"))
    assert [r.stem for r in records] == [body["session_id"]]


def test_stream_json_reports_each_step_as_a_json_line(
    tmp_path: Path, fake_gemini_thread: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    (d.workspace / "notes.txt").write_text("alpha\n")
    fake_gemini_thread.add(
        function_call_response("read_file", {"file_path": "notes.txt"}, usage=usage(50, 5)),
        text_response(["It says ", "alpha."], usage=usage(60, 4)),
    )
    done = run_cli(d, ["-p", "read it", "-o", "stream-json"], fake_gemini_thread)
    assert done.code == 0, done.stderr
    events = done.lines()
    types = [e["type"] for e in events]
    assert types[:2] == ["init", "message"] and types[-1] == "result"
    assert "tool_use" in types and types.index("tool_use") < types.index("tool_result")
    init, user = events[0], events[1]
    assert init["session_id"] and init["model"] == "gemini-2.5-pro"
    assert user == {**user, "role": "user", "content": "read it"}
    (use,) = [e for e in events if e["type"] == "tool_use"]
    assert use["tool_name"] == "read_file" and use["parameters"] == {"file_path": "notes.txt"}
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["tool_id"] == use["tool_id"] and result["status"] == "success"
    assert "alpha" in result["output"]
    chunks = [e for e in events if e["type"] == "message" and e["role"] == "assistant"]
    assert all(c["delta"] is True for c in chunks)
    assert "".join(c["content"] for c in chunks) == "It says alpha."
    final = events[-1]
    assert final["status"] == "success" and "error" not in final
    stats = final["stats"]
    assert (stats["input_tokens"], stats["output_tokens"], stats["tool_calls"]) == (110, 9, 1)
    assert stats["total_tokens"] == 119 and stats["duration_ms"] > 0
    assert all("timestamp" in e for e in events)


def test_yolo_runs_edits_and_commands_without_asking(tmp_path: Path) -> None:
    d = dirs(tmp_path)
    script = write_script(
        tmp_path / "script.jsonl",
        [
            model_script.call("write_file", {"file_path": "new.txt", "content": "made\n"}),
            model_script.call("run_shell_command", {"command": "cp new.txt copy.txt"}),
            model_script.text("Both done."),
        ],
    )
    done = run_cli(
        d,
        ["-p", "make files", "--approval-mode", "yolo", "--fake-responses", str(script)],
        api_key=None,
    )
    assert done.code == 0, done.stderr
    assert (d.workspace / "new.txt").read_text() == "made\n"
    assert (d.workspace / "copy.txt").read_text() == "made\n"
    assert done.stdout.endswith("Both done.\n")
    assert "✓ Run `cp new.txt copy.txt`" in done.stderr


def test_without_a_terminal_asked_calls_are_denied_with_a_clear_message(
    tmp_path: Path, fake_gemini_thread: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    fake_gemini_thread.add(
        function_call_response("run_shell_command", {"command": "touch made.txt"}),
        function_call_response("write_file", {"file_path": "w.txt", "content": "x"}),
        text_response("I was not allowed to."),
    )
    done = run_cli(d, ["-p", "make a file"], fake_gemini_thread)
    assert done.code == 0, done.stderr  # denied calls are the model's business, as in Gemini CLI
    assert not (d.workspace / "made.txt").exists()
    assert not (d.workspace / "w.txt").exists()
    assert done.stdout.endswith("I was not allowed to.\n")
    assert "needs approval, which cannot be asked without a terminal" in done.stderr
    assert "--approval-mode yolo" in done.stderr
    assert "--approval-mode autoEdit" in done.stderr  # for the edit
    denied = _function_response(fake_gemini_thread, 1)
    assert "approval" in str(denied["error"])


def test_piped_stdin_comes_before_the_prompt(
    tmp_path: Path, fake_gemini_thread: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    fake_gemini_thread.add(text_response("Summary."), text_response("Only stdin."))
    done = run_cli(d, ["-p", "summarize this"], fake_gemini_thread, stdin="line one\nline two\n")
    assert done.code == 0, done.stderr
    expected = "line one\nline two\n\n\nsummarize this"
    assert fake_gemini_thread.generate_requests[0].last_user_text == expected
    alone = run_cli(d, ["-p", ""], fake_gemini_thread, stdin="just this")
    assert alone.code == 0, alone.stderr
    assert fake_gemini_thread.generate_requests[1].last_user_text == "just this"


def test_terminal_asks_and_yes_runs_the_edit(tmp_path: Path) -> None:
    d = dirs(tmp_path)
    (d.workspace / "greet.txt").write_text("hello world\n")
    script = write_script(
        tmp_path / "script.jsonl",
        [
            model_script.call(
                "replace",
                {
                    "file_path": "greet.txt",
                    "instruction": "capitalize",
                    "old_string": "hello world",
                    "new_string": "Hello World",
                },
            ),
            model_script.text("Edited."),
        ],
    )
    done = run_in_pty(
        d, ["-p", "capitalize", "--fake-responses", str(script)], [("Answer: ", "y\n")]
    )
    assert done.code == 0, done.stdout
    assert (d.workspace / "greet.txt").read_text() == "Hello World\n"
    assert "-hello world\n+Hello World" in done.stdout  # the diff was shown before asking
    assert "[y/1] Allow" in done.stdout and "[n/4] Reject" in done.stdout
    assert "✓ Edit greet.txt" in done.stdout and "Edited." in done.stdout


def test_terminal_no_rejects_the_command_and_the_model_is_told(
    tmp_path: Path, fake_gemini_thread: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    fake_gemini_thread.add(
        function_call_response("run_shell_command", {"command": "touch made.txt"}),
        text_response("Fine, I left it."),
    )
    done = run_in_pty(
        d, ["-p", "make a file"], [("Answer: ", "maybe\n"), ("Answer: ", "n\n")], fake_gemini_thread
    )
    assert done.code == 0, done.stdout
    assert not (d.workspace / "made.txt").exists()
    assert "$ touch made.txt" in done.stdout
    assert "Please answer with one of the keys" in done.stdout  # 'maybe' was asked again
    assert "rejected" in str(_function_response(fake_gemini_thread, 1)["error"])
    assert "Fine, I left it." in done.stdout


# ---------------------------------------------------------------- exit codes


def test_exit_codes_for_input_credentials_and_configuration(tmp_path: Path) -> None:
    d = dirs(tmp_path)
    empty = run_cli(d, ["-p", "", "-o", "json"])
    assert empty.code == 42
    assert empty.json()["error"]["type"] == "FatalInputError"
    no_key = run_cli(d, ["-p", "hi", "-o", "json"], api_key=None)
    assert no_key.code == 41
    assert no_key.json()["error"] == {
        "type": "FatalAuthenticationError",
        "message": no_key.json()["error"]["message"],
        "code": 41,
    }
    assert "GEMINI_API_KEY" in no_key.json()["error"]["message"]
    missing = run_cli(d, ["-p", "hi", "--fake-responses", str(tmp_path / "nope.jsonl")])
    assert missing.code == 52, missing.stderr
    assert "nope.jsonl" in missing.stderr
    settings = d.workspace / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{not json")
    broken = run_cli(d, ["-p", "hi", "-o", "stream-json"])
    assert broken.code == 52
    (result,) = broken.lines()
    assert result["type"] == "result" and result["status"] == "error"
    assert (
        result["error"]["type"] == "FatalConfigError"
        and "settings.json" in result["error"]["message"]
    )
    wrong = run_cli(d, ["-o", "json"])
    assert wrong.code == 2 and "goes with -p" in wrong.stderr


def test_exit_code_53_when_the_turn_limit_is_reached(tmp_path: Path) -> None:
    d = dirs(tmp_path)
    (d.workspace / "a.txt").write_text("a\n")
    script = write_script(
        tmp_path / "script.jsonl",
        [
            model_script.call("read_file", {"file_path": "a.txt"}),
            model_script.call("read_file", {"file_path": "a.txt"}),
            model_script.text("never reached"),
        ],
    )
    done = run_cli(
        d, ["-p", "loop", "--max-turns", "1", "-o", "json", "--fake-responses", str(script)]
    )
    assert done.code == 53, done.stderr
    error = done.json()["error"]
    assert error["type"] == "FatalTurnLimitedError" and "limit" in error["message"]


def test_exit_code_1_when_the_model_request_fails(
    tmp_path: Path, fake_gemini_thread: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    fake_gemini_thread.add(error_response(400, "INVALID_ARGUMENT", "The request was bad."))
    done = run_cli(d, ["-p", "hi"], fake_gemini_thread)
    assert done.code == 1
    assert "[ERROR]" in done.stderr and "bad" in done.stderr
    assert done.stdout == ""


def test_ctrl_c_cancels_with_exit_code_130(
    tmp_path: Path, fake_gemini_thread: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    hang = HangPoint()
    fake_gemini_thread.add(text_response(["Start", "never"]).hang_after(1, hang))
    proc = subprocess.Popen(
        [*AGENT, "-p", "wait", "-o", "stream-json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=d.workspace,
        env=full_env(d, fake_gemini_thread),
    )
    try:
        assert hang.wait_reached(timeout=90), "the model call never started"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        hang.release()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    result = json.loads(out.splitlines()[-1])
    assert result["status"] == "error" and result["error"]["type"] == "FatalCancellationError"


def test_help_lists_the_headless_flags() -> None:
    done = subprocess.run([*AGENT, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    for flag in ("-p TEXT, --prompt TEXT", "--output-format", "stream-json", "--demo"):
        assert flag in done.stdout


def test_help_lists_the_subcommands_one_line_each() -> None:
    """`adk-acp --help` names `serve` and `connect` (issue 33.7), each with its line."""
    done = subprocess.run([*AGENT, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    commands = done.stdout.split("commands:", 1)[1].splitlines()
    for command in ("adk-acp serve ", "adk-acp connect ", "adk-acp warm ", "adk-acp --login",
                    "adk-acp -p "):  # fmt: skip
        (line,) = [each for each in commands if each.strip().startswith(command)]
        assert len(line.split(None, 3)) == 4, line  # the command, then what it does
