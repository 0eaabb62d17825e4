"""The built-in rules (tier 1), Gemini CLI's default policies.

| priority | rule | modes |
|---|---|---|
| 10 | write_file, replace, run_shell_command, web_fetch, save_memory → ask_user | all |
| 15 | write_file, replace → allow | autoEdit |
| 50 | read-only tools → allow | all |
| 60 | everything → deny (plan mode is read-only) | plan |
| 70 | read-only tools → allow; write_file of a plan file → allow | plan |
| 70 | exit_plan_mode → allow (it asks the user itself) | all |
| 999 | everything → allow | yolo |

Shell rules are still subject to the heuristics of `shell_safety` (redirection,
dangerous commands) in every mode but yolo. In autoEdit the engine runs a shell
command unasked when `read_only` classifies it as read-only (no rule here does).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from runtime.tools.policy.rules import PolicyRule, Tier
from runtime.tools.policy.shell_safety import SHELL_TOOL_NAME

READ_ONLY_TOOLS: tuple[str, ...] = (
    "read_file",
    "read_many_files",
    "glob",
    "grep_search",
    "list_directory",
    "write_todos",
    "google_web_search",
    "list_mcp_resources",
    "read_mcp_resource",
)
EDIT_TOOLS: tuple[str, ...] = ("write_file", "replace")
ASKING_TOOLS: tuple[str, ...] = (*EDIT_TOOLS, SHELL_TOOL_NAME, "web_fetch", "save_memory")

PLAN_MODE_DENY_MESSAGE = (
    "Plan mode is read-only: edits and commands are not allowed. "
    "Present the plan to the user, who can switch to another mode to carry it out."
)


def _rule(**fields: object) -> PolicyRule:
    return PolicyRule.model_validate({**fields, "tier": Tier.DEFAULT, "source": "default"})


def plan_file_pattern(plans_dir: Path) -> str:
    """`argsPattern` matching a `file_path` of a Markdown file directly inside `plans_dir`."""
    quoted = json.dumps(str(plans_dir), ensure_ascii=False)[1:-1]
    return '"file_path":"' + re.escape(quoted) + r'[/\\]+[^"/\\]+\.md"'


def default_rules(*, plans_dir: Path | None = None) -> tuple[PolicyRule, ...]:
    """The built-in rules; with `plans_dir`, plan mode may write Markdown plans there."""
    rules = [
        _rule(toolName=list(ASKING_TOOLS), decision="ask_user", priority=10),
        _rule(toolName=list(EDIT_TOOLS), decision="allow", priority=15, modes=["autoEdit"]),
        _rule(toolName=list(READ_ONLY_TOOLS), decision="allow", priority=50),
        _rule(
            toolName="*",
            decision="deny",
            priority=60,
            modes=["plan"],
            denyMessage=PLAN_MODE_DENY_MESSAGE,
        ),
        _rule(toolName=list(READ_ONLY_TOOLS), decision="allow", priority=70, modes=["plan"]),
        _rule(toolName="*", decision="allow", priority=999, modes=["yolo"]),
        # exit_plan_mode asks the user itself (the plan, and which mode to go on in)
        _rule(toolName="exit_plan_mode", decision="allow", priority=70),
    ]
    if plans_dir is not None:
        rules.append(
            _rule(
                toolName="write_file",
                argsPattern=plan_file_pattern(plans_dir),
                decision="allow",
                priority=70,
                modes=["plan"],
            )
        )
    return tuple(rules)
