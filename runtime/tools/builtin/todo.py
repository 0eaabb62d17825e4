"""`write_todos`: the model's task list, shown to the user as the session's plan.

Each call replaces the whole list. The plan entries (`ToolResult.plan`, which the
server sends as an ACP `plan` update) are `{content, status, priority}` with
ACP's statuses pending / in_progress / completed. Cancelled todos are left out of
the plan: ACP has no "cancelled" status, and showing a dropped task as completed
would tell the user something false. The model's summary still lists them.
Gemini CLI's todos carry no priority; every entry gets "medium".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

from runtime.protocol import DisplayText, ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.builtin.args import ArgError
from runtime.tools.builtin.results import error_result

TodoStatus = Literal["pending", "in_progress", "completed", "cancelled"]
STATUSES: tuple[TodoStatus, ...] = ("pending", "in_progress", "completed", "cancelled")
_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}


@dataclass(frozen=True)
class Todo:
    description: str
    status: TodoStatus


def parse_todos(args: dict[str, Any]) -> list[Todo]:
    raw = args.get("todos")
    if not isinstance(raw, list):
        raise ArgError("The 'todos' parameter must be a list of {description, status} objects.")
    todos: list[Todo] = []
    for number, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            raise ArgError(f"Todo {number} must be an object with 'description' and 'status'.")
        description = item.get("description")
        if not isinstance(description, str) or not description.strip():
            raise ArgError(f"Todo {number} needs a non-empty 'description'.")
        status = item.get("status")
        if status not in STATUSES:
            raise ArgError(
                f"Todo {number} has status {status!r}; use one of: {', '.join(STATUSES)}."
            )
        todos.append(Todo(description.strip(), cast(TodoStatus, status)))
    active = sum(1 for t in todos if t.status == "in_progress")
    if active > 1:
        raise ArgError(f"Only one todo may be 'in_progress' at a time; {active} are.")
    return todos


def plan_entries(todos: list[Todo]) -> list[dict[str, str]]:
    """ACP plan entries; cancelled todos are dropped (see the module docstring)."""
    return [
        {"content": t.description, "status": t.status, "priority": "medium"}
        for t in todos
        if t.status != "cancelled"
    ]


def summary(todos: list[Todo]) -> str:
    if not todos:
        return "The todo list is now empty."
    lines = [
        f"{n}. {_MARKS[t.status]} {t.description} ({t.status})"
        for n, t in enumerate(todos, start=1)
    ]
    return "The todo list is updated. Current list:\n" + "\n".join(lines)


class WriteTodosTool(GcliTool):
    """`write_todos`: replace the task list shown to the user."""

    name = "write_todos"
    kind = "think"
    description = (
        "Replaces the list of subtasks for the current request, which the user sees as the "
        "plan. Use it for work with several steps: list the steps, keep exactly one "
        "'in_progress' while working on it, mark steps 'completed' as soon as they are done, "
        "and 'cancelled' when they are no longer needed. Send the whole list every time."
    )

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The complete, updated list of todos.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "description": {"type": "string", "description": "What the task is."},
                            "status": {
                                "type": "string",
                                "enum": list(STATUSES),
                                "description": "pending, in_progress, completed or cancelled.",
                            },
                        },
                        "required": ["description", "status"],
                    },
                }
            },
            "required": ["todos"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        try:
            parse_todos(args)
        except ArgError as exc:
            return str(exc)
        return None

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        raw = args.get("todos")
        count = len(raw) if isinstance(raw, list) else 0
        return ToolDisplay(
            title=f"Update todo list ({count} item{'s' if count != 1 else ''})", kind="think"
        )

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        try:
            todos = parse_todos(args)
        except ArgError as exc:
            return error_result(str(exc), "invalid_arguments")
        text = summary(todos)
        return ToolResult(
            llm_content=text,
            display=(DisplayText(text=text),),
            plan=plan_entries(todos),
            raw_output={
                "todos": [{"description": t.description, "status": t.status} for t in todos]
            },
        )
