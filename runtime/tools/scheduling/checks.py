"""What the scheduler checks and decides before any I/O: argument shape against
the tool's schema, workspace paths, the policy contract, truncation and callback
types."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from runtime.tools.base import GcliTool, ToolEnv
from runtime.tools.policy.rules import Decision, PolicyDecision, PolicyRule
from runtime.tools.policy.shell_safety import SHELL_TOOL_NAME


class PolicyChecker(Protocol):
    """The part of `PolicyEngine` the scheduler uses."""

    def evaluate(
        self,
        tool_name: str,
        args: dict[str, Any],
        *,
        mode: str,
        interactive: bool = True,
        mcp_server: str | None = None,
        read_only: bool = False,
    ) -> PolicyDecision: ...

    def add_session_rule(
        self, tool_name: str, args: dict[str, Any], *, mode: str, decision: Decision = "allow"
    ) -> PolicyRule: ...

    def save_rule(self, tool_name: str, args: dict[str, Any], *, mode: str) -> PolicyRule: ...


ModeChangeCallback = Callable[[str], Awaitable[None] | None]


CancelCallback = Callable[[], Awaitable[None] | None]


def default_should_truncate(name: str, tool: GcliTool) -> bool:
    """Shell output and MCP results are cut when too large (other tools page themselves)."""
    return name == SHELL_TOOL_NAME or name.startswith("mcp_") or tool.mcp_server is not None


PATH_ARGUMENTS: tuple[str, ...] = ("file_path", "dir_path", "path")


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def _type_ok(value: Any, expected: str | list[str]) -> bool:
    names = [expected] if isinstance(expected, str) else expected
    for name in names:
        types = _JSON_TYPES.get(name)
        if types is None:
            return True  # a type we do not check
        if isinstance(value, bool) and name in ("integer", "number"):
            continue
        if isinstance(value, types):
            return True
    return False


def schema_error(schema: dict[str, Any], args: dict[str, Any]) -> str | None:
    """The first problem of `args` against a tool's top-level JSON schema, or None.

    Checks required properties, the JSON types of given properties and, when the
    schema says `additionalProperties: false`, unknown properties.
    """
    properties: dict[str, Any] = schema.get("properties") or {}
    missing = [name for name in schema.get("required") or [] if name not in args]
    if missing:
        return f"missing required parameter(s): {', '.join(missing)}"
    for name, value in args.items():
        spec = properties.get(name)
        if spec is None:
            if schema.get("additionalProperties") is False:
                return f"unknown parameter {name!r}"
            continue
        expected = spec.get("type") if isinstance(spec, dict) else None
        if expected is not None and not _type_ok(value, expected):
            return f"parameter {name!r} must be of type {expected}"
    return None


def _within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def outside_workspace(args: dict[str, Any], env: ToolEnv) -> str | None:
    """A message when a path argument resolves outside every workspace root (and the
    project temp dir), else None. Relative paths are taken from the first root."""
    allowed = [root.resolve() for root in env.roots] + [env.temp_dir.resolve()]
    for key in PATH_ARGUMENTS:
        value = args.get(key)
        if not isinstance(value, str) or not value:
            continue
        candidate = Path(value).expanduser()
        resolved = (candidate if candidate.is_absolute() else env.cwd / candidate).resolve()
        if not any(_within(resolved, base) for base in allowed):
            roots = ", ".join(str(r) for r in env.roots)
            return f"Path {value} is outside the workspace ({roots}); only its files can be used."
    return None
