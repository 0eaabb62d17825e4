"""Policy rules: the TOML `[[rule]]` model, matching, loading and serializing.

A rule file holds an array of tables::

    [[rule]]
    toolName = "read_file"            # or a list; "*" and "mcp_<server>_*" wildcards
    argsPattern = '"file_path":"[^"]*\\.env'   # regex over the args as JSON, sorted keys
    decision = "deny"                 # allow | deny | ask_user
    priority = 500                    # 0..999 within the file's tier
    modes = ["default", "autoEdit"]   # optional: only in these modes
    denyMessage = "Secrets stay private."

`commandPrefix` (string or list) and `commandRegex` apply to `run_shell_command`
only and are checked against each simple command of a command line. A prefix
matches the command itself or the command followed by a space; the regex must
match from the start of the command (`re.match`). Args are serialized as
compact JSON (`{"a":1,"b":"x"}`, no spaces, keys sorted), as Gemini CLI does.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import tomllib
from dataclasses import dataclass
from enum import IntEnum
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from runtime.tools.policy.modes import ApprovalMode
from runtime.tools.policy.shell_safety import SHELL_TOOL_NAME, matches_prefix

logger = logging.getLogger(__name__)

Decision = Literal["allow", "deny", "ask_user"]

# When two rules have the same effective priority, the stricter decision wins.
DECISION_SEVERITY: dict[Decision, int] = {"allow": 0, "ask_user": 1, "deny": 2}

# Conditions of Gemini CLI's policy rules this engine does not evaluate.
_UNCHECKED_CONDITIONS = frozenset(
    {"interactive", "subagent", "toolAnnotations", "allowRedirection"}
)
_TOML_KEYS = frozenset(
    {
        "toolName",
        "mcpName",
        "argsPattern",
        "commandPrefix",
        "commandRegex",
        "decision",
        "priority",
        "modes",
        "denyMessage",
    }
)


class Tier(IntEnum):
    """Where a rule comes from; a higher tier outranks any priority of a lower one."""

    DEFAULT = 1
    EXTENSION = 2
    WORKSPACE = 3
    USER = 4
    ADMIN = 5


@functools.lru_cache(maxsize=1024)
def compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def stable_json(args: dict[str, Any]) -> str:
    """The args as `argsPattern` sees them: compact JSON with sorted keys."""
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass(frozen=True)
class CallFacts:
    """What a rule is matched against: one tool call, or one part of a shell command."""

    tool_name: str
    args_json: str
    command: str | None = None
    mcp_server: str | None = None


class PolicyRule(BaseModel):
    """One rule. `effective_priority` (tier + priority/1000) orders rules; highest wins."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    tool_name: tuple[str, ...] | None = Field(default=None, alias="toolName")
    mcp_name: str | None = Field(default=None, alias="mcpName")
    args_pattern: str | None = Field(default=None, alias="argsPattern")
    command_prefix: tuple[str, ...] | None = Field(default=None, alias="commandPrefix")
    command_regex: str | None = Field(default=None, alias="commandRegex")
    decision: Decision
    priority: int = Field(default=0, ge=0, le=999)
    modes: tuple[ApprovalMode, ...] | None = None
    deny_message: str | None = Field(default=None, alias="denyMessage")
    tier: int = Tier.DEFAULT
    source: str = "default"

    @field_validator("tool_name", "command_prefix", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @field_validator("args_pattern", "command_regex")
    @classmethod
    def _valid_regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                compiled(value)
            except re.error as exc:
                raise ValueError(f"invalid regular expression {value!r}: {exc}") from exc
        return value

    @model_validator(mode="after")
    def _shell_criteria_imply_shell(self) -> PolicyRule:
        if (self.command_prefix or self.command_regex) and self.tool_name is None:
            object.__setattr__(self, "tool_name", (SHELL_TOOL_NAME,))
        return self

    @property
    def effective_priority(self) -> float:
        return self.tier + self.priority / 1000

    def criteria(self) -> tuple[object, ...]:
        """What the rule matches (not what it decides): equal criteria means the same calls."""
        return (
            self.tool_name,
            self.mcp_name,
            self.args_pattern,
            self.command_prefix,
            self.command_regex,
            self.modes,
        )

    def matches(self, facts: CallFacts, mode: ApprovalMode) -> bool:
        """True when this rule applies to the call in `mode`."""
        if self.modes is not None and mode not in self.modes:
            return False
        if self.tool_name is not None and not any(
            _name_matches(p, facts.tool_name) for p in self.tool_name
        ):
            return False
        if self.mcp_name is not None and not _from_server(facts, self.mcp_name):
            return False
        if self.args_pattern is not None and not compiled(self.args_pattern).search(
            facts.args_json
        ):
            return False
        if self.command_prefix is not None or self.command_regex is not None:
            if facts.command is None:
                return False
            if self.command_prefix is not None and not any(
                matches_prefix(facts.command, p) for p in self.command_prefix
            ):
                return False
            if self.command_regex is not None and not compiled(self.command_regex).match(
                facts.command
            ):
                return False
        return True

    def to_toml_table(self) -> dict[str, Any]:
        """The rule as a `[[rule]]` table (TOML keys, no tier or source)."""
        data = self.model_dump(by_alias=True, exclude_none=True, exclude={"tier", "source"})
        for key in ("toolName", "commandPrefix"):
            if isinstance(data.get(key), tuple) and len(data[key]) == 1:
                data[key] = data[key][0]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}


