"""The `initialize` answer of ACP v2 (standard library only: `acp_server.stdio` answers
the first `initialize` line before pygls or the engine are loaded)."""

from __future__ import annotations

from acp_server import __version__

TYPE_CHECKING = False  # no `typing` import on the start-up path
if TYPE_CHECKING:
    from typing import Any

VERSION = 2


def agent_capabilities_v2() -> dict[str, Any]:
    """`{}` under `session` is v2's baseline (new, list, resume, close, prompt, cancel,
    update); auth methods are not offered (credentials come from the agent's environment),
    so `auth/login` and `auth/logout` are not served."""
    return {
        "session": {
            "prompt": {"image": {}, "embeddedContext": {}},
            "mcp": {"stdio": {}, "http": {}},
            "delete": {},
            "additionalDirectories": {},
        }
    }


def initialize_result_v2() -> dict[str, Any]:
    """The answer to a well-formed v2 `initialize` (checked by `acp_server.capabilities`)."""
    return {
        "protocolVersion": VERSION,
        "info": {"name": "adk-acp", "title": "ADK ACP agent (Gemini)", "version": __version__},
        "capabilities": agent_capabilities_v2(),
    }
