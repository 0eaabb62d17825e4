"""`initialize`, `authenticate` and `logout`.

The `initialize` answer is `capabilities.initialize_result`, the one the first line
gets before the server has loaded; it stays a plain dict (the schema model would add
defaults the agent never sent).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from acp import schema

from acp_server.capabilities import AUTH_METHODS, initialize_result
from acp_server.errors import invalid_params
from runtime.config import resolve_auth
from runtime.session import AuthChoice

if TYPE_CHECKING:
    from acp_server.state import ServerState

API_KEY_FIELDS = ("api-key", "apiKey", "GEMINI_API_KEY")
"""Where a client may pass its own key in `authenticate`'s `_meta`."""


async def initialize(state: ServerState, params: schema.InitializeRequest) -> dict[str, Any]:
    raw = params.model_dump(mode="json", by_alias=True, exclude_none=True)
    result = initialize_result(raw)
    state.mark_initialized(raw)
    return result


async def authenticate(
    state: ServerState, params: schema.AuthenticateRequest
) -> schema.AuthenticateResponse:
    """Check the credentials of the chosen method now; later sessions use them."""
    method = params.method_id
    if method not in {m["id"] for m in AUTH_METHODS}:
        raise invalid_params(f"unknown auth method {method!r}; known: gemini-api-key, vertex-ai")
    meta = params.field_meta or {}
    key = next((meta[k] for k in API_KEY_FIELDS if isinstance(meta.get(k), str)), None)
    prefer: Literal["api_key", "vertex"] = "vertex" if method == "vertex-ai" else "api_key"
    resolve_auth(state.options.env, api_key_override=key, prefer=prefer)
    state.auth = AuthChoice(api_key=key, prefer=prefer)
    return schema.AuthenticateResponse()


async def logout(state: ServerState, params: Any) -> schema.LogoutResponse:
    state.auth = AuthChoice()
    return schema.LogoutResponse()
