"""`Sandbox`: one session's sandbox, which wraps a command line so that it runs
confined (bubblewrap on Linux, seatbelt on macOS), or tells why it cannot.

The sandbox is applied per command, inside the agent's process: what it allows
follows the session (its roots, its settings), so a subagent, plan mode, a warm
child or a `serve` session confines its commands exactly as a cold process does.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from runtime.services.secrets import is_credential_name, looks_secret
from runtime.tools.io.sandbox.bwrap import BwrapLayout, bwrap_args, bwrap_availability
from runtime.tools.io.sandbox.denials import sandbox_denial
from runtime.tools.io.sandbox.seatbelt import SANDBOX_EXEC, seatbelt_argv, seatbelt_profile
from runtime.tools.io.sandbox.secrets import existing_secrets
from runtime.tools.io.sandbox.settings import SandboxSettings

Purpose = Literal["local", "terminal", "background"]
"""How the wrapped command runs: a local process group the runner waits for, the
editor's terminal (the editor's own environment), or a background command whose
launcher exits at once."""


def installation() -> tuple[Path, ...]:
    """Where the agent itself lives: its interpreter's environments and the folder of
    its packages (a checkout, for an editable install). A command may run the agent's
    own tools (a stdio MCP server shipped beside it), and none of it is a secret."""
    packages = Path(__file__).resolve().parents[4]  # the folder holding `runtime/`
    return tuple({Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), packages})


@dataclass(frozen=True)
class Sandbox:
    """The sandbox of one session's commands (`settings`), for its `roots`, with the
    user's `home` and the agent's environment `env` (where secrets are looked up).

    `problem` is set when the sandbox was asked for but cannot run here: commands then
    run as without one, and nothing claims they are confined.
    """

    settings: SandboxSettings
    roots: tuple[Path, ...]
    home: Path
    env: Mapping[str, str] = field(default_factory=dict)
    env_allowlist: tuple[str, ...] = ()
    platform: str = sys.platform
    program: str | None = None
    problem: str | None = None

    @classmethod
    def for_session(
        cls,
        settings: SandboxSettings,
        *,
        roots: Sequence[Path],
        home: Path,
        env: Mapping[str, str],
        env_allowlist: Sequence[str] = (),
        platform: str = sys.platform,
    ) -> Sandbox:
        """The session's sandbox; checks once per process that the backend runs here."""
        base = cls(settings, tuple(roots), home, dict(env), tuple(env_allowlist), platform)
        if not settings.active:
            return base
        if platform.startswith("linux"):
            found = bwrap_availability()
            return replace(base, program=found.program, problem=found.problem)
        if platform == "darwin":
            if Path(SANDBOX_EXEC).exists():
                return replace(base, program=SANDBOX_EXEC)
            return replace(base, problem=f"{SANDBOX_EXEC} is missing")
        return replace(base, problem=f"no sandbox is known for {platform}")

    @property
    def active(self) -> bool:
        """Commands run confined (asked for, and able to run here)."""
        return self.settings.active and self.program is not None

    def with_roots(self, roots: Sequence[Path]) -> Sandbox:
        return replace(self, roots=tuple(roots))

    def describe(self) -> str:
        """The sandbox in a few words, for notices and permission requests."""
        network = "with network" if self.settings.allows_network else "no network"
        return f"the {self.settings.mode} sandbox ({network})"

    def wrap(self, argv: Sequence[str], cwd: Path, purpose: Purpose = "local") -> list[str]:
        """`argv` as run in the sandbox (unchanged when it is not active)."""
        if not self.active or self.program is None:
            return list(argv)
        secrets = tuple(existing_secrets(self.home, self.env, self.roots))
        if self.program == SANDBOX_EXEC:
            return seatbelt_argv(seatbelt_profile(self.settings, self.roots, secrets), argv)
        layout = BwrapLayout(
            roots=self.roots,
            cwd=cwd,
            secrets=secrets,
            unset_env=self._editor_secrets() if purpose == "terminal" else (),
            die_with_parent=purpose != "background",
            new_session=purpose == "terminal",
            installation=installation(),
        )
        return [self.program, *bwrap_args(self.settings, layout), "--", *argv]

    def _editor_secrets(self) -> tuple[str, ...]:
        """Credential variables the editor's terminal would pass on (the ones our own
        environment scrubbing drops: the editor started us with its environment)."""
        allowed = set(self.env_allowlist)
        return tuple(
            sorted(
                name
                for name, value in self.env.items()
                if name not in allowed and (is_credential_name(name) or looks_secret(value))
            )
        )

    def denial(self, output: str, exit_code: int | None) -> str | None:
        """Why the sandbox probably stopped a command (None: it did not, or none is on)."""
        if not self.active:
            return None
        return sandbox_denial(output, exit_code, self.settings)
