"""A failed call as the model sees it: coded errors and error results."""

from __future__ import annotations

from runtime.errors import PathOutsideWorkspaceError, ToolError
from runtime.tools.base import ToolResult
from runtime.tools.builtin.args import ArgError


class CodedToolError(ToolError):
    """A tool failure with a machine-readable `error_type` (e.g. `edit_no_match`)."""

    def __init__(self, message: str, error_type: str) -> None:
        super().__init__(message)
        self.error_type = error_type


def error_result(message: str, error_type: str) -> ToolResult:
    return ToolResult(llm_content=message, is_error=True, error_type=error_type)


def error_from_exception(exc: BaseException) -> ToolResult:
    """The expected failures of file tools as results for the model."""
    if isinstance(exc, PathOutsideWorkspaceError):
        return error_result(str(exc), "path_outside_workspace")
    if isinstance(exc, CodedToolError):
        return error_result(str(exc), exc.error_type)
    if isinstance(exc, ArgError):
        return error_result(str(exc), "invalid_arguments")
    if isinstance(exc, FileNotFoundError):
        return error_result(str(exc) or "File not found", "file_not_found")
    if isinstance(exc, IsADirectoryError):
        return error_result(str(exc) or "Path is a directory", "is_directory")
    if isinstance(exc, ToolError):
        return error_result(str(exc), str(getattr(exc, "error_type", "tool_error")))
    if isinstance(exc, PermissionError):
        return error_result(f"Permission denied: {exc.filename or exc}", "permission_denied")
    return error_result(f"{type(exc).__name__}: {exc}", "io_error")
