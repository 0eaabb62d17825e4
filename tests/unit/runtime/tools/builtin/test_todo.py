"""write_todos."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.protocol import DisplayText
from runtime.tools.builtin.todo import WriteTodosTool
from tests.unit.runtime.tools.fakes import make_env


async def test_plan_entries_and_summary(tmp_path: Path) -> None:
    todos = [
        {"description": "Read the code", "status": "completed"},
        {"description": "Fix the bug", "status": "in_progress"},
        {"description": "Try plan B", "status": "cancelled"},
        {"description": "Write tests", "status": "pending"},
    ]
    result = await WriteTodosTool().execute({"todos": todos}, make_env(tmp_path / "ws"))
    assert not result.is_error
    assert result.plan == [
        {"content": "Read the code", "status": "completed", "priority": "medium"},
        {"content": "Fix the bug", "status": "in_progress", "priority": "medium"},
        {"content": "Write tests", "status": "pending", "priority": "medium"},
    ]  # cancelled todos leave the plan
    assert result.llm_content == (
        "The todo list is updated. Current list:\n"
        "1. [x] Read the code (completed)\n"
        "2. [~] Fix the bug (in_progress)\n"
        "3. [-] Try plan B (cancelled)\n"
        "4. [ ] Write tests (pending)"
    )
    assert result.display == (DisplayText(text=result.llm_content),)


async def test_an_empty_list_clears_the_plan(tmp_path: Path) -> None:
    result = await WriteTodosTool().execute({"todos": []}, make_env(tmp_path / "ws"))
    assert result.plan == [] and result.llm_content == "The todo list is now empty."


@pytest.mark.parametrize(
    ("todos", "needle"),
    [
        ("not a list", "must be a list"),
        (["text"], "must be an object"),
        ([{"description": " ", "status": "pending"}], "non-empty 'description'"),
        ([{"description": "x", "status": "done"}], "status 'done'"),
        (
            [
                {"description": "a", "status": "in_progress"},
                {"description": "b", "status": "in_progress"},
            ],
            "Only one",
        ),
    ],
)
async def test_invalid_todos(tmp_path: Path, todos: object, needle: str) -> None:
    tool = WriteTodosTool()
    message = tool.validate({"todos": todos})
    assert message is not None and needle in message
    result = await tool.execute({"todos": todos}, make_env(tmp_path / "ws"))
    assert result.is_error and needle in result.llm_content and result.plan is None


def test_display(tmp_path: Path) -> None:
    display = WriteTodosTool().display(
        {"todos": [{"description": "a", "status": "pending"}]}, make_env(tmp_path / "ws")
    )
    assert (display.title, display.kind) == ("Update todo list (1 item)", "think")
