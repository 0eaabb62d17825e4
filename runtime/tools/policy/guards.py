"""What the policy engine applies over the rules' verdict (issue: auto edit never
auto-runs a command that writes, runs or reads secrets; plan mode is read-only for
MCP tools too).

- `asked_anyway`: reading a file that may hold secrets, or editing one under
  `.git/`, is asked in every mode (yolo too) unless a rule naming the call's
  arguments allows it.
- `read_only_shell`: in auto edit, a shell command that no workspace, user or
  session rule decided runs unasked when `read_only` classifies it as read-only, or
  when the session's commands run in a sandbox.
- `GitWrites`: the workspaces in which something was written under `.git/`; from
  then on git commands are not read-only there (hooks and config run code).
- `default_deny`: plan mode's built-in catch-all denied the call (not a user rule).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from runtime.tools.policy.defaults import EDIT_TOOLS
from runtime.tools.policy.read_only import ShellContext, read_only_problem
from runtime.tools.policy.read_only_args import glob_may_match_secret
from runtime.tools.policy.rules import PolicyDecision, PolicyRule, Tier
from runtime.tools.policy.sensitive import (
    is_git_metadata,
    is_sensitive_file,
    sensitive_reads,
    writes_git_dir,
)
from runtime.tools.policy.shell_safety import SHELL_TOOL_NAME
from runtime.tools.policy.shell_words import Word, shell_tokens

logger = logging.getLogger(__name__)


def allows_exactly(rule: PolicyRule | None) -> bool:
    """A rule that names the call's arguments (not just the tool) may allow a secret read."""
    return rule is not None and rule.decision == "allow" and rule.args_pattern is not None


def default_deny(verdict: PolicyDecision) -> bool:
    """Denied by a built-in rule (plan mode's catch-all), not by the user's own."""
    rule = verdict.rule
    return verdict.decision == "deny" and (rule is None or rule.tier == Tier.DEFAULT)


def asked_anyway(tool_name: str, args: dict[str, Any], verdict: PolicyDecision) -> PolicyDecision:
    """Secret reads and edits under `.git/` are asked in every mode, unless a rule that
    names the call's arguments allows it."""
    if verdict.decision != "allow" or allows_exactly(verdict.rule):
        return verdict
    secrets = sensitive_reads(tool_name, args)
    if secrets:
        return PolicyDecision(
            decision="ask_user",
            rule=None,
            reason=f"{', '.join(secrets)} may hold secrets; reading it is always asked",
        )
    if tool_name in EDIT_TOOLS and is_git_metadata(args.get("file_path")):
        return PolicyDecision(
            decision="ask_user",
            rule=None,
            reason="files under .git/ can make git run code; writing one is always asked",
        )
    return verdict


class GitWrites:
    """The workspaces (resolved roots) in which a file under `.git/` was written by this
    process: every session of the workspace asks for git commands from then on (a
    subagent's write counts for its parent too)."""

    _roots: set[Path] = set()
    _lock = threading.Lock()

    @classmethod
    def mark(cls, root: Path) -> None:
        with cls._lock:
            cls._roots.add(root)

    @classmethod
    def written(cls, root: Path) -> bool:
        with cls._lock:
            return root in cls._roots


def shell_context(root: Path, args: dict[str, Any]) -> ShellContext:
    """Where a `run_shell_command` call runs (`dir_path` from the workspace root)."""
    dir_path = args.get("dir_path")
    cwd = root
    if isinstance(dir_path, str) and dir_path:
        cwd = (root / dir_path).resolve()
    search_path = tuple(os.environ.get("PATH", "").split(os.pathsep))
    return ShellContext(
        roots=(root,), cwd=cwd, git_written=GitWrites.written(root), search_path=search_path
    )


def read_only_shell(
    root: Path, args: dict[str, Any], verdict: PolicyDecision, sandboxed: bool = False
) -> PolicyDecision:
    """Auto edit: a read-only command that only the built-in rules decided runs unasked;
    with a sandbox, any such command does (confined)."""
    command = args.get("command")
    if verdict.decision != "ask_user" or not isinstance(command, str):
        return verdict
    if verdict.rule is not None and verdict.rule.tier != Tier.DEFAULT:
        return verdict
    problem = read_only_problem(command.strip(), shell_context(root, args))
    if problem is not None and sandboxed and not names_secret(command):
        return PolicyDecision(
            decision="allow", rule=None, reason=f"runs in the sandbox (not read-only: {problem})"
        )
    if problem is not None:
        return PolicyDecision(
            decision="ask_user", rule=verdict.rule, reason=f"not read-only: {problem}"
        )
    return PolicyDecision(decision="allow", rule=None, reason="a read-only command")


def names_secret(command: str) -> bool:
    """Whether a word of the command line names a file that may hold secrets, or is a
    glob that may match one (`cat sub/.env`, `--key=server.pem`): the sandbox hides only
    the top of the roots' `.env*`, so such a command stays asked."""
    tokens = shell_tokens(command)
    if tokens is None:
        return True
    for token in tokens:
        if not isinstance(token, Word):
            continue
        for text in (token.text, token.text.split("=", 1)[-1]):
            if is_sensitive_file(text) or (token.globs and glob_may_match_secret(text)):
                return True
    return False


def record_git_write(root: Path, tool_name: str, args: dict[str, Any]) -> bool:
    """Marks the workspace when this call, about to run, writes under `.git/`: an edit
    there, or a shell command that is not read-only and names `.git` or runs
    `git config`. Returns whether it did."""
    if tool_name == SHELL_TOOL_NAME:
        command = args.get("command")
        if not isinstance(command, str) or not writes_git_dir(command):
            return False
        if read_only_problem(command.strip(), shell_context(root, args)) is None:
            return False
    elif tool_name not in EDIT_TOOLS or not is_git_metadata(args.get("file_path")):
        return False
    logger.info("policy: %s wrote under .git/; git commands are asked from now on", tool_name)
    GitWrites.mark(root)
    return True
