"""Did the sandbox stop a command? Read from its errors: a write refused (`EROFS`,
`EACCES`), a network connection that could not be made while the network is off, or
bwrap's own failure. A guess by design (the sandbox does not report), so the user is
asked before anything runs outside it; a command that succeeded is never a denial."""

from __future__ import annotations

import re

from runtime.tools.io.sandbox.settings import SandboxSettings

_WRITE = re.compile(r"Read-only file system|Permission denied|Operation not permitted", re.I)
_NETWORK = re.compile(
    r"Network is unreachable|Connection refused|Could not resolve host|"
    r"Temporary failure in name resolution|Name or service not known|"
    r"nodename nor servname|getaddrinfo|No address associated with hostname|"
    r"Failed to establish a new connection|Could not connect to|Couldn't connect to server|"
    r"Failed to connect to|unable to access '?https?://",
    re.I,
)
_BWRAP = re.compile(r"^bwrap: ", re.M)


def sandbox_denial(output: str, exit_code: int | None, settings: SandboxSettings) -> str | None:
    """Why the sandbox probably denied this run (for the permission request), or None."""
    if exit_code == 0 or not settings.active:
        return None
    if _BWRAP.search(output):
        return "the sandbox could not set up this command"
    if _WRITE.search(output):
        where = (
            "outside the workspace and its temp folder"
            if settings.mode == "workspace-write"
            else "anywhere (read-only sandbox)"
        )
        return f"it tried to write {where}, which the sandbox forbids"
    if not settings.allows_network and _NETWORK.search(output):
        return "it tried to reach the network, which the sandbox forbids"
    return None
