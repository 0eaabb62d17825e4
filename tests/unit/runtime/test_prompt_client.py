"""The client's system prompt (ACP `systemPrompt`) in the agent's system instruction."""

from __future__ import annotations

from pathlib import Path

from runtime.prompt import ClientPrompt, SystemPrompt, build_system_prompt

CORE = "You are an interactive coding agent"


def test_append_keeps_the_agent_instructions_and_adds_the_client_text_last(
    tmp_path: Path,
) -> None:
    (tmp_path / "GEMINI.md").write_text("Use tabs.\n")
    text = build_system_prompt(tmp_path, tmp_path / "h", client=ClientPrompt("append", "Be brief."))
    assert text.startswith(CORE)
    assert text.index("Use tabs.") < text.index("Be brief.")


def test_override_replaces_the_agent_instructions_but_keeps_environment_and_context(
    tmp_path: Path,
) -> None:
    (tmp_path / "GEMINI.md").write_text("Use tabs.\n")
    prompt = SystemPrompt(tmp_path, tmp_path / "h", client=ClientPrompt("override", "Be a poet."))
    assert prompt.text.startswith("Be a poet.") and CORE not in prompt.text
    assert str(tmp_path) in prompt.text and "Use tabs." in prompt.text
    prompt.reload()  # /memory reload keeps it
    assert prompt.text.startswith("Be a poet.")


def test_the_recorded_form_round_trips_and_rejects_other_shapes() -> None:
    given = ClientPrompt("override", "x")
    assert ClientPrompt.from_record(given.as_record()) == given
    assert ClientPrompt.from_record({"mode": "merge", "text": "x"}) is None
    assert ClientPrompt.from_record({"mode": "append", "text": ""}) is None
    assert ClientPrompt.from_record(None) is None
