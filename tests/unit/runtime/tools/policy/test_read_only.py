"""The read-only classifier: which command lines auto edit runs without asking.

One table of command lines, safe or must-ask, through the policy engine in auto
edit (so the table also proves the engine's use of the classifier), plus the
rules around it: the workspace, secrets, `.git/` writes and the TOML rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.tools.policy.engine import PolicyEngine
from runtime.tools.policy.guards import GitWrites
from runtime.tools.policy.read_only import ShellContext, read_only_problem
from runtime.tools.policy.shell_words import Operator, Word, shell_tokens

SAFE = "run"
ASK = "ask"

TABLE: list[tuple[str, str]] = [
    # plain reads
    ("ls", SAFE),
    ("ls -la src", SAFE),
    ("ls --color=never -1", SAFE),
    ("cat README.md", SAFE),
    ("cat -n src/a.py", SAFE),
    ('cat "notes with space.txt"', SAFE),
    ("head -20 README.md", SAFE),
    ("head -n 5 a.txt", SAFE),
    ("tail -n5 a.txt", SAFE),
    ("wc -l src/a.py src/b.py", SAFE),
    ("nl -ba a.txt", SAFE),
    ("stat -c %s a.txt", SAFE),
    ("file a.txt", SAFE),
    ("du -sh src", SAFE),
    ("tree -L 2 src", SAFE),
    ("pwd", SAFE),
    ("whoami", SAFE),
    ("uname -a", SAFE),
    ("date +%Y-%m-%d", SAFE),
    ("echo hello world", SAFE),
    ("echo 'a; b && c | d'", SAFE),
    ("printf '%s\\n' x", SAFE),
    ("which python3", SAFE),
    ("basename /a/b/c.txt", SAFE),
    ("sort -u a.txt", SAFE),
    ("uniq -c a.txt", SAFE),
    ("cut -d, -f1 a.csv", SAFE),
    ("tr a-z A-Z", SAFE),
    ("diff -u a.txt b.txt", SAFE),
    ("cat *.py", SAFE),
    ("ls 2>/dev/null", SAFE),
    ("ls nothing 2>&1", SAFE),
    # search
    ("grep -n TODO src/a.py", SAFE),
    ("grep -e foo -e bar a.txt", SAFE),
    ("grep -c --include=*.py foo src/a.py", SAFE),
    ("rg -n foo src", SAFE),
    ("rg --context 1 --heading foo", SAFE),
    ("find . -name '*.py' -type f", SAFE),
    ("find src -maxdepth 2 -newer a.txt -print", SAFE),
    ("sed -n '1,5p' a.txt", SAFE),
    ("sed -n '/start/,/end/p' a.txt", SAFE),
    ("sed 's/foo/bar/g' a.txt", SAFE),
    ("awk '{print $1}' a.txt", SAFE),
    ("awk -F, -v n=2 '{print $n}' a.csv", SAFE),
    ("jq -r .name package.json", SAFE),
    # git, read-only
    ("git status", SAFE),
    ("git status --short -uno", SAFE),
    ("git diff", SAFE),
    ("git diff --stat HEAD~1", SAFE),
    ("git diff --cached -- src", SAFE),
    ("git log --oneline -5", SAFE),
    ("git log --format=%h -n 3 main..HEAD", SAFE),
    ("git --no-pager show HEAD", SAFE),
    ("git -C src log -1", SAFE),
    ("git branch", SAFE),
    ("git branch -a -v", SAFE),
    ("git branch --list 'feat*'", SAFE),
    ("git rev-parse --show-toplevel", SAFE),
    ("git ls-files -m", SAFE),
    ("git blame -L 1,5 a.txt", SAFE),
    ("git describe --tags --always", SAFE),
    # wrappers and harmless environment
    ("LC_ALL=C sort a.txt", SAFE),
    ("GIT_PAGER=cat git log -1", SAFE),
    ("command ls", SAFE),
    ("command -v git", SAFE),
    ("env ls", SAFE),
    ("timeout 5 cat a.txt", SAFE),
    ("nice -n 5 wc -l a.txt", SAFE),
    ("time ls", SAFE),
    # output options of read-only tools, every spelling
    ("git diff --output=out.patch", ASK),
    ("git diff --output out.patch", ASK),
    ("git log --output=x -n 1", ASK),
    ("git show --output=x HEAD", ASK),
    ("git diff --ext-diff", ASK),
    ("git log --textconv -p", ASK),
    ("sort -o out.txt a.txt", ASK),
    ("sort -oout.txt a.txt", ASK),
    ("sort --output=out.txt a.txt", ASK),
    ("sort --output out.txt a.txt", ASK),
    ("sort --compress-program=gzip a.txt", ASK),
    ("tree -o out.txt", ASK),
    ("base64 -o out.bin a.txt", ASK),
    ("uniq a.txt out.txt", ASK),
    ("date -s 2020-01-01", ASK),
    ("date 010100002020", ASK),
    # preprocessors and programs run by an option
    ("rg --pre cat foo", ASK),
    ("rg --pre=./x.sh foo", ASK),
    ("rg --hostname-bin=./x foo", ASK),
    ("rg -z foo", ASK),
    ("rg --search-zip foo", ASK),
    ("git -c core.pager=./x log", ASK),
    ("git -ccore.pager=./x status", ASK),
    ("git --config-env=core.pager=X log", ASK),
    ("git -p log", ASK),
    ("git --paginate log", ASK),
    ("git --git-dir=other.git log", ASK),
    ("git --exec-path=. status", ASK),
    # find actions, sed and awk that write or run
    ("find . -exec rm {} ;", ASK),
    ("find . -execdir cat {} +", ASK),
    ("find . -ok rm {} ;", ASK),
    ("find . -delete", ASK),
    ("find . -fprint out.txt", ASK),
    ("find . -fprintf out.txt %p", ASK),
    ("find . -fls out.txt", ASK),
    ("sed -i 's/a/b/' a.txt", ASK),
    ("sed -i.bak 's/a/b/' a.txt", ASK),
    ("sed --in-place 's/a/b/' a.txt", ASK),
    ("sed -n 'w out.txt' a.txt", ASK),
    ("sed 's/a/b/w out.txt' a.txt", ASK),
    ("sed 's/x/id/e' a.txt", ASK),
    ("sed -f script.sed a.txt", ASK),
    ("awk 'BEGIN { system(\"id\") }'", ASK),
    ("awk '{ print > \"out.txt\" }' a.txt", ASK),
    ("awk '{ print | \"sh\" }' a.txt", ASK),
    ("awk 'BEGIN { print ENVIRON[\"HOME\"] }'", ASK),
    ("awk -f prog.awk a.txt", ASK),
    ("jq -n env", ASK),
    ("jq -n '$ENV.PATH'", ASK),
    # secrets
    ("cat .env", ASK),
    ("cat config/.env.production", ASK),
    ("head -1 prod.env", ASK),
    ("cat deploy/server.key", ASK),
    ("cat id_rsa", ASK),
    ("grep TOKEN .env", ASK),
    ("cat .e*", ASK),
    ("cat *", ASK),
    ("git show HEAD:.env", ASK),
    ("cat ~/.ssh/id_rsa", ASK),
    ("cat < .env", ASK),
    ("env", ASK),
    ("printenv", ASK),
    ("grep -r TOKEN .", ASK),
    ("rg --hidden TOKEN", ASK),
    ("rg -uu TOKEN", ASK),
    # outside the workspace
    ("cat /etc/passwd", ASK),
    ("cat ../other/a.txt", ASK),
    ("ls /", ASK),
    ("git -C /tmp log", ASK),
    ("find / -name x", ASK),
    ("diff a.txt /etc/hosts", ASK),
    # redirection, substitution, chaining, expansion
    ("ls > listing.txt", ASK),
    ("ls >> listing.txt", ASK),
    ("echo x 2> err.txt", ASK),
    ("ls &> all.txt", ASK),
    ("cat <<EOF\nx\nEOF", ASK),
    ("echo $(id)", ASK),
    ("echo `id`", ASK),
    ('echo "$HOME"', ASK),
    ("cat <(ls)", ASK),
    ("ls && rm -rf build", ASK),
    ("ls; id", ASK),
    ("ls || id", ASK),
    ("git log | head", ASK),
    ("ls & id", ASK),
    ("ls\nid", ASK),
    ("(ls)", ASK),
    ("cat {a,.env}", ASK),
    ("cat 'unclosed", ASK),
    # environment prefixes and wrappers of what is not read-only
    ("FOO=1 ls", ASK),
    ("LD_PRELOAD=./x.so ls", ASK),
    ("GIT_PAGER=./x git log", ASK),
    ("PAGER=less git log", ASK),
    ("GIT_DIR=other git status", ASK),
    ("command rm a.txt", ASK),
    ("env FOO=1 ls", ASK),
    ("env -u HOME ls", ASK),
    ("nice rm a.txt", ASK),
    ("timeout 5 rm a.txt", ASK),
    ("timeout -s KILL 5 ls", ASK),
    ("sudo cat a.txt", ASK),
    ("xargs cat", ASK),
    ("xargs -0 grep foo", ASK),
    # not read-only at all, or unknown
    ("rm a.txt", ASK),
    ("touch a.txt", ASK),
    ("cp a.txt b.txt", ASK),
    ("tee out.txt", ASK),
    ("python3 -c 'print(1)'", ASK),
    ("npm test", ASK),
    ("./script.sh", ASK),
    ("/bin/cat a.txt", ASK),
    ("git push", ASK),
    ("git checkout main", ASK),
    ("git branch new-branch", ASK),
    ("git branch -D old", ASK),
    ("git config core.fsmonitor ./x", ASK),
    ("git stash", ASK),
    ("ls --unknown-option", ASK),
    ("cat --numbr a.txt", ASK),  # an abbreviation is not a known option
    ("tail -f log.txt", ASK),
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    return root.resolve()


def test_the_table_is_large_and_has_both_kinds() -> None:
    assert len(TABLE) >= 80
    assert sum(1 for _, v in TABLE if v == SAFE) >= 40
    assert sum(1 for _, v in TABLE if v == ASK) >= 80
    assert len({line for line, _ in TABLE}) == len(TABLE)


@pytest.mark.parametrize(("line", "expected"), TABLE)
def test_auto_edit_runs_only_read_only_commands(workspace: Path, line: str, expected: str) -> None:
    verdict = PolicyEngine(workspace_root=workspace).evaluate(
        "run_shell_command", {"command": line}, mode="autoEdit"
    )
    want = "allow" if expected == SAFE else "ask_user"
    assert verdict.decision == want, verdict.reason


@pytest.mark.parametrize("line", [line for line, v in TABLE if v == SAFE][:10])
def test_default_mode_still_asks_for_read_only_commands(workspace: Path, line: str) -> None:
    verdict = PolicyEngine(workspace_root=workspace).evaluate(
        "run_shell_command", {"command": line}, mode="default"
    )
    assert verdict.decision == "ask_user"


def test_reasons_say_what_is_wrong(workspace: Path) -> None:
    context = ShellContext(roots=(workspace,), cwd=workspace)
    assert "--output" in (read_only_problem("git diff --output=x", context) or "")
    assert "secrets" in (read_only_problem("cat .env", context) or "")
    assert "outside the workspace" in (read_only_problem("cat /etc/passwd", context) or "")
    assert "chained" in (read_only_problem("ls && ls", context) or "")
    assert read_only_problem("ls", context) is None


def test_dir_path_moves_the_workspace_check(workspace: Path) -> None:
    policy = PolicyEngine(workspace_root=workspace)
    args = {"command": "cat ../README.md", "dir_path": "src"}
    assert policy.evaluate("run_shell_command", args, mode="autoEdit").decision == "allow"
    args = {"command": "cat ../../x", "dir_path": "src"}
    assert policy.evaluate("run_shell_command", args, mode="autoEdit").decision == "ask_user"


def test_a_symlink_out_of_the_workspace_is_outside(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret-dir"
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    context = ShellContext(roots=(workspace,), cwd=workspace)
    assert "outside" in (read_only_problem("cat link/notes.txt", context) or "")


@pytest.fixture
def clean_git_writes() -> Iterator[None]:
    yield
    GitWrites._roots.clear()


@pytest.mark.usefixtures("clean_git_writes")
@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_file", {"file_path": ".git/config", "content": "x"}),
        ("replace", {"file_path": "/w/.git/hooks/pre-commit"}),
        ("run_shell_command", {"command": "echo x > .git/hooks/post-checkout"}),
        ("run_shell_command", {"command": "git config core.fsmonitor ./x"}),
        ("write_file", {"file_path": "sub/.git", "content": "gitdir: ../evil"}),
        ("write_file", {"file_path": "evil/HEAD", "content": "ref: refs/heads/main"}),
    ],
)
def test_after_a_write_under_git_dir_git_is_asked(
    workspace: Path, tool: str, args: dict[str, object]
) -> None:
    policy = PolicyEngine(workspace_root=workspace)
    status = {"command": "git status"}
    assert policy.evaluate("run_shell_command", status, mode="autoEdit").decision == "allow"
    policy.record_run(tool, dict(args))
    verdict = policy.evaluate("run_shell_command", status, mode="autoEdit")
    assert verdict.decision == "ask_user" and ".git/" in verdict.reason
    # other read-only commands still run; another session of the workspace asks for git too
    assert policy.evaluate("run_shell_command", {"command": "ls"}, mode="autoEdit").decision == (
        "allow"
    )
    other = PolicyEngine(workspace_root=workspace)
    assert other.evaluate("run_shell_command", status, mode="autoEdit").decision == "ask_user"


@pytest.mark.usefixtures("clean_git_writes")
def test_reads_of_git_dir_and_other_writes_do_not_count(workspace: Path) -> None:
    policy = PolicyEngine(workspace_root=workspace)
    policy.record_run("run_shell_command", {"command": "cat .git/HEAD"})
    policy.record_run("write_file", {"file_path": ".gitignore", "content": "x"})
    policy.record_run("run_shell_command", {"command": "npm test"})
    status = {"command": "git status"}
    assert policy.evaluate("run_shell_command", status, mode="autoEdit").decision == "allow"


def test_edits_under_git_dir_are_asked_in_every_mode(workspace: Path) -> None:
    policy = PolicyEngine(workspace_root=workspace)
    args = {"file_path": str(workspace / ".git" / "hooks" / "pre-commit"), "content": "x"}
    for mode in ("default", "autoEdit", "yolo"):
        assert policy.evaluate("write_file", args, mode=mode).decision == "ask_user"
    assert policy.evaluate("write_file", args, mode="plan").decision == "deny"
    ordinary = {"file_path": str(workspace / "a.txt"), "content": "x"}
    assert policy.evaluate("write_file", ordinary, mode="yolo").decision == "allow"


def write_policy(root: Path, text: str) -> None:
    directory = root / ".gemini" / "policies"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "a.toml").write_text(text, encoding="utf-8")


def test_toml_rules_keep_deciding_in_auto_edit(workspace: Path) -> None:
    write_policy(
        workspace,
        """
