"""The runtime's error hierarchy. `acp_server/errors.py` maps these to JSON-RPC codes."""

from __future__ import annotations


class RuntimeAgentError(Exception):
    """Base of every error the engine raises on purpose."""


class AuthRequiredError(RuntimeAgentError):
    """No credentials and no fake model: the user must authenticate first."""


class ConfigError(RuntimeAgentError):
    """Settings, flags or files that cannot be used as given."""


class StreamActiveError(RuntimeAgentError):
    """A message was sent while the session's previous stream is still running."""


class CapabilityNotOffered(RuntimeAgentError):
    """The engine asked the editor for something it did not advertise."""


class HostRequestError(RuntimeAgentError):
    """The editor answered one of our requests (a permission question) with an error."""


class PathOutsideWorkspaceError(RuntimeAgentError):
    """A path resolves outside every workspace root of the session."""


class ToolError(RuntimeAgentError):
    """A tool could not do its job; the message goes back to the model as the tool's result."""


class ModelError(RuntimeAgentError):
    """The model call failed for good (after retries and fallback).

    `status` is the gRPC status name, `code` a finer code such as QUOTA_EXHAUSTED.
    """

    def __init__(
        self,
        message: str,
        *,
        status: str = "INTERNAL",
        code: str | None = None,
        model: str | None = None,
        http_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.model = model
        self.http_status = http_status
