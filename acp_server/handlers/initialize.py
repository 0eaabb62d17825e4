"""`initialize`, `authenticate` and `logout`.

The `initialize` answer is `capabilities.initialize_result`, the one the first line
gets before the server has loaded; it stays a plain dict (the schema model would add
defaults the agent never sent).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from acp_server import schema
from acp_server.capabilities import (
    AUTH_METHODS,
    LOGIN_METHOD,
    V2_PROTOCOL_VERSION,
    initialize_result,
    negotiated_version,
)
from acp_server.errors import invalid_params
from runtime.config import resolve_auth
from runtime.session import AuthChoice

if TYPE_CHECKING:
    from acp_server.state import ServerState

NEWER_SESSION_CAPABILITIES = ("notices", "compaction")
NEWER_CLIENT_CAPABILITIES = ("plan", "subagents")
"""Top-level client capabilities newer than the pinned schema, kept like the session ones."""

API_KEY_FIELDS = ("api-key", "apiKey", "GEMINI_API_KEY")
"""Where a client may pass its own key in `authenticate`'s `_meta`."""


class InitializeParams(schema.InitializeRequest):
    """`initialize` params that keep the session capabilities newer than the pinned
    schema (`session.notices`, `session.compaction`: ACP 1.21), which it would drop."""

    session_extras: dict[str, Any] = Field(default_factory=dict, exclude=True)
    """Set from `clientCapabilities.session` only (a private attribute would not do:
    the schema's `__getattr__` hides it)."""
    caps_extras: dict[str, Any] = Field(default_factory=dict, exclude=True)
    """`clientCapabilities.plan` and `.subagents` (ACP 1.21), kept the same way."""
    v2_capabilities: dict[str, Any] | None = Field(default=None, exclude=True)
    """An ACP v2 client's `capabilities` (`acp_server.v2`), kept the same way."""

    @model_validator(mode="wrap")
    @classmethod
    def _keep_session_extras(cls, data: Any, handler: Any) -> Any:
        model = handler(data)
        caps = data.get("clientCapabilities") if isinstance(data, dict) else None
        session = caps.get("session") if isinstance(caps, dict) else None
        model.session_extras = {}
        v2 = data.get("capabilities") if isinstance(data, dict) else None
        model.v2_capabilities = v2 if isinstance(v2, dict) else None
        if isinstance(caps, dict):
            model.caps_extras = {
                k: caps[k] for k in NEWER_CLIENT_CAPABILITIES if isinstance(caps.get(k), dict)
            }
        if isinstance(session, dict):
            model.session_extras = {
                k: session[k]
                for k in NEWER_SESSION_CAPABILITIES
                if isinstance(session.get(k), dict)
            }
        return model

    def raw(self) -> dict[str, Any]:
        """The params as JSON, the newer session capabilities included."""
        raw = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        if self.session_extras:
            caps = raw.setdefault("clientCapabilities", {})
            caps["session"] = {**(caps.get("session") or {}), **self.session_extras}
        if self.caps_extras:
            raw.setdefault("clientCapabilities", {}).update(self.caps_extras)
        if self.v2_capabilities is not None:
            raw["capabilities"] = self.v2_capabilities
        return raw


async def initialize(state: ServerState, params: InitializeParams) -> dict[str, Any]:
    raw = params.raw()
    result = initialize_result(raw)
    state.mark_initialized(raw)
    choose_dialect(state, raw)
    return result


def choose_dialect(state: ServerState, params: dict[str, Any]) -> None:
    """The version the client asked for: v1 as it always was, or ACP v2 (`acp_server.v2`),
    translated at this connection's edge."""
    if negotiated_version(params) < V2_PROTOCOL_VERSION:
        state.conn.dialect = None
        return
    from acp_server.v2.dialect import V2Dialect, client_capabilities

    state.client_capabilities = client_capabilities(params.get("capabilities"))
    state.conn.dialect = V2Dialect(state)


async def authenticate(
    state: ServerState, params: schema.AuthenticateRequest
) -> schema.AuthenticateResponse:
    """Check the credentials of the chosen method now; later sessions use them. The
    terminal method is never passed here (the client runs `adk-acp --login` itself)."""
    method = params.method_id
    if method == LOGIN_METHOD["id"]:
        raise invalid_params(
            f"{method!r} is a terminal auth method: the client runs `adk-acp --login` in a "
            "terminal and then opens sessions; it is not passed to authenticate"
        )
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