[[rule]]
commandPrefix = "npm test"
decision = "allow"
[[rule]]
commandPrefix = "git log"
decision = "ask_user"
priority = 100
[[rule]]
commandPrefix = "cat"
decision = "deny"
priority = 100
""",
    )
    policy = PolicyEngine(workspace_root=workspace)

    def decide(line: str) -> str:
        return policy.evaluate("run_shell_command", {"command": line}, mode="autoEdit").decision

    assert decide("npm test") == "allow"  # a user's allow still runs what is not read-only
    assert decide("git log -1") == "ask_user"  # a user's ask_user beats the classifier
    assert decide("cat README.md") == "deny"
    assert decide("git status") == "allow"


def test_words_remember_quoting_and_operators() -> None:
    tokens = shell_tokens("""a 'b c' "d $e" \\$f g* 2>&1""")
    assert tokens == [
        Word("a"),
        Word("b c"),
        Word("d $e", expands=True),
        Word("$f"),
        Word("g*", globs=True),
        Operator("2>&"),
        Word("1"),
    ]
    assert shell_tokens("echo 'open") is None
    assert shell_tokens("ls # a comment") == [Word("ls")]


def test_a_path_entry_in_the_workspace_makes_every_program_asked(workspace: Path) -> None:
    bin_dir = workspace / ".venv" / "bin"
    context = ShellContext(
        roots=(workspace,), cwd=workspace, search_path=(str(bin_dir), "/usr/bin")
    )
    assert "PATH" in (read_only_problem("ls", context) or "")
    relative = ShellContext(roots=(workspace,), cwd=workspace, search_path=("bin", "/usr/bin"))
    assert "PATH" in (read_only_problem("ls", relative) or "")
    clean = ShellContext(roots=(workspace,), cwd=workspace, search_path=("/usr/bin", "/bin"))
    assert read_only_problem("ls", clean) is None
