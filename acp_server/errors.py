"""JSON-RPC error codes, in one table, and the mapping from runtime errors.

| code   | name                 | when                                                        |
|--------|----------------------|-------------------------------------------------------------|
| -32700 | parse error          | a line that is not JSON (answered with id null)             |
| -32600 | invalid request      | JSON that is not a JSON-RPC 2.0 request/notification        |
| -32601 | method not found     | unknown method (unknown notifications are ignored)          |
| -32602 | invalid params       | params fail validation (data: the validation errors); bad   |
|        |                      | cwd; a path outside the workspace                           |
| -32603 | internal error       | a bug or an unexpected failure; the session stays usable    |
| -32800 | request cancelled    | `$/cancel_request` cancelled the request                    |
| -32000 | auth required        | no credentials (and no fake model)                          |
| -32002 | resource not found   | unknown session id                                          |
| -32003 | model error          | the model call failed for good (quota, not found, ...): a   |
|        |                      | `ModelError`, or a turn's `ModelFailure`; data: {status,    |
|        |                      | code, model, httpStatus} (those known)                      |
| -32004 | busy                 | a prompt is already running in the session                  |
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.errors import (
    AuthRequiredError,
    CapabilityNotOffered,
    ConfigError,
    ModelError,
    PathOutsideWorkspaceError,
    RuntimeAgentError,
    StreamActiveError,
)

if TYPE_CHECKING:  # not at import: the early answers import this module
    from runtime.protocol import ErrorEvent, ModelFailure

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
MODEL_ERROR = -32003
BUSY = -32004


class AcpError(Exception):
    """An error to send back as a JSON-RPC error response."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def invalid_params(message: str, data: Any = None) -> AcpError:
    return AcpError(INVALID_PARAMS, message, data)


def session_not_found(session_id: str) -> AcpError:
    return AcpError(
        RESOURCE_NOT_FOUND, f"Session not found: {session_id}", {"sessionId": session_id}
    )


def from_runtime(exc: RuntimeAgentError) -> AcpError:
    """Map an engine error onto the table above."""
    if isinstance(exc, AuthRequiredError):
        return AcpError(
            AUTH_REQUIRED,
            f"Authentication required: {exc}".replace(
                "Authentication required: Authentication required:", "Authentication required:"
            ),
        )
    if isinstance(exc, StreamActiveError):
        return AcpError(BUSY, str(exc))
    if isinstance(exc, (PathOutsideWorkspaceError, ConfigError)):
        return AcpError(INVALID_PARAMS, str(exc))
    if isinstance(exc, ModelError):
        data = {"code": exc.code, "status": exc.status, "model": exc.model}
        return AcpError(MODEL_ERROR, str(exc), {k: v for k, v in data.items() if v is not None})
    if isinstance(exc, CapabilityNotOffered):
        return AcpError(INTERNAL_ERROR, str(exc))
    return AcpError(INTERNAL_ERROR, str(exc))


def model_failure(message: str, failure: ModelFailure) -> AcpError:
    """The answer to a prompt whose model call failed for good."""
    data: dict[str, Any] = {"status": failure.status}
    if failure.code:
        data["code"] = failure.code
    if failure.model:
        data["model"] = failure.model
    if failure.http_status is not None:
        data["httpStatus"] = failure.http_status
    return AcpError(MODEL_ERROR, message, data)


def turn_failed(fatal: ErrorEvent) -> AcpError:
    """The answer to a prompt whose turn ended with `fatal`: a model failure, or an
    internal error (a bug: the session stays usable)."""
    if fatal.failure is not None:
        return model_failure(fatal.message, fatal.failure)
    return AcpError(INTERNAL_ERROR, fatal.message, {"status": fatal.status, **(fatal.meta or {})})
