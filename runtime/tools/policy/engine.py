"""The policy engine: may this tool call run, must the user be asked, or is it denied?

Rules come from the built-in defaults (tier 1), the workspace's
`<root>/.gemini/policies/*.toml` (tier 3), the user's
`<home>/.gemini/policies/*.toml` (tier 4), an optional admin directory (tier 5)
and the session's "always" answers. Each rule's effective priority is
`tier + priority/1000`; the highest matching rule decides. When matching rules
tie, the stricter decision wins: deny beats ask_user beats allow.

No matching rule: allow in yolo, else ask_user. ask_user becomes deny when the
session cannot ask (non-interactive).

Auto edit runs a shell command unasked when no rule above the defaults decided it
and `read_only` classifies it as read-only, or when the session's commands run in a
sandbox (`sandboxed`: the sandbox confines it; what the sandbox stops is asked again,
to run outside, by the scheduler). An edit of a file under `.git/` is asked
in every mode (yolo too): hooks and config there make git run code; once such a
write ran (`record_run`), git commands are no longer auto-approved in this
workspace. Plan mode is read-only for MCP tools too: a tool its server does not
mark read-only (`readOnlyHint`) is denied whatever the rules (trust included), and
a read-only one is asked unless a rule allows it.

A shell command line is judged part by part (`ls && rm x` is two calls): any
part denied denies the line, any part needing approval asks. An allow for a
part that redirects output or is known to be dangerous becomes ask_user, except
in yolo.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomli_w

from runtime.errors import ConfigError
from runtime.services.atomic_write import write_atomically
from runtime.tools.policy.defaults import EDIT_TOOLS, PLAN_MODE_DENY_MESSAGE, default_rules
from runtime.tools.policy.guards import (
    asked_anyway,
    default_deny,
    read_only_shell,
    record_git_write,
)
from runtime.tools.policy.modes import ApprovalMode, modes_at_least, parse_mode
from runtime.tools.policy.rules import (
    DECISION_SEVERITY,
    CallFacts,
    Decision,
    PolicyRule,
    Tier,
    load_rules_dir,
    stable_json,
)
from runtime.tools.policy.rules import (
    PolicyDecision as PolicyDecision,  # re-exported: the engine's verdict type
)
from runtime.tools.policy.sensitive import sensitive_reads
from runtime.tools.policy.shell_safety import (
    SHELL_TOOL_NAME,
    CommandPart,
    approval_reason,
    command_prefixes,
    split_commands,
)

logger = logging.getLogger(__name__)

AUTO_SAVED_FILE = "auto-saved.toml"
# Priority of rules made from the user's "always" answers.
ALWAYS_PRIORITY = 950
SESSION_TIER = Tier.USER


def policies_dir(base: Path) -> Path:
    return base / ".gemini" / "policies"


def narrowed_criteria(tool_name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The match fields of an "always" rule for this call.

    Shell: the root commands (with subcommand for git, npm, ...) as `commandPrefix`;
    edits: the exact `file_path` as `argsPattern`; anything else: the tool name.
    """
    command = args.get("command")
    if tool_name == SHELL_TOOL_NAME and isinstance(command, str):
        prefixes = command_prefixes(command)
        if prefixes:
            return {"toolName": [tool_name], "commandPrefix": list(prefixes)}
    file_path = args.get("file_path")
    if isinstance(file_path, str) and (tool_name in EDIT_TOOLS or sensitive_reads(tool_name, args)):
        literal = '"file_path":' + json.dumps(file_path, ensure_ascii=False)
        return {"toolName": [tool_name], "argsPattern": re.escape(literal) + "[,}]"}
    return {"toolName": [tool_name]}


