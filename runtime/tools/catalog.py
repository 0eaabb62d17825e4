"""The tool catalog: every built-in tool, by Gemini CLI's name, and its declarations.

`build_catalog` returns fresh tool objects (tools hold no per-session state: the
session's roots, Host, FileAccess and CommandRunner arrive in each call's
`ToolEnv`). `function_declarations` gives the genai-style declaration data
(name, description, JSON-schema parameters) as plain dicts; wrapping them for ADK
is the job of `adk_tool.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from runtime.tools.base import GcliTool
from runtime.tools.builtin.edit import ReplaceTool, WriteFileTool
from runtime.tools.builtin.glob import GlobTool
from runtime.tools.builtin.grep import GrepSearchTool
from runtime.tools.builtin.many_files import ReadManyFilesTool
from runtime.tools.builtin.memory import SaveMemoryTool
from runtime.tools.builtin.plan import ExitPlanModeTool
from runtime.tools.builtin.read import ListDirectoryTool, ReadFileTool
from runtime.tools.builtin.shell import RunShellCommandTool
from runtime.tools.builtin.todo import WriteTodosTool
from runtime.tools.builtin.web_fetch import WebFetchTool
from runtime.tools.builtin.web_search import WebSearchTool

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
