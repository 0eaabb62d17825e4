"""The sandbox's settings, command lines, seatbelt profile and denial reading, as text
(issue 35); the real bubblewrap runs in `test_sandbox_bwrap.py` and the e2e tier."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.tools.io.sandbox import Sandbox, SandboxSettings, resolve_sandbox
from runtime.tools.io.sandbox.bwrap import BwrapLayout, bwrap_args
from runtime.tools.io.sandbox.denials import sandbox_denial
from runtime.tools.io.sandbox.seatbelt import seatbelt_profile
from runtime.tools.io.sandbox.secrets import env_files, existing_secrets

WRITE = SandboxSettings("workspace-write")


def test_the_flag_wins_then_the_environment_then_the_settings() -> None:
    user = {"tools": {"sandbox": "read-only"}}
    assert resolve_sandbox("workspace-write", {"ADK_ACP_SANDBOX": "off"}, user, {})[0].mode == (
        "workspace-write"
    )
    assert resolve_sandbox(None, {"ADK_ACP_SANDBOX": "off"}, user, {})[0].mode == "off"
    assert resolve_sandbox(None, {}, user, {})[0].mode == "read-only"
    assert resolve_sandbox(None, {}, {}, {}) == (SandboxSettings(), ())


def test_gemini_cli_values_of_tools_sandbox() -> None:
    assert resolve_sandbox(None, {}, {"tools": {"sandbox": True}}, {})[0].mode == "workspace-write"
    assert resolve_sandbox(None, {}, {"tools": {"sandbox": False}}, {})[0].mode == "off"
    settings, problems = resolve_sandbox(None, {}, {"tools": {"sandbox": "docker"}}, {})
    assert settings.mode == "workspace-write"  # a sandbox was asked for: ours, told
    assert len(problems) == 1 and "'docker'" in problems[0] and "not supported" in problems[0]
    settings, problems = resolve_sandbox(None, {"ADK_ACP_SANDBOX": "strict"}, {}, {})
    assert settings.mode == "workspace-write" and "unknown sandbox mode 'strict'" in problems[0]


def test_a_workspace_never_loosens_the_users_sandbox() -> None:
    user = {"tools": {"sandbox": True}, "sandbox": {"network": False}}
    workspace = {"tools": {"sandbox": False}, "sandbox": {"network": True}}
    settings, _ = resolve_sandbox(None, {}, user, workspace)
    assert settings == SandboxSettings("workspace-write", network=False)
    stricter, _ = resolve_sandbox(None, {}, user, {"tools": {"sandbox": "read-only"}})
    assert stricter.mode == "read-only"


def test_network_and_hooks_options() -> None:
    env = {"ADK_ACP_SANDBOX_NETWORK": "1"}
    assert resolve_sandbox("workspace-write", env, {}, {})[0].allows_network
    user = {"sandbox": {"network": True}, "hooksConfig": {"sandbox": True}}
    settings, _ = resolve_sandbox("workspace-write", {}, user, {})
    assert settings.allows_network and settings.hooks
    assert not resolve_sandbox("read-only", env, user, {})[0].allows_network  # never


def layout(tmp_path: Path, **kwargs: object) -> BwrapLayout:
    return BwrapLayout(roots=(tmp_path / "ws",), cwd=tmp_path / "ws", **kwargs)  # type: ignore[arg-type]


def test_bwrap_line_order_private_tmp_then_roots_then_secrets(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    secret = ((tmp_path / "ws" / ".aws").resolve(), True)  # under /tmp: only inside a root
    outside = ((tmp_path / "home" / ".netrc").resolve(), False)  # the private /tmp hides it
    args = bwrap_args(WRITE, layout(tmp_path, secrets=(secret, outside)))
    assert str(outside[0]) not in args
    ws = str((tmp_path / "ws").resolve())
    assert args[:7] == [
        "--unshare-user", "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc",
        "--unshare-uts", "--unshare-cgroup-try",
    ]  # fmt: skip
    assert "--unshare-net" in args and "--die-with-parent" in args
    order = [args.index("--ro-bind"), args.index("/tmp"), args.index(ws)]
    assert order == sorted(order)  # the root is bound after the private /tmp covers /tmp
    assert args[args.index(ws) - 1] == "--bind"
    hidden = args.index(str(secret[0]))
    assert args[hidden - 1] == "--tmpfs" and args[hidden + 1 : hidden + 3] == [
        "--remount-ro",
        str(secret[0]),
    ]
    assert hidden > args.index(ws)
    assert args[-2:] == ["--chdir", str(tmp_path / "ws")]


def test_read_only_binds_roots_read_only_and_network_as_asked(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    ws = str((tmp_path / "ws").resolve())
    ro = bwrap_args(SandboxSettings("read-only", network=True), layout(tmp_path))
    assert ro[ro.index(ws) - 1] == "--ro-bind" and "--unshare-net" in ro
    net = bwrap_args(SandboxSettings("workspace-write", network=True), layout(tmp_path))
    assert "--unshare-net" not in net
    terminal = bwrap_args(
        WRITE, layout(tmp_path, unset_env=("GH_TOKEN",), new_session=True, die_with_parent=False)
    )
    assert "--new-session" in terminal and "--die-with-parent" not in terminal
    assert terminal[terminal.index("--unsetenv") + 1] == "GH_TOKEN"


def test_secrets_found_are_the_existing_ones(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    for folder in (home / ".ssh", home / ".config" / "gh", ws):
        folder.mkdir(parents=True)
    for file in (home / ".netrc", home / ".config/adk-acp/credentials.json", ws / ".env.local"):
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("secret")
    (ws / "env.txt").write_text("not a secret")
    found = existing_secrets(home, {}, (ws,))
    assert {p.name for p, _ in found} == {".ssh", "gh", ".netrc", "credentials.json", ".env.local"}
    assert dict(found)[(home / ".ssh").resolve()] is True
    assert dict(found)[(home / ".netrc").resolve()] is False


def test_an_off_sandbox_leaves_the_command_line_alone(tmp_path: Path) -> None:
    sandbox = Sandbox.for_session(SandboxSettings(), roots=(tmp_path,), home=tmp_path, env={})
    assert not sandbox.active
    assert sandbox.wrap(["bash", "-c", "ls"], tmp_path) == ["bash", "-c", "ls"]
    assert sandbox.denial("Read-only file system", 1) is None


def test_an_unknown_platform_is_told_not_claimed(tmp_path: Path) -> None:
    sandbox = Sandbox.for_session(WRITE, roots=(tmp_path,), home=tmp_path, env={}, platform="win32")
    assert not sandbox.active and sandbox.problem == "no sandbox is known for win32"


def test_the_editor_terminal_drops_the_credentials_of_the_environment(tmp_path: Path) -> None:
    env = {"GH_TOKEN": "x", "PATH": "/bin", "MY_API_KEY": "k", "KEEP_TOKEN": "y"}
    sandbox = Sandbox(WRITE, (tmp_path,), tmp_path, env, env_allowlist=("KEEP_TOKEN",))
    assert sandbox._editor_secrets() == ("GH_TOKEN", "MY_API_KEY")


@pytest.mark.parametrize(
    ("output", "code", "settings", "expected"),
    [
        ("bash: /etc/x: Read-only file system", 1, WRITE, "write outside the workspace"),
        ("touch: cannot touch '/x': Permission denied", 1, WRITE, "write outside"),
        ("Read-only file system", 1, SandboxSettings("read-only"), "anywhere"),
        ("Read-only file system", 0, WRITE, None),  # it succeeded: nothing to escalate
        ("curl: (7) Failed to connect to 127.0.0.1 port 9", 7, WRITE, "reach the network"),
        ("Could not resolve host: example.com", 6, WRITE, "reach the network"),
        ("Connection refused", 1, SandboxSettings("workspace-write", network=True), None),
        ("bwrap: Can't chdir to /x: No such file", 1, WRITE, "could not set up"),
        ("AssertionError: 1 != 2", 1, WRITE, None),
    ],
)
def test_denials_read_from_the_errors(
    output: str, code: int, settings: SandboxSettings, expected: str | None
) -> None:
    found = sandbox_denial(output, code, settings)
    assert (found is None) if expected is None else (found is not None and expected in found)


def test_seatbelt_profile_of_each_mode(tmp_path: Path) -> None:
    ws = tmp_path / 'w"s'
    secrets = ((tmp_path / ".ssh", True), (tmp_path / ".netrc", False))
    write = seatbelt_profile(WRITE, (ws,), secrets)
    lines = write.splitlines()
    assert lines[:2] == ["(version 1)", "(deny default)"]
    assert "(allow file-read*)" in lines
    assert f'(allow file-write* (subpath "{tmp_path}/w\\"s"))' in lines  # quoted
    assert not any("network" in line for line in lines)  # denied by default
    assert f'(deny file-read* file-write* (subpath "{tmp_path}/.ssh"))' in lines
    assert f'(deny file-read* file-write* (literal "{tmp_path}/.netrc"))' in lines
    assert lines.index(f'(deny file-read* file-write* (subpath "{tmp_path}/.ssh"))') > lines.index(
        "(allow file-read*)"
    )  # the later rule wins in SBPL
    read_only = seatbelt_profile(SandboxSettings("read-only"), (ws,), ())
    assert f'"{tmp_path}/w\\"s"' not in read_only  # nothing of the workspace is writable
    networked = seatbelt_profile(SandboxSettings("workspace-write", network=True), (ws,), ())
    assert "(allow network*)" in networked.splitlines()


def test_env_files_are_found_in_every_folder_of_a_root_but_tool_trees(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for name in ("services/api/.env", "deep/a/b/c/.env.production", ".envrc",
                 "node_modules/pkg/.env", ".git/.env", "link/.env"):  # fmt: skip
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("secret")
    (ws / "linked").symlink_to(ws / "link")  # a folder link: not followed twice
    (ws / "services" / "env.example").write_text("not a secret")
    found = {str(p.relative_to(ws)) for p in env_files((ws,))}
    assert found == {"services/api/.env", "deep/a/b/c/.env.production", ".envrc", "link/.env"}


def test_the_agent_s_installation_under_tmp_stays_visible_read_only(tmp_path: Path) -> None:
    """A checkout or virtual environment under /tmp (a CI clone) is bound back into the
    private /tmp, read-only, before the roots; a secret inside it is still covered."""
    settings = SandboxSettings(mode="workspace-write")
    secret = Path("/tmp/agent/home/.netrc")
    layout = BwrapLayout(
        roots=(Path("/tmp/agent/ws"),),
        cwd=Path("/tmp/agent/ws"),
        secrets=((secret, False),),
        installation=(Path("/tmp/agent"), Path("/tmp/agent/.venv"), Path("/usr")),
    )
    args = bwrap_args(settings, layout)
    kept = args.index("/tmp/agent")
    assert args[kept - 1 : kept + 2] == ["--ro-bind", "/tmp/agent", "/tmp/agent"]
    assert args.index("--tmpfs") < kept < args.index("/tmp/agent/ws")  # roots writable after
    assert "/usr" not in args[args.index("--tmpfs") :]  # not under /tmp: nothing to add
    assert args.count("/tmp/agent") == 2  # the venv inside it is not bound again
    assert args[args.index(str(secret)) - 2] == "--ro-bind"  # still covered
