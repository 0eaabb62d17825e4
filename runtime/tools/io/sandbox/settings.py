"""Which sandbox a session's commands run in (issue 35): the mode, the network, and
what else is confined, from the command line, the environment and the settings.

Standard library only: `runtime.config` resolves it on the start-up path.

- Mode: `--sandbox [MODE]`, then `ADK_ACP_SANDBOX`, then settings `tools.sandbox`
  (Gemini CLI's key: `true` is `workspace-write`, `false` is `off`; its container
  commands, `docker`, `podman`, ... are told as not supported and our own
  `workspace-write` is used instead). A workspace's settings never loosen the user's:
  the stricter of the two files wins.
- Network (`workspace-write` only): `ADK_ACP_SANDBOX_NETWORK=1`, or `sandbox.network`
  in the user's settings (a repository's own settings cannot open the network).
- Hooks' commands run sandboxed when `hooksConfig.sandbox` is true; a stdio MCP server
  when its entry says `"sandbox": true`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

SandboxMode = Literal["off", "read-only", "workspace-write"]

SANDBOX_ENV = "ADK_ACP_SANDBOX"
NETWORK_ENV = "ADK_ACP_SANDBOX_NETWORK"
FLAG_DEFAULT: SandboxMode = "workspace-write"
"""What `--sandbox` without a mode means."""

MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)
_STRICTNESS: dict[SandboxMode, int] = {"off": 0, "workspace-write": 1, "read-only": 2}
_CONTAINER_VALUES = frozenset({"docker", "podman", "sandbox-exec", "runsc", "lxc"})
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", ""})


@dataclass(frozen=True)
class SandboxSettings:
    """What the user asked for. `mode` off: commands run as before. `network`: a
    `workspace-write` sandbox may reach the network (`read-only` never does).
    `hooks`: hooks' commands run in the sandbox too."""

    mode: SandboxMode = "off"
    network: bool = False
    hooks: bool = False

    @property
    def active(self) -> bool:
        return self.mode != "off"

    @property
    def allows_network(self) -> bool:
        return self.mode == "off" or (self.mode == "workspace-write" and self.network)


OFF = SandboxSettings()


def _section(settings: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = settings.get(name)
    return value if isinstance(value, Mapping) else {}


def parse_mode(value: object, where: str) -> tuple[SandboxMode, str | None]:
    """The mode a flag, variable or setting names, and a problem to tell (or None).
    An unknown value asks for a sandbox all the same: `workspace-write`, told."""
    if value is None or value is False:
        return "off", None
    if value is True:
        return "workspace-write", None
    if not isinstance(value, str):
        return "workspace-write", f"{where}: {value!r} is not a sandbox mode; using workspace-write"
    text = value.strip().lower()
    if text in MODES:
        return text, None
    if text in _FALSE:
        return "off", None
    if text in _TRUE:
        return "workspace-write", None
    if text in _CONTAINER_VALUES:
        return "workspace-write", (
            f"{where}: {value!r} (a container sandbox) is not supported by adk-acp; its own "
            "workspace-write sandbox is used instead"
        )
    return "workspace-write", (
        f"{where}: unknown sandbox mode {value!r} (expected {', '.join(MODES)}); "
        "using workspace-write"
    )


def resolve_sandbox(
    flag: str | None,
    env: Mapping[str, str],
    user_settings: Mapping[str, Any],
    workspace_settings: Mapping[str, Any],
) -> tuple[SandboxSettings, tuple[str, ...]]:
    """The session's sandbox and the problems to tell (see the module doc)."""
    problems: list[str] = []
    if flag is not None:
        mode, problem = parse_mode(flag, "--sandbox")
    elif SANDBOX_ENV in env:
        mode, problem = parse_mode(env[SANDBOX_ENV], SANDBOX_ENV)
    else:
        user_mode, problem = parse_mode(
            _section(user_settings, "tools").get("sandbox"), "tools.sandbox"
        )
        if problem:
            problems.append(problem)
        ws_mode, problem = parse_mode(
            _section(workspace_settings, "tools").get("sandbox"), "tools.sandbox (workspace)"
        )
        mode = max(user_mode, ws_mode, key=lambda m: _STRICTNESS[m])
    if problem:
        problems.append(problem)
    network = env.get(NETWORK_ENV, "").strip().lower() in _TRUE or (
        _section(user_settings, "sandbox").get("network") is True
    )
    hooks = any(
        _section(s, "hooksConfig").get("sandbox") is True
        for s in (user_settings, workspace_settings)
    )
    return SandboxSettings(mode=mode, network=network, hooks=hooks), tuple(problems)


def server_sandboxed(entry: Mapping[str, Any]) -> bool:
    """Whether a stdio MCP server's settings entry asks to run it in the sandbox."""
    return entry.get("sandbox") is True
