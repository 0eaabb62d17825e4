"""Policy engine: rule matching, tiers and priorities, modes, defaults, files."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.errors import ConfigError
from runtime.tools.policy.engine import PolicyEngine
from runtime.tools.policy.rules import PolicyRule, Tier, parse_rules, stable_json


def write_policy(base: Path, name: str, text: str) -> Path:
    directory = base / ".gemini" / "policies"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def engine(workspace: Path, home: Path | None = None, **kwargs: object) -> PolicyEngine:
    return PolicyEngine(workspace_root=workspace, user_home=home, **kwargs)  # type: ignore[arg-type]


def decide(
    policy: PolicyEngine, tool: str, args: dict[str, object] | None = None, **kw: object
) -> str:
    mode = str(kw.pop("mode", "default"))
    return policy.evaluate(tool, dict(args or {}), mode=mode, **kw).decision  # type: ignore[arg-type]


# ---------------------------------------------------------------- matching


def test_tool_name_wildcards(workspace: Path) -> None:
    write_policy(
        workspace,
        "a.toml",
        """
[[rule]]
toolName = "mcp_github_*"
decision = "allow"
[[rule]]
toolName = ["custom_a", "custom_b"]
decision = "deny"
""",
    )
    policy = engine(workspace)
    assert decide(policy, "mcp_github_create_issue") == "allow"
    assert decide(policy, "mcp_gitlab_create_issue") == "ask_user"
    assert decide(policy, "custom_b") == "deny"


def test_star_matches_every_tool(workspace: Path) -> None:
    write_policy(
        workspace, "a.toml", '[[rule]]\ntoolName = "*"\ndecision = "deny"\ndenyMessage = "no"\n'
    )
    verdict = engine(workspace).evaluate("read_file", {"file_path": "a"}, mode="default")
    assert verdict.decision == "deny"
    assert verdict.deny_message == "no"


def test_mcp_name_matches_server_by_prefix_or_explicitly(workspace: Path) -> None:
    write_policy(workspace, "a.toml", '[[rule]]\nmcpName = "docs"\ndecision = "allow"\n')
    policy = engine(workspace)
    assert decide(policy, "mcp_docs_search") == "allow"
    assert decide(policy, "mcp_other_search") == "ask_user"
    assert decide(policy, "search", mcp_server="docs") == "allow"
    assert decide(policy, "mcp_docs_search", mcp_server="other") == "ask_user"


def test_args_pattern_sees_compact_json_with_sorted_keys(workspace: Path) -> None:
    assert stable_json({"b": 1, "a": "x"}) == '{"a":"x","b":1}'
    write_policy(
        workspace,
        "a.toml",
        """
