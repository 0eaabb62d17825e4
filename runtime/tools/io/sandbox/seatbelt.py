"""macOS: the same sandbox modes as a seatbelt profile for `sandbox-exec -p PROFILE`.

Generated and unit-tested as text only; it has not been run on a Mac (README:
"Sandbox"). Everything is readable but the secrets; writes go to the session's roots
(`workspace-write`), the per-user temp folders and `/dev/null`-like devices; the
network is denied unless allowed (`workspace-write` with the network on).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from runtime.tools.io.sandbox.settings import SandboxSettings

SANDBOX_EXEC = "/usr/bin/sandbox-exec"

_DEVICES = ("/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper", "/dev/stdout", "/dev/stderr")
_TEMP = ("/private/tmp", "/private/var/folders")


def _quote(path: Path | str) -> str:
    """A path as a seatbelt string literal (backslashes and quotes escaped)."""
    text = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def seatbelt_profile(
    settings: SandboxSettings, roots: Iterable[Path], secrets: Iterable[tuple[Path, bool]]
) -> str:
    """The SBPL profile of `settings`: deny by default, then what the mode allows."""
    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-exec)",
        "(allow process-fork)",
        "(allow signal (target same-sandbox))",
        "(allow sysctl-read)",
        "(allow mach-lookup)",
        "(allow ipc-posix-shm)",
        "(allow file-read*)",
        "(allow file-write* "
        + " ".join(f"(literal {_quote(device)})" for device in _DEVICES)
        + ")",
        "(allow file-write* " + " ".join(f"(subpath {_quote(t)})" for t in _TEMP) + ")",
    ]
    if settings.mode == "workspace-write":
        writable = " ".join(f"(subpath {_quote(Path(root))})" for root in roots)
        if writable:
            lines.append(f"(allow file-write* {writable})")
    if settings.allows_network:
        lines.append("(allow network*)")  # else denied by default, DNS included
    for path, is_dir in secrets:
        matcher = "subpath" if is_dir else "literal"
        lines.append(f"(deny file-read* file-write* ({matcher} {_quote(path)}))")
    return "\n".join(lines) + "\n"


def seatbelt_argv(profile: str, argv: Iterable[str]) -> list[str]:
    """`sandbox-exec -p PROFILE argv...`."""
    return [SANDBOX_EXEC, "-p", profile, *argv]
