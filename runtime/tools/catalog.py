"""The tool catalog: every built-in tool, by Gemini CLI's name, and its declarations.

`build_catalog` returns fresh tool objects (tools hold no per-session state: the
session's roots, Host, FileAccess and CommandRunner arrive in each call's
`ToolEnv`). `function_declarations` gives the genai-style declaration data
(name, description, JSON-schema parameters) as plain dicts; wrapping them for ADK
is the job of `runtime/adk/tools.py`.

What the rest of the engine needs from the built-in tools' modules is re-exported
here (only the catalog imports `builtin/`): the tools offered per mode, the
`ToolEnv.extra` keys of `save_memory` and its memory file (for `/memory add`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from runtime.tools.base import GcliTool
from runtime.tools.builtin.edit import ReplaceTool, WriteFileTool
from runtime.tools.builtin.glob import GlobTool
from runtime.tools.builtin.grep import GrepSearchTool
from runtime.tools.builtin.many_files import ReadManyFilesTool
from runtime.tools.builtin.memory import (
    MEMORY_SAVED_KEY,
    USER_HOME_KEY,
    SaveMemoryTool,
    append_fact,
    memory_file,
)
from runtime.tools.builtin.plan import EXIT_PLAN_MODE, ExitPlanModeTool
from runtime.tools.builtin.read import ListDirectoryTool, ReadFileTool
from runtime.tools.builtin.shell import RunShellCommandTool
from runtime.tools.builtin.todo import WriteTodosTool
from runtime.tools.builtin.web_fetch import WebFetchTool
from runtime.tools.builtin.web_search import CONTENT_GENERATOR_KEY, WebSearchTool

READ_ONLY_TOOLS = frozenset(
    {
        "read_file",
        "read_many_files",
        "list_directory",
        "glob",
        "grep_search",
        "write_todos",
        "google_web_search",
    }
)
"""Tools that change nothing outside the session (Gemini CLI allows them by default)."""

PLAN_MODE_TOOLS = frozenset({*READ_ONLY_TOOLS, "write_file", EXIT_PLAN_MODE})
"""The built-in tools plan mode offers: the read-only ones, `write_file` (plan files
only, by the policy) and `exit_plan_mode`; the other modes offer all but `exit_plan_mode`."""

__all__ = [
    "CONTENT_GENERATOR_KEY",
    "EXIT_PLAN_MODE",
    "MEMORY_SAVED_KEY",
    "PLAN_MODE_TOOLS",
    "READ_ONLY_TOOLS",
    "USER_HOME_KEY",
    "append_fact",
    "build_catalog",
    "function_declaration",
    "function_declarations",
    "memory_file",
]


def build_catalog(*, include_web_fetch: bool = True) -> dict[str, GcliTool]:
    """Every built-in tool, keyed by name, in a stable order."""
    tools: list[GcliTool] = [
        ReadFileTool(),
        ReadManyFilesTool(),
        ListDirectoryTool(),
        GlobTool(),
        GrepSearchTool(),
        WriteFileTool(),
        ReplaceTool(),
        RunShellCommandTool(),
        WriteTodosTool(),
        SaveMemoryTool(),
        ExitPlanModeTool(),
    ]
    if include_web_fetch:
        tools.append(WebFetchTool())
    tools.append(WebSearchTool())
    return {tool.name: tool for tool in tools}


def function_declaration(tool: GcliTool) -> dict[str, Any]:
    """`{name, description, parameters}` for one tool (parameters: a JSON schema object)."""
    return {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters_schema(),
    }


def function_declarations(
    tools: Mapping[str, GcliTool] | Iterable[GcliTool] | None = None,
) -> list[dict[str, Any]]:
    """Declarations for `tools` (a catalog, or any tools), or the full default catalog."""
    if tools is None:
        tools = build_catalog()
    items = tools.values() if isinstance(tools, Mapping) else tools
    return [function_declaration(tool) for tool in items]
