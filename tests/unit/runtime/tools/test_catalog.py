"""The catalog and its function declarations."""

from __future__ import annotations

import json
from pathlib import Path

from runtime.protocol import ToolDisplay
from runtime.tools.base import GcliTool
from runtime.tools.catalog import (
    READ_ONLY_TOOLS,
    build_catalog,
    function_declaration,
    function_declarations,
)
from tests.unit.runtime.tools.fakes import make_env

GEMINI_TOOLS = {
    "read_file": {"file_path", "start_line", "end_line"},
    "read_many_files": {"include", "exclude", "recursive"},
    "list_directory": {"dir_path", "ignore", "file_filtering_options"},
    "glob": {"pattern", "dir_path", "case_sensitive", "respect_git_ignore"},
    "grep_search": {
        "pattern",
        "dir_path",
        "include_pattern",
        "exclude_pattern",
        "names_only",
        "case_sensitive",
        "fixed_strings",
        "context",
        "total_max_matches",
    },
    "write_file": {"file_path", "content"},
    "replace": {"file_path", "instruction", "old_string", "new_string", "allow_multiple"},
    "run_shell_command": {"command", "description", "dir_path", "is_background"},
    "write_todos": {"todos"},
    "web_fetch": {"prompt"},
    "google_web_search": {"query"},
    "save_memory": {"fact"},
    "exit_plan_mode": {"plan_path"},  # offered in plan mode only
}


def test_catalog_has_gemini_cli_names_and_parameters() -> None:
    catalog = build_catalog()
    assert set(catalog) == set(GEMINI_TOOLS)
    for name, tool in catalog.items():
        assert isinstance(tool, GcliTool) and tool.name == name
        schema = tool.parameters_schema()
        assert schema["type"] == "object"
        assert set(schema["properties"]) == GEMINI_TOOLS[name], name
        assert set(schema["required"]) <= set(schema["properties"])
    assert "web_fetch" not in build_catalog(include_web_fetch=False)
    assert READ_ONLY_TOOLS <= set(catalog)


def test_declarations_are_plain_json() -> None:
    declarations = function_declarations()
    assert [d["name"] for d in declarations] == list(build_catalog())
    json.dumps(declarations)  # plain data only
    for declaration in declarations:
        assert set(declaration) == {"name", "description", "parameters"}
        assert len(declaration["description"]) > 40
    read_file = build_catalog()["read_file"]
    assert function_declaration(read_file)["parameters"]["required"] == ["file_path"]
    assert [d["name"] for d in function_declarations([read_file])] == ["read_file"]


def test_every_tool_displays_without_io_even_with_bad_args(tmp_path: Path) -> None:
    env = make_env(tmp_path / "ws")
    for tool in build_catalog().values():
        for args in (
            {},
            {"file_path": 3, "pattern": None, "command": 5, "todos": "x", "include": 7},
        ):
            display = tool.display(args, env)
            assert isinstance(display, ToolDisplay) and display.title
            assert display.kind == tool.kind
