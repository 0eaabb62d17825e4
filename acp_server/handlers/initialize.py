"""`initialize`, `authenticate` and `logout`.

`initialize_result` imports nothing heavy: the transport calls it on the first
line, before pygls, `acp.schema`, ADK or genai are loaded, so editors get their
answer at once. What it advertises is only what works.
"""

from __future__ import annotations

from acp_server import __version__

TYPE_CHECKING = False  # no `typing` import on the start-up path
if TYPE_CHECKING:
    from typing import Any, Literal

PROTOCOL_VERSION = 1

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
        "sessionCapabilities": {
            "additionalDirectories": {},
            "list": {},
            "resume": {},
            "close": {},
            "delete": {},
            "fork": {},
        },
    }


def initialize_result(params: Any) -> dict[str, Any]:
    """The initialize answer. Version negotiation: we speak 1; we answer 1 to any request."""
    if not isinstance(params, dict):
        raise InitializeParamsError("initialize expects an object with protocolVersion")
    version = params.get("protocolVersion")
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= 65535:
        raise InitializeParamsError("protocolVersion must be an integer (this agent speaks 1)")
    caps = params.get("clientCapabilities")
    if caps is not None and not isinstance(caps, dict):
        raise InitializeParamsError("clientCapabilities must be an object")
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": agent_capabilities(),
        "authMethods": [*AUTH_METHODS, *([LOGIN_METHOD] if _offers_terminal_auth(caps) else [])],
        "agentInfo": {"name": "adk-acp", "title": "ADK ACP agent (Gemini)", "version": __version__},
    }


def register(server: Any) -> None:
    """Wire `initialize`, `authenticate` and `logout` onto the server.

    Heavy imports are allowed here (not in `initialize_result`)."""
    from acp import schema

    from acp_server.errors import from_runtime, invalid_params
    from runtime.config import resolve_auth
    from runtime.errors import AuthRequiredError

    async def initialize(params: schema.InitializeRequest) -> dict[str, Any]:
        raw = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        result = initialize_result(raw)
        server.mark_initialized(raw)
        return result

    async def authenticate(params: schema.AuthenticateRequest) -> dict[str, Any]:
        method = params.method_id
        if method not in {m["id"] for m in AUTH_METHODS}:
            raise invalid_params(
                f"unknown auth method {method!r}; known: gemini-api-key, vertex-ai"
            )
        meta = params.field_meta or {}
        key = next(
            (
                meta[k]
                for k in ("api-key", "apiKey", "GEMINI_API_KEY")
                if isinstance(meta.get(k), str)
            ),
            None,
        )
        prefer: Literal["api_key", "vertex"] = "vertex" if method == "vertex-ai" else "api_key"
        try:
            resolve_auth(server.options.env, api_key_override=key, prefer=prefer)
        except AuthRequiredError as exc:
            raise from_runtime(exc) from exc
        server.api_key_override = key
        server.auth_preference = prefer
        return {}

    async def logout(params: Any) -> dict[str, Any]:
        server.api_key_override = None
        server.auth_preference = None
        return {}

    server.engine.register("initialize", schema.InitializeRequest, initialize)
    server.engine.register("authenticate", schema.AuthenticateRequest, authenticate)
    server.engine.register("logout", None, logout)