class PolicyEngine:
    """Decides tool calls from rules; remembers the session's "always" answers.

    `user_home` is the directory holding the user's `.gemini` (None: no user
    rules); `plans_dir` is where plan mode may write its plan files.
    Thread-safe for rule changes; evaluation reads a snapshot.
    """

    def __init__(
        self,
        *,
        workspace_root: Path,
        user_home: Path | None = None,
        admin_dir: Path | None = None,
        plans_dir: Path | None = None,
        extra_rules: Sequence[PolicyRule] = (),
        sandboxed: bool = False,
    ) -> None:
        self._workspace_root = workspace_root
        self.sandboxed = sandboxed
        self._resolved_root = workspace_root.resolve()
        self._user_home = user_home
        self._admin_dir = admin_dir
        self._defaults = default_rules(plans_dir=plans_dir)
        self._extra = tuple(extra_rules)
        self._lock = threading.Lock()
        self._file_rules: tuple[PolicyRule, ...] = ()
        self._session_rules: list[PolicyRule] = []
        self.load_errors: tuple[str, ...] = ()
        self.reload()

    @property
    def workspace_policies_dir(self) -> Path:
        return policies_dir(self._workspace_root)

    @property
    def rules(self) -> tuple[PolicyRule, ...]:
        """Every rule in force, in no particular order."""
        with self._lock:
            return (*self._defaults, *self._extra, *self._file_rules, *self._session_rules)

    def reload(self) -> tuple[str, ...]:
        """Re-reads the rule files; returns (and keeps in `load_errors`) what was skipped."""
        sources: list[tuple[Path, Tier]] = [(self.workspace_policies_dir, Tier.WORKSPACE)]
        if self._user_home is not None:
            sources.append((policies_dir(self._user_home), Tier.USER))
        if self._admin_dir is not None:
            sources.append((self._admin_dir, Tier.ADMIN))
        rules: list[PolicyRule] = []
        errors: list[str] = []
        for directory, tier in sources:
            loaded = load_rules_dir(directory, tier=tier)
            rules.extend(loaded.rules)
            errors.extend(loaded.errors)
        with self._lock:
            self._file_rules = tuple(rules)
            self.load_errors = tuple(errors)
        return self.load_errors

    # ------------------------------------------------------------ evaluation

    def evaluate(
        self,
        tool_name: str,
        args: dict[str, Any],
        *,
        mode: str,
        interactive: bool = True,
        mcp_server: str | None = None,
        read_only: bool = False,
    ) -> PolicyDecision:
        """The decision for one call in `mode` (an ApprovalMode id). `read_only`: the
        tool says it changes nothing (an MCP tool's `readOnlyHint`)."""
        approval_mode = parse_mode(mode)
        if approval_mode == "plan" and mcp_server is not None and not read_only:
            return PolicyDecision(
                decision="deny",
                rule=None,
                reason="plan mode runs only MCP tools their server marks read-only",
                deny_message=PLAN_MODE_DENY_MESSAGE,
            )
        verdict = self._evaluate_rules(tool_name, args, approval_mode, mcp_server)
        if approval_mode == "plan" and mcp_server is not None and default_deny(verdict):
            verdict = PolicyDecision(
                decision="ask_user", rule=None, reason="a read-only MCP tool in plan mode"
            )
        if approval_mode == "autoEdit" and tool_name == SHELL_TOOL_NAME:
            verdict = read_only_shell(self._resolved_root, args, verdict, self.sandboxed)
        verdict = asked_anyway(tool_name, args, verdict)
        if verdict.decision == "ask_user" and not interactive:
            return PolicyDecision(
                decision="deny",
                rule=verdict.rule,
                reason=f"{verdict.reason}; approval is not possible in a non-interactive session",
                deny_message="This call needs the user's approval, which cannot be asked here.",
            )
        return verdict

    def _evaluate_rules(
        self,
        tool_name: str,
        args: dict[str, Any],
        approval_mode: ApprovalMode,
        mcp_server: str | None,
    ) -> PolicyDecision:
        """The rules' verdict; a shell line is judged part by part, the strictest wins."""
        rules = self.rules
        command = args.get("command")
        if tool_name == SHELL_TOOL_NAME and isinstance(command, str):
            parts = split_commands(command) or (CommandPart(text=command.strip()),)
            verdicts = [
                self._evaluate_one(
                    rules,
                    tool_name,
                    {**args, "command": part.text},
                    part,
                    approval_mode,
                    mcp_server,
                )
                for part in parts
            ]
            verdict = max(verdicts, key=lambda v: DECISION_SEVERITY[v.decision])
        else:
            verdict = self._evaluate_one(rules, tool_name, args, None, approval_mode, mcp_server)
        return verdict

    def record_run(self, tool_name: str, args: dict[str, Any]) -> None:
        """Told of each call about to run: a write under `.git/` makes git commands asked
        in auto edit from then on (`guards.record_git_write`)."""
        record_git_write(self._resolved_root, tool_name, args)

    def _evaluate_one(
        self,
        rules: Sequence[PolicyRule],
        tool_name: str,
        args: dict[str, Any],
        part: CommandPart | None,
        mode: ApprovalMode,
        mcp_server: str | None,
    ) -> PolicyDecision:
        facts = CallFacts(
            tool_name=tool_name,
            args_json=stable_json(args),
            command=part.text if part is not None else None,
            mcp_server=mcp_server,
        )
        matching = [rule for rule in rules if rule.matches(facts, mode)]
        if not matching:
            decision: Decision = "allow" if mode == "yolo" else "ask_user"
            return PolicyDecision(decision=decision, rule=None, reason="no rule matched")
        rule = max(matching, key=lambda r: (r.effective_priority, DECISION_SEVERITY[r.decision]))
        where = f"rule from {rule.source} (priority {rule.effective_priority:.3f})"
        if rule.decision == "allow" and part is not None and mode != "yolo":
            heuristic = approval_reason(part)
            if heuristic is not None:
                return PolicyDecision(
                    decision="ask_user", rule=None, reason=f"{heuristic} in {part.text!r}"
                )
        deny_message = rule.deny_message if rule.decision == "deny" else None
        return PolicyDecision(
            decision=rule.decision, rule=rule, reason=where, deny_message=deny_message
        )

    # ------------------------------------------------------------ "always" answers

    def add_session_rule(
        self,
        tool_name: str,
        args: dict[str, Any],
        *,
        mode: str,
        decision: Decision = "allow",
    ) -> PolicyRule:
        """Remembers an "always" answer for this session, in `mode` and more permissive modes.

        Narrowed as `narrowed_criteria` says. A previous session rule with the same
        criteria is replaced, so the latest answer counts. Returns the new rule.
        """
        rule = PolicyRule.model_validate(
            {
                **narrowed_criteria(tool_name, args),
                "decision": decision,
                "priority": ALWAYS_PRIORITY,
                "modes": list(modes_at_least(parse_mode(mode))),
                "tier": SESSION_TIER,
                "source": "session",
            }
        )
        with self._lock:
            self._session_rules = [
                r for r in self._session_rules if r.criteria() != rule.criteria()
            ]
            self._session_rules.append(rule)
        logger.info("policy: session rule %s", rule.to_toml_table())
        return rule

    def allow_tool(self, tool_name: str) -> PolicyRule:
        """Allows one tool in every mode for this session (a subagent, `complete_task`:
        tools that ask the user themselves, or decide nothing)."""
        rule = PolicyRule.model_validate(
            {
                "toolName": tool_name,
                "decision": "allow",
                "priority": ALWAYS_PRIORITY,
                "tier": SESSION_TIER,
                "source": "session",
            }
        )
        with self._lock:
            self._session_rules.append(rule)
        return rule

    def allow_server(self, server: str, *, mode: str = "plan") -> PolicyRule:
        """Allows every tool of an MCP server for this session: "Allow all tools of this
        server", or `trust: true` in its settings (then in every mode, as Gemini CLI)."""
        rule = PolicyRule.model_validate(
            {
                "toolName": f"mcp_{server}_*",
                "mcpName": server,
                "decision": "allow",
                "priority": ALWAYS_PRIORITY,
                "modes": list(modes_at_least(parse_mode(mode))),
                "tier": SESSION_TIER,
                "source": "session",
            }
        )
        with self._lock:
            self._session_rules = [
                r for r in self._session_rules if r.criteria() != rule.criteria()
            ]
            self._session_rules.append(rule)
        logger.info("policy: session rule %s", rule.to_toml_table())
        return rule

    def save_rule(self, tool_name: str, args: dict[str, Any], *, mode: str) -> PolicyRule:
        """Persists an "always allow" to the workspace's `.gemini/policies/auto-saved.toml`.

        The rule is appended to the file's text (existing rules and comments stay),
        written to a temporary file and renamed over the original, then all rule
        files are reloaded. Returns the saved rule (tier workspace). Raises
        ConfigError when the existing file is not valid TOML or cannot be written.
        """
        path = self.workspace_policies_dir / AUTO_SAVED_FILE
        rule = PolicyRule.model_validate(
            {
                **narrowed_criteria(tool_name, args),
                "decision": "allow",
                "priority": ALWAYS_PRIORITY,
                "modes": list(modes_at_least(parse_mode(mode))),
                "tier": Tier.WORKSPACE,
                "source": str(path),
            }
        )
        with self._lock:
            _append_rule_atomically(path, rule)
        self.reload()
        return rule


def _append_rule_atomically(path: Path, rule: PolicyRule) -> None:
    try:
        existing = path.read_text(encoding="utf-8") if path.exists() else ""
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    try:
        tomllib.loads(existing)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML; not adding a rule to it: {exc}") from exc
    addition = tomli_w.dumps({"rule": [rule.to_toml_table()]})
    separator = (
        ""
        if not existing or existing.endswith("\n\n")
        else ("\n" if existing.endswith("\n") else "\n\n")
    )
    text = existing + separator + addition
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text.encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc}") from exc
    logger.info("policy: saved rule to %s", path)