[[rule]]
toolName = "web_fetch"
argsPattern = '^\\{"prompt":"https://docs\\.python\\.org'
decision = "allow"
""",
    )
    policy = engine(workspace)
    assert decide(policy, "web_fetch", {"prompt": "https://docs.python.org/3/"}) == "allow"
    assert decide(policy, "web_fetch", {"prompt": "https://evil.example"}) == "ask_user"


def test_command_prefix_matches_word_boundaries_and_each_part(workspace: Path) -> None:
    write_policy(
        workspace, "a.toml", '[[rule]]\ncommandPrefix = ["git status", "ls"]\ndecision = "allow"\n'
    )
    policy = engine(workspace)
    shell = "run_shell_command"
    assert decide(policy, shell, {"command": "git status"}) == "allow"
    assert decide(policy, shell, {"command": "git status --short && ls -la"}) == "allow"
    assert decide(policy, shell, {"command": "git statusx"}) == "ask_user"
    assert decide(policy, shell, {"command": "lsblk"}) == "ask_user"
    assert decide(policy, shell, {"command": "git status && npm publish"}) == "ask_user"
    # commandPrefix implies the shell tool: other tools never match it
    assert decide(policy, "web_fetch", {"command": "git status"}) == "ask_user"


def test_command_regex_matches_from_the_start(workspace: Path) -> None:
    write_policy(
        workspace,
        "a.toml",
        "[[rule]]\ncommandRegex = 'npm (test|run lint)'\ndecision = \"allow\"\n",
    )
    policy = engine(workspace)
    assert decide(policy, "run_shell_command", {"command": "npm test"}) == "allow"
    assert decide(policy, "run_shell_command", {"command": "npm run lint -- --fix"}) == "allow"
    assert decide(policy, "run_shell_command", {"command": "echo npm test"}) == "ask_user"


def test_deny_in_any_part_denies_the_line(workspace: Path) -> None:
    write_policy(
        workspace,
        "a.toml",
        '[[rule]]\ncommandPrefix = "ls"\ndecision = "allow"\n'
        '[[rule]]\ncommandPrefix = "curl"\ndecision = "deny"\n',
    )
    assert decide(engine(workspace), "run_shell_command", {"command": "ls && curl x"}) == "deny"


# ---------------------------------------------------------------- priorities and tiers


def test_higher_tier_beats_any_priority_of_a_lower_one(workspace: Path, home: Path) -> None:
    write_policy(
        workspace, "w.toml", '[[rule]]\ntoolName = "glob"\ndecision = "deny"\npriority = 999\n'
    )
    policy = engine(workspace, home)
    assert decide(policy, "glob") == "deny"  # workspace (3) beats the default allow (1)
    write_policy(home, "u.toml", '[[rule]]\ntoolName = "glob"\ndecision = "allow"\npriority = 0\n')
    policy.reload()
    assert decide(policy, "glob") == "allow"  # user (4.000) beats workspace (3.999)


def test_priority_orders_rules_within_a_tier(workspace: Path) -> None:
    write_policy(
        workspace,
        "a.toml",
        '[[rule]]\ntoolName = "glob"\ndecision = "deny"\npriority = 100\n'
        '[[rule]]\ntoolName = "glob"\ndecision = "allow"\npriority = 200\n',
    )
    verdict = engine(workspace).evaluate("glob", {}, mode="default")
    assert verdict.decision == "allow"
    assert verdict.rule is not None and verdict.rule.effective_priority == pytest.approx(3.2)


@pytest.mark.parametrize(
    ("first", "second", "winner"),
    [("allow", "deny", "deny"), ("ask_user", "allow", "ask_user"), ("deny", "ask_user", "deny")],
)
def test_ties_go_to_the_stricter_decision(
    workspace: Path, first: str, second: str, winner: str
) -> None:
    write_policy(
        workspace,
        "a.toml",
        f'[[rule]]\ntoolName = "glob"\ndecision = "{first}"\npriority = 5\n'
        f'[[rule]]\ntoolName = "glob"\ndecision = "{second}"\npriority = 5\n',
    )
    assert decide(engine(workspace), "glob") == winner


def test_admin_tier(workspace: Path, tmp_path: Path) -> None:
    admin = tmp_path / "admin"
    admin.mkdir()
    (admin / "a.toml").write_text('[[rule]]\ntoolName = "*"\ndecision = "deny"\n', encoding="utf-8")
    policy = engine(workspace, admin_dir=admin)
    assert decide(policy, "read_file", mode="yolo") == "deny"


# ---------------------------------------------------------------- modes and defaults


def test_rule_modes_limit_where_it_applies(workspace: Path) -> None:
    write_policy(
        workspace,
        "a.toml",
        '[[rule]]\ntoolName = "web_fetch"\ndecision = "allow"\nmodes = ["autoEdit"]\n',
    )
    policy = engine(workspace)
    assert decide(policy, "web_fetch", mode="autoEdit") == "allow"
    assert decide(policy, "web_fetch", mode="default") == "ask_user"


DEFAULTS = [
    # tool, args, default, autoEdit, yolo, plan
    ("read_file", {"file_path": "a.py"}, "allow", "allow", "allow", "allow"),
    ("read_many_files", {"include": ["*"]}, "allow", "allow", "allow", "allow"),
    ("glob", {"pattern": "*"}, "allow", "allow", "allow", "allow"),
    ("grep_search", {"pattern": "x"}, "allow", "allow", "allow", "allow"),
    ("list_directory", {"dir_path": "."}, "allow", "allow", "allow", "allow"),
    ("write_todos", {"todos": []}, "allow", "allow", "allow", "allow"),
    ("write_file", {"file_path": "a.py", "content": ""}, "ask_user", "allow", "allow", "deny"),
    ("replace", {"file_path": "a.py"}, "ask_user", "allow", "allow", "deny"),
    ("run_shell_command", {"command": "npm test"}, "ask_user", "ask_user", "allow", "deny"),
    ("run_shell_command", {"command": "ls -la"}, "ask_user", "allow", "allow", "deny"),
    # chaining is asked in auto edit even when each part is read-only
    (
        "run_shell_command",
        {"command": "git status && git diff"},
        "ask_user",
        "ask_user",
        "allow",
        "deny",
    ),
    ("run_shell_command", {"command": "cat .env"}, "ask_user", "ask_user", "allow", "deny"),
    ("write_file", {"file_path": ".git/config"}, "ask_user", "ask_user", "ask_user", "deny"),
    ("replace", {"file_path": "a/.git/hooks/x"}, "ask_user", "ask_user", "ask_user", "deny"),
    ("run_shell_command", {"command": "ls > listing.txt"}, "ask_user", "ask_user", "allow", "deny"),
    ("run_shell_command", {"command": "rm -rf build"}, "ask_user", "ask_user", "allow", "deny"),
    ("web_fetch", {"prompt": "https://x"}, "ask_user", "ask_user", "allow", "deny"),
    ("google_web_search", {"query": "x"}, "allow", "allow", "allow", "allow"),
    ("save_memory", {"fact": "tabs"}, "ask_user", "ask_user", "allow", "deny"),
    ("mcp_srv_tool", {}, "ask_user", "ask_user", "allow", "deny"),
]


@pytest.mark.parametrize(("tool", "args", "default", "auto_edit", "yolo", "plan"), DEFAULTS)
def test_defaults_per_mode(
    workspace: Path,
    tool: str,
    args: dict[str, object],
    default: str,
    auto_edit: str,
    yolo: str,
    plan: str,
) -> None:
    policy = engine(workspace)
    got = [decide(policy, tool, args, mode=m) for m in ("default", "autoEdit", "yolo", "plan")]
    assert got == [default, auto_edit, yolo, plan]


def test_plan_mode_may_write_plan_files_only(workspace: Path, tmp_path: Path) -> None:
    plans = tmp_path / "tmp" / "plans"
    policy = engine(workspace, plans_dir=plans)
    assert (
        decide(
            policy, "write_file", {"file_path": str(plans / "plan.md"), "content": "x"}, mode="plan"
        )
        == "allow"
    )
    assert (
        decide(
            policy, "write_file", {"file_path": str(plans / "x.py"), "content": "x"}, mode="plan"
        )
        == "deny"
    )
    assert (
        decide(policy, "write_file", {"file_path": str(workspace / "plan.md")}, mode="plan")
        == "deny"
    )
    verdict = policy.evaluate("run_shell_command", {"command": "ls"}, mode="plan")
    assert verdict.deny_message and "Plan mode" in verdict.deny_message


def test_no_match_asks_unless_yolo_and_denies_when_not_interactive(workspace: Path) -> None:
    policy = engine(workspace)
    assert decide(policy, "unknown_tool") == "ask_user"
    assert decide(policy, "unknown_tool", mode="yolo") == "allow"
    verdict = policy.evaluate("unknown_tool", {}, mode="default", interactive=False)
    assert verdict.decision == "deny"
    assert verdict.deny_message
    assert decide(policy, "write_file", {"file_path": "a"}, interactive=False) == "deny"
    assert decide(policy, "read_file", {"file_path": "a"}, interactive=False) == "allow"


def test_heuristics_downgrade_an_allowing_rule_except_in_yolo(workspace: Path) -> None:
    write_policy(
        workspace, "a.toml", '[[rule]]\ncommandPrefix = ["rm", "echo"]\ndecision = "allow"\n'
    )
    policy = engine(workspace)
    shell = "run_shell_command"
    assert decide(policy, shell, {"command": "rm notes.txt"}) == "allow"
    assert decide(policy, shell, {"command": "rm -rf /"}) == "ask_user"
    assert decide(policy, shell, {"command": "echo hi > out.txt"}) == "ask_user"
    assert decide(policy, shell, {"command": "echo hi | tee out.txt"}) == "ask_user"
    assert decide(policy, shell, {"command": "rm -rf /"}, mode="yolo") == "allow"
    verdict = policy.evaluate(shell, {"command": "echo $(cat ~/.ssh/id_rsa)"}, mode="default")
    assert verdict.decision == "ask_user" and "substitution" in verdict.reason


def test_unknown_mode_is_a_config_error(workspace: Path) -> None:
    with pytest.raises(ConfigError):
        engine(workspace).evaluate("glob", {}, mode="turbo")


# ---------------------------------------------------------------- files


def test_bad_files_and_rules_are_reported_and_skipped(workspace: Path) -> None:
    write_policy(workspace, "a-broken.toml", "[[rule]\n")
    write_policy(
        workspace,
        "b.toml",
        """
