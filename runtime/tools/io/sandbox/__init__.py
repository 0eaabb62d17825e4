"""The sandbox of the commands the agent runs (issue 35): settings, the bwrap and
seatbelt command lines, what is hidden, and how a denial is recognised."""

from runtime.tools.io.sandbox.settings import (
    NETWORK_ENV,
    OFF,
    SANDBOX_ENV,
    SandboxMode,
    SandboxSettings,
    resolve_sandbox,
)
from runtime.tools.io.sandbox.wrapper import Sandbox

__all__ = [
    "NETWORK_ENV",
    "OFF",
    "SANDBOX_ENV",
    "Sandbox",
    "SandboxMode",
    "SandboxSettings",
    "resolve_sandbox",
]
