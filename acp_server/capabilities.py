"""What the agent advertises at `initialize`: capabilities, auth methods, its name.

Standard library only: `acp_server.stdio` answers the first `initialize` line with
`initialize_result` before pygls, ADK or genai are loaded, so editors
get their answer at once; `handlers/initialize.py` answers any later one with the
same function. What it advertises is only what works.
"""

from __future__ import annotations

from acp_server import __version__

TYPE_CHECKING = False  # no `typing` import on the start-up path
if TYPE_CHECKING:
    from typing import Any

PROTOCOL_VERSION = 1
V2_PROTOCOL_VERSION = 2
"""ACP v2 (preview), spoken to a client that asks for it (`acp_server/v2/`)."""

AUTH_METHODS: list[dict[str, Any]] = [
    {
        "id": "gemini-api-key",
        "name": "Gemini API key",
        "description": "Uses GEMINI_API_KEY (or GOOGLE_API_KEY) from the agent's environment, "
        "or a key passed in _meta.api-key.",
    },
    {
        "id": "vertex-ai",
        "name": "Vertex AI",
        "description": "Uses GOOGLE_CLOUD_PROJECT / GOOGLE_CLOUD_LOCATION with Application Default "
        "Credentials, or GOOGLE_API_KEY in express mode.",
    },
]


LOGIN_METHOD: dict[str, Any] = {
    "id": "login",
    "name": "Log in in terminal",
    "description": "Paste a Gemini API key once (adk-acp --login); it is saved for later "
    "sessions in an owner-only file outside the workspace.",
    "type": "terminal",
    "args": ["--login"],
    "env": {},
}
"""The registry's terminal auth: offered when the client says it can run it."""


def _offers_terminal_auth(caps: dict[str, Any] | None) -> bool:
    if not caps:
        return False
    auth = caps.get("auth")
    meta = caps.get("_meta")
    return bool(
        (isinstance(auth, dict) and auth.get("terminal") is True)
        or (isinstance(meta, dict) and meta.get("terminal-auth") is True)
    )


class InitializeParamsError(ValueError):
    """The initialize params are unusable (answered with -32602)."""


def agent_capabilities() -> dict[str, Any]:
    return {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
        "mcpCapabilities": {"http": True, "sse": True},
        "auth": {"logout": {}},
        "sessionCapabilities": {
            "additionalDirectories": {},
            "list": {},
            "resume": {},
            "close": {},
            "delete": {},
            "fork": {},
            "title": {},
            "systemPrompt": {"mode": {"override": {}}},  # append and override
        },
        # An edit's question may be answered with the user's version of the file (issue 36).
        "_meta": {"adkAcp": {"editReview": True}},
    }


def negotiated_version(params: Any) -> int:
    """The version an initialize with `params` is answered with: 2 to a client asking for
    2 or more (our highest at or below its own), 1 to any other."""
    version = params.get("protocolVersion") if isinstance(params, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version >= 2:
        return V2_PROTOCOL_VERSION
    return PROTOCOL_VERSION


def initialize_result(params: Any) -> dict[str, Any]:
    """The initialize answer. Version negotiation: 1 to any request below 2; 2 (ACP v2,
    `acp_server/v2/capabilities.py`) to a request for 2 or more."""
    if not isinstance(params, dict):
        raise InitializeParamsError("initialize expects an object with protocolVersion")
    version = params.get("protocolVersion")
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= 65535:
        raise InitializeParamsError("protocolVersion must be an integer (this agent speaks 1, 2)")
    if version >= V2_PROTOCOL_VERSION:
        from acp_server.v2.capabilities import initialize_result_v2

        v2_caps = params.get("capabilities")
        if v2_caps is not None and not isinstance(v2_caps, dict):
            raise InitializeParamsError("capabilities must be an object")
        return initialize_result_v2(v2_caps, AUTH_METHODS, LOGIN_METHOD)
    caps = params.get("clientCapabilities")
    if caps is not None and not isinstance(caps, dict):
        raise InitializeParamsError("clientCapabilities must be an object")
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": agent_capabilities(),
        "authMethods": [*AUTH_METHODS, *([LOGIN_METHOD] if _offers_terminal_auth(caps) else [])],
        "agentInfo": {"name": "adk-acp", "title": "ADK ACP agent (Gemini)", "version": __version__},
    }
