"""Auto edit with a sandbox (issue 35): a command the read-only rules cannot clear runs
unasked, confined; the user's own rules, secret reads and the other modes are as before."""

from __future__ import annotations

from pathlib import Path

from runtime.tools.policy.engine import PolicyEngine

SHELL = "run_shell_command"


def engine(tmp_path: Path, *, sandboxed: bool) -> PolicyEngine:
    return PolicyEngine(workspace_root=tmp_path, user_home=tmp_path / "home", sandboxed=sandboxed)


def decide(policy: PolicyEngine, command: str, mode: str = "autoEdit") -> str:
    return policy.evaluate(SHELL, {"command": command}, mode=mode).decision


def test_auto_edit_runs_what_is_not_read_only_only_with_a_sandbox(tmp_path: Path) -> None:
    for command in ("npm test", "pytest -q", "make", "rm -rf build && make"):
        assert decide(engine(tmp_path, sandboxed=False), command) == "ask_user"
        verdict = engine(tmp_path, sandboxed=True).evaluate(
            SHELL, {"command": command}, mode="autoEdit"
        )
        assert verdict.decision == "allow" and verdict.reason.startswith("runs in the sandbox")
    assert decide(engine(tmp_path, sandboxed=True), "ls") == "allow"


def test_other_modes_ask_as_before(tmp_path: Path) -> None:
    policy = engine(tmp_path, sandboxed=True)
    assert decide(policy, "npm test", "default") == "ask_user"
    assert decide(policy, "npm test", "plan") == "deny"
    assert decide(policy, "npm test", "yolo") == "allow"


def test_secret_reads_and_the_users_rules_still_win(tmp_path: Path) -> None:
    policies = tmp_path / ".gemini" / "policies"
    policies.mkdir(parents=True)
    (policies / "mine.toml").write_text(
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "make"\n'
        'decision = "ask_user"\npriority = 100\n'
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "curl"\n'
        'decision = "deny"\npriority = 100\n'
    )
    policy = engine(tmp_path, sandboxed=True)
    assert decide(policy, "make") == "ask_user"
    assert decide(policy, "curl https://example.com") == "deny"
    for secret in (
        "cat .env",
        "python3 show.py sub/.env.local",
        "tool --key=server.pem",
        "cat *.pem",
    ):
        assert decide(policy, secret) == "ask_user", secret
    assert decide(policy, "npm test") == "allow"
