"""The fallback-model choice, asked in the editor.

When the model runs out (quota, capacity, not found) and the policy is not
silent, the user decides: a `session/request_permission` shown as a tool call
of kind `switch_mode`, titled "<model> is out of quota — switch to <fallback>?",
with the options "Switch for this request" (retry_once), "Switch for the rest of
the session" (retry_always) and "Stop" (stop). A cancelled answer means stop.
When the client advertises `elicitation`, the same choice is asked as a form.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any, Protocol

from pygls.exceptions import JsonRpcException

from runtime.durations import format_duration
from runtime.host import (
    FallbackChoice,
    FallbackIntent,
    HostCapabilities,
    PermissionOption,
    PermissionOutcome,
    PermissionRequest,
)
from runtime.protocol import DisplayText

if TYPE_CHECKING:
    from acp_server.transport import ClientLink

logger = logging.getLogger(__name__)


class Asker(Protocol):
    """What the choice is asked through: one session's `AcpHost`."""

    session_id: str
    conn: ClientLink
    capabilities: HostCapabilities

    async def request_permission(self, request: PermissionRequest) -> PermissionOutcome: ...


OPTIONS = (
    PermissionOption(option_id="retry_once", name="Switch for this request", kind="allow_once"),
    PermissionOption(
        option_id="retry_always", name="Switch for the rest of the session", kind="allow_always"
    ),
    PermissionOption(option_id="stop", name="Stop", kind="reject_once"),
)

_WHY = {
    "terminal": "is out of quota",
    "transient": "is over its rate limit",
    "not_found": "is not available",
    "unknown": "failed",
}


def fallback_title(choice: FallbackChoice) -> str:
    return f"{choice.failed_model} {_WHY[choice.failure_kind]} — switch to {choice.fallback_model}?"


def _describe(choice: FallbackChoice) -> str:
    lines = [choice.message]
    if choice.quota:
        lines.append(f"Quota: {choice.quota}")
    if choice.reset_after_seconds:
        lines.append(f"Resets in about {format_duration(choice.reset_after_seconds)}.")
    return "\n".join(lines)


async def ask_fallback(host: Asker, choice: FallbackChoice) -> FallbackIntent:
    if host.capabilities.elicitation:
        try:
            return await _ask_by_form(host, choice)
        except JsonRpcException as exc:
            logger.info("elicitation failed (%s); asking with a permission request", exc.message)
    request = PermissionRequest(
        tool_call_id=f"fallback-{uuid.uuid4().hex[:8]}",
        title=fallback_title(choice),
        kind="switch_mode",
        options=OPTIONS,
        raw_input={"failedModel": choice.failed_model, "fallbackModel": choice.fallback_model},
        content=(DisplayText(text=_describe(choice)),),
    )
    outcome = await host.request_permission(request)
    if outcome.option_id in ("retry_once", "retry_always"):
        return outcome.option_id  # type: ignore[return-value]
    return "stop"


async def _ask_by_form(host: Asker, choice: FallbackChoice) -> FallbackIntent:
    params: dict[str, Any] = {
        "sessionId": host.session_id,
        "mode": "form",
        "message": f"{fallback_title(choice)}\n\n{_describe(choice)}",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "choice": {
                    "type": "string",
                    "title": "What now?",
                    "oneOf": [{"const": o.option_id, "title": o.name} for o in OPTIONS],
                    "default": "retry_once",
                }
            },
            "required": ["choice"],
        },
    }
    result = await host.conn.request("elicitation/create", params) or {}
    if result.get("action") != "accept":
        return "stop"
    picked = (result.get("content") or {}).get("choice")
    return picked if picked in ("retry_once", "retry_always") else "stop"
