"""Per-call truncation of large tool output (`docs/gemini-cli-behaviours.md#truncation`)."""

from __future__ import annotations

from pathlib import Path

from runtime.services.truncation import output_file_path, truncate_output


def text_of(length: int) -> str:
    return "".join("0123456789"[i % 10] for i in range(length))


def test_output_within_the_threshold_is_untouched(tmp_path: Path) -> None:
    content = text_of(40_000)
    result = truncate_output(
        content, output_dir=tmp_path, session_id="s", tool_name="t", call_id="c"
    )
    assert result.text == content and result.saved_path is None and result.omitted == 0
    assert list(tmp_path.iterdir()) == []


def test_large_output_is_cut_and_saved_in_full(tmp_path: Path) -> None:
    content = text_of(1_234_567)
    result = truncate_output(
        content,
        output_dir=tmp_path,
        session_id="abc",
        tool_name="run_shell_command",
        call_id="call-1",
    )
    path = tmp_path / "tool-outputs" / "session-abc" / "run_shell_command_call-1.txt"
    assert result.saved_path == path
    assert path.read_text(encoding="utf-8") == content
    assert result.omitted == 1_194_567
    assert result.text == (
        "Output too large. Showing first 8,000 and last 32,000 characters. "
        f"For full output see: {path}\n"
        f"{content[:8_000]}\n\n... [1,194,567 characters omitted] ...\n\n{content[-32_000:]}"
    )


def test_file_name_is_deterministic_and_safe(tmp_path: Path) -> None:
    path = output_file_path(tmp_path, session_id="a/b", tool_name="mcp_x:y", call_id="../id 1")
    assert path == tmp_path / "tool-outputs" / "session-a_b" / "mcp_x_y_.._id_1.txt"
    assert path.parent.parent == tmp_path / "tool-outputs"
    content = text_of(50_000)
    first = truncate_output(
        content, output_dir=tmp_path, session_id="s", tool_name="t", call_id="c"
    )
    second = truncate_output(
        content, output_dir=tmp_path, session_id="s", tool_name="t", call_id="c"
    )
    assert first == second


def test_a_failed_save_still_truncates(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("", encoding="utf-8")
    result = truncate_output(
        text_of(50_000), output_dir=blocker, session_id="s", tool_name="t", call_id="c"
    )
    assert result.saved_path is None
    assert result.text.startswith(
        "Output too large. Showing first 8,000 and last 32,000 characters. "
        "The full output could not be saved:"
    )
    assert "... [10,000 characters omitted] ..." in result.text
