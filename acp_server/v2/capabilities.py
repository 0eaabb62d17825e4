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
    update). `systemPrompt` (append, and override) and `fork` are v2's unstable parts,
    served as v1 serves them."""
    return {
        "session": {
            "prompt": {"image": {}, "embeddedContext": {}},
            "mcp": {"stdio": {}, "http": {}},
            "delete": {},
            "additionalDirectories": {},
            "systemPrompt": {"mode": {"override": {}}},
            "fork": {},
        }
    }


def auth_methods_v2(
    client: Any, agent: list[dict[str, Any]], login: dict[str, Any]
) -> list[dict[str, Any]]:
    """v1's auth methods (`acp_server.capabilities`: `agent` ones, the terminal `login`)
    in v2's shape (`methodId`, typed): the agent ones, and the terminal login
    (`adk-acp --login`) when the client says it can run it (`capabilities.auth.terminal`).
    Offering them means `auth/login` and `auth/logout`."""
    methods: list[dict[str, Any]] = [
        {"type": "agent", "methodId": m["id"], "name": m["name"], "description": m["description"]}
        for m in agent
    ]
    auth = client.get("auth") if isinstance(client, dict) else None
    if isinstance(auth, dict) and isinstance(auth.get("terminal"), dict):
        methods.append(
            {
                "type": "terminal",
                "methodId": login["id"],
                "name": login["name"],
                "description": login["description"],
                "args": list(login["args"]),
                "env": [{"name": k, "value": v} for k, v in login["env"].items()],
            }
        )
    return methods


def initialize_result_v2(
    client: Any, agent: list[dict[str, Any]], login: dict[str, Any]
) -> dict[str, Any]:
    """The answer to a well-formed v2 `initialize` (checked by `acp_server.capabilities`);
    `client` is its `capabilities`, `agent` and `login` v1's auth methods."""
    return {
        "protocolVersion": VERSION,
        "info": {"name": "adk-acp", "title": "ADK ACP agent (Gemini)", "version": __version__},
        "capabilities": agent_capabilities_v2(),
        "authMethods": auth_methods_v2(client, agent, login),
    }