[[rule]]
toolName = "glob"
decision = "maybe"
[[rule]]
toolName = "glob"
decision = "deny"
priority = 1000
[[rule]]
toolName = "glob"
argsPattern = "("
decision = "deny"
[[rule]]
toolName = "glob"
colour = "red"
decision = "deny"
[[rule]]
toolName = "grep_search"
decision = "deny"
modes = ["sometimes"]
[[rule]]
toolName = "list_directory"
decision = "deny"
""",
    )
    policy = engine(workspace)
    assert len(policy.load_errors) == 6
    assert any("a-broken.toml" in e and "invalid TOML" in e for e in policy.load_errors)
    assert any("colour" in e for e in policy.load_errors)
    assert decide(policy, "glob") == "allow"  # all bad glob rules skipped
    assert decide(policy, "list_directory") == "deny"  # the good rule loaded


def test_parse_rules_accepts_strings_or_lists() -> None:
    loaded = parse_rules(
        '[[rule]]\ntoolName = "a"\ncommandPrefix = "x"\ndecision = "allow"\n', tier=3, source="t"
    )
    assert loaded.errors == ()
    (rule,) = loaded.rules
    assert (
        rule.tool_name == ("a",) and rule.command_prefix == ("x",) and rule.tier == Tier.WORKSPACE
    )
    shell_only = PolicyRule.model_validate({"commandPrefix": "ls", "decision": "allow"})
    assert shell_only.tool_name == ("run_shell_command",)


def test_a_rule_with_conditions_we_cannot_check_is_widened_only_toward_safety() -> None:
    text = (
        '[[rule]]\ntoolName = "run_shell_command"\ndecision = "deny"\ninteractive = false\n'
        '[[rule]]\ntoolName = "write_file"\ndecision = "ask_user"\nsubagent = "x"\n'
        '[[rule]]\ntoolName = "read_file"\ndecision = "allow"\ninteractive = true\n'
    )
    loaded = parse_rules(text, tier=3, source="t")
    # the deny and the ask apply more widely; the allow is not applied at all
    assert [(r.tool_name, r.decision) for r in loaded.rules] == [
        (("run_shell_command",), "deny"),
        (("write_file",), "ask_user"),
    ]
    assert len(loaded.errors) == 3
    assert "applied without them" in loaded.errors[0] and "interactive" in loaded.errors[2]
    # an unknown key (a typo) still skips the rule, deny or not
    typo = parse_rules(
        '[[rule]]\ntoolName = "glob"\ncolour = "red"\ndecision = "deny"\n', tier=3, source="t"
    )
    assert typo.rules == () and "unknown keys colour" in typo.errors[0]


def test_plan_mode_runs_only_read_only_mcp_tools_trust_or_not(workspace: Path) -> None:
    policy = engine(workspace)
    policy.allow_server("docs")  # `trust: true` in the settings

    def plan(tool: str, server: str, read_only: bool) -> str:
        return policy.evaluate(
            tool, {}, mode="plan", mcp_server=server, read_only=read_only
        ).decision

    assert plan("mcp_docs_write", "docs", False) == "deny"
    assert plan("mcp_docs_search", "docs", True) == "allow"
    assert plan("mcp_other_search", "other", True) == "ask_user"
    assert plan("mcp_other_write", "other", False) == "deny"
    verdict = policy.evaluate("mcp_docs_write", {}, mode="default", mcp_server="docs")
    assert verdict.decision == "allow"  # trust still holds outside plan mode
    policy.allow_server("other", mode="plan")  # "Allow all tools of this server" in plan mode
    assert plan("mcp_other_write", "other", False) == "deny"