@dataclass(frozen=True)
class PolicyDecision:
    """The verdict for one call.

    `decision` is what to do; `rule` the rule that decided (None: no rule matched,
    or a heuristic overrode it); `reason` a short human explanation;
    `deny_message` the rule's message for the model when denied.
    """

    decision: Decision
    rule: PolicyRule | None
    reason: str
    deny_message: str | None = None


def _name_matches(pattern: str, name: str) -> bool:
    if pattern == "*" or pattern == name:
        return True
    return "*" in pattern and fnmatchcase(name, pattern)


def _from_server(facts: CallFacts, server: str) -> bool:
    if facts.mcp_server is not None:
        return facts.mcp_server == server
    return facts.tool_name.startswith(f"mcp_{server}_")


@dataclass(frozen=True)
class LoadedRules:
    """Rules read from files; `errors` names each file or rule that was skipped and why."""

    rules: tuple[PolicyRule, ...]
    errors: tuple[str, ...]


def parse_rules(text: str, *, tier: int, source: str) -> LoadedRules:
    """Rules from TOML text. A bad rule is skipped (reported in `errors`); the others load."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return LoadedRules((), (f"{source}: invalid TOML: {exc}",))
    tables = data.get("rule", [])
    if not isinstance(tables, list):
        return LoadedRules((), (f"{source}: 'rule' must be an array of tables ([[rule]])",))
    ignored = sorted(set(data) - {"rule"})
    if ignored:
        logger.info("%s: ignoring top-level keys %s", source, ", ".join(ignored))
    rules: list[PolicyRule] = []
    errors: list[str] = []
    for index, table in enumerate(tables, start=1):
        if not isinstance(table, dict):
            errors.append(f"{source}: rule {index} is not a table")
            continue
        unknown = sorted(set(table) - _TOML_KEYS)
        unchecked = [key for key in unknown if key in _UNCHECKED_CONDITIONS]
        if unchecked and unchecked == unknown and table.get("decision") in ("deny", "ask_user"):
            # Gemini CLI's conditions we cannot check only narrow a rule: a deny or an ask
            # without them applies more widely, the safe side; an allow is never widened.
            errors.append(
                f"{source}: rule {index}: conditions {', '.join(unchecked)} are not "
                "supported; applied without them (it denies or asks more widely)"
            )
            table = {key: value for key, value in table.items() if key not in unchecked}
        elif unknown:
            errors.append(f"{source}: rule {index}: unknown keys {', '.join(unknown)}")
            continue
        try:
            rules.append(PolicyRule.model_validate({**table, "tier": tier, "source": source}))
        except ValidationError as exc:
            errors.append(f"{source}: rule {index}: {_short(exc)}")
    return LoadedRules(tuple(rules), tuple(errors))


def _short(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'rule'}: {e['msg']}" for e in exc.errors()
    )


def load_rules_dir(directory: Path, *, tier: int) -> LoadedRules:
    """Every `*.toml` of `directory` in name order; a missing directory has no rules."""
    if not directory.is_dir():
        return LoadedRules((), ())
    rules: list[PolicyRule] = []
    errors: list[str] = []
    for path in sorted(directory.glob("*.toml")):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            errors.append(f"{path}: cannot read: {exc}")
            continue
        loaded = parse_rules(text, tier=tier, source=str(path))
        rules.extend(loaded.rules)
        errors.extend(loaded.errors)
    for error in errors:
        logger.warning("policy: %s", error)
    return LoadedRules(tuple(rules), tuple(errors))
