""" "Always" answers: session rules, their narrowing, and the saved auto-saved.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from runtime.errors import ConfigError
from runtime.tools.policy.engine import AUTO_SAVED_FILE, PolicyEngine, narrowed_criteria

SHELL = "run_shell_command"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def decide(policy: PolicyEngine, tool: str, args: dict[str, object], mode: str = "default") -> str:
    return policy.evaluate(tool, dict(args), mode=mode).decision


def test_narrowing_per_kind_of_tool() -> None:
    assert narrowed_criteria(SHELL, {"command": "git status -s && ls -la"}) == {
        "toolName": [SHELL],
        "commandPrefix": ["git status", "ls"],
    }
    edit = narrowed_criteria("replace", {"file_path": "src/a.py", "old_string": "x"})
    assert edit["toolName"] == ["replace"] and "argsPattern" in edit
    assert narrowed_criteria("web_fetch", {"prompt": "x"}) == {"toolName": ["web_fetch"]}


def test_session_shell_rule_is_narrowed_to_the_root_command(workspace: Path) -> None:
    policy = PolicyEngine(workspace_root=workspace)
    policy.add_session_rule(SHELL, {"command": "git status --short"}, mode="default")
    assert decide(policy, SHELL, {"command": "git status"}) == "allow"
    assert decide(policy, SHELL, {"command": "git status --porcelain"}) == "allow"
    assert decide(policy, SHELL, {"command": "git push"}) == "ask_user"
    assert decide(policy, SHELL, {"command": "npm test"}) == "ask_user"


def test_session_allow_still_asks_for_dangerous_forms(workspace: Path) -> None:
    policy = PolicyEngine(workspace_root=workspace)
    policy.add_session_rule(SHELL, {"command": "rm old.txt"}, mode="default")
    assert decide(policy, SHELL, {"command": "rm other.txt"}) == "allow"
    assert decide(policy, SHELL, {"command": "rm -rf /"}) == "ask_user"


def test_session_edit_rule_is_narrowed_to_the_file(workspace: Path) -> None:
    policy = PolicyEngine(workspace_root=workspace)
    policy.add_session_rule("write_file", {"file_path": "src/a.py", "content": "x"}, mode="default")
    assert decide(policy, "write_file", {"content": "other", "file_path": "src/a.py"}) == "allow"
    assert decide(policy, "write_file", {"file_path": "src/a.pyc", "content": ""}) == "ask_user"
    assert decide(policy, "write_file", {"file_path": "src/b.py", "content": ""}) == "ask_user"
    assert decide(policy, "replace", {"file_path": "src/a.py"}) == "ask_user"


def test_other_tools_are_narrowed_by_name(workspace: Path) -> None:
    policy = PolicyEngine(workspace_root=workspace)
    policy.add_session_rule("web_fetch", {"prompt": "a"}, mode="default")
    assert decide(policy, "web_fetch", {"prompt": "anything"}) == "allow"


def test_session_rules_hold_for_the_mode_and_more_permissive_ones(workspace: Path) -> None:
    policy = PolicyEngine(workspace_root=workspace)
    policy.add_session_rule("web_fetch", {"prompt": "a"}, mode="autoEdit")
    assert decide(policy, "web_fetch", {}, mode="autoEdit") == "allow"
    assert decide(policy, "web_fetch", {}, mode="default") == "ask_user"
    policy.add_session_rule(SHELL, {"command": "npm test"}, mode="default")
    assert decide(policy, SHELL, {"command": "npm test"}, mode="autoEdit") == "allow"
    assert decide(policy, SHELL, {"command": "npm test"}, mode="plan") == "deny"


def test_reject_always_denies_and_the_latest_answer_wins(workspace: Path) -> None:
    policy = PolicyEngine(workspace_root=workspace)
    policy.add_session_rule(SHELL, {"command": "npm publish"}, mode="default", decision="deny")
    assert decide(policy, SHELL, {"command": "npm publish --tag next"}) == "deny"
    assert decide(policy, SHELL, {"command": "npm test"}) == "ask_user"
    policy.add_session_rule(SHELL, {"command": "npm publish"}, mode="default", decision="allow")
    assert decide(policy, SHELL, {"command": "npm publish"}) == "allow"
    assert sum(r.source == "session" for r in policy.rules) == 1


def test_session_rules_do_not_outlive_the_engine(workspace: Path) -> None:
    PolicyEngine(workspace_root=workspace).add_session_rule("web_fetch", {}, mode="default")
    assert decide(PolicyEngine(workspace_root=workspace), "web_fetch", {}) == "ask_user"


def test_save_rule_creates_the_file_and_applies_at_once(workspace: Path) -> None:
    policy = PolicyEngine(workspace_root=workspace)
    rule = policy.save_rule(SHELL, {"command": "npm test"}, mode="default")
    path = workspace / ".gemini" / "policies" / AUTO_SAVED_FILE
    assert rule.source == str(path)
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert data == {
        "rule": [
            {
                "toolName": SHELL,
                "commandPrefix": "npm test",
                "decision": "allow",
                "priority": 950,
                "modes": ["default", "autoEdit", "yolo"],
            }
        ]
    }
    assert decide(policy, SHELL, {"command": "npm test -- -k x"}) == "allow"
    # a later session reads it from the file
    assert decide(PolicyEngine(workspace_root=workspace), SHELL, {"command": "npm test"}) == "allow"


def test_save_rule_appends_and_keeps_existing_rules_and_comments(workspace: Path) -> None:
    directory = workspace / ".gemini" / "policies"
    directory.mkdir(parents=True)
    existing = '# my rules\n[[rule]]\ntoolName = "glob"\ndecision = "deny"\n'
    (directory / AUTO_SAVED_FILE).write_text(existing, encoding="utf-8")
    policy = PolicyEngine(workspace_root=workspace)
    policy.save_rule("replace", {"file_path": "a.py"}, mode="default")
    policy.save_rule("write_file", {"file_path": "b.py"}, mode="autoEdit")
    text = (directory / AUTO_SAVED_FILE).read_text(encoding="utf-8")
    assert text.startswith(existing)
    rules = tomllib.loads(text)["rule"]
    assert [r["toolName"] for r in rules] == ["glob", "replace", "write_file"]
    assert decide(policy, "glob", {}) == "deny"
    assert decide(policy, "replace", {"file_path": "a.py"}) == "allow"
    assert sorted(p.name for p in directory.iterdir()) == [
        AUTO_SAVED_FILE
    ]  # no temporary file left


def test_save_rule_refuses_to_touch_a_broken_file(workspace: Path) -> None:
    directory = workspace / ".gemini" / "policies"
    directory.mkdir(parents=True)
    broken = "[[rule]\nnot toml"
    (directory / AUTO_SAVED_FILE).write_text(broken, encoding="utf-8")
    policy = PolicyEngine(workspace_root=workspace)
    with pytest.raises(ConfigError):
        policy.save_rule("web_fetch", {}, mode="default")
    assert (directory / AUTO_SAVED_FILE).read_text(encoding="utf-8") == broken
    assert sorted(p.name for p in directory.iterdir()) == [AUTO_SAVED_FILE]


def test_saved_edit_rule_matches_paths_with_special_characters(workspace: Path) -> None:
    policy = PolicyEngine(workspace_root=workspace)
    odd = 'dir (1)/a+b[0]."quoted".py'
    policy.save_rule("write_file", {"file_path": odd}, mode="default")
    assert (
        decide(PolicyEngine(workspace_root=workspace), "write_file", {"file_path": odd}) == "allow"
    )
    assert decide(policy, "write_file", {"file_path": "dir (1)/a+b[0].py"}) == "ask_user"
