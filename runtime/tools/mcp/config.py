"""MCP server configurations as the runtime knows them (no ACP types, no MCP SDK import).

Two sources: the editor sends its MCP servers in `session/new` (`acp_server` converts
each entry and puts them in `SessionSpec.mcp_servers`), and the user's settings hold
Gemini CLI's `mcpServers` (`servers_from_settings`; user and workspace settings,
merged). On a name clash the editor's server wins. Importing this module is cheap:
the MCP SDK is loaded only when a session actually has servers.

Gemini CLI's per-server options apply to both: `timeout` (ms, per call), `trust`
(calls are not asked), `includeTools` / `excludeTools` (which tools are offered),
`cwd` (stdio).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

MCP_START_TIMEOUT_S = 10.0
"""How long a server may take to start, answer `initialize` and list its tools."""

MCP_PROMPT_WAIT_S = 3.0
"""How long a prompt waits for servers still starting (from the session's start); a
server not ready by then is late: the prompt goes on, and its tools join when it is
ready. `ADK_ACP_MCP_PROMPT_WAIT_S` in the agent's environment changes it (tests)."""

MCP_CALL_TIMEOUT_S = 600.0
"""How long one `tools/call` may take (Gemini CLI's default MCP timeout, 10 minutes)."""


@dataclass(frozen=True)
class McpOptions:
    """Per-server options (Gemini CLI's `mcpServers` fields)."""

    timeout_s: float | None = None
    trust: bool = False
    include_tools: tuple[str, ...] = ()
    exclude_tools: tuple[str, ...] = ()
    source: str = "editor"
    sandbox: bool = False
    """`"sandbox": true` in the settings entry: a stdio server runs in the session's
    sandbox (`runtime.tools.io.sandbox`), when one is on."""

    def offers(self, tool: str) -> bool:
        """Whether the server's `tool` is offered to the model."""
        if self.include_tools and tool not in self.include_tools:
            return False
        return tool not in self.exclude_tools


@dataclass(frozen=True)
class McpOAuth:
    """Gemini CLI's per-server `oauth` settings (an HTTP or SSE server). `enabled` None:
    not set; OAuth then starts only when the server answers 401 (discovery)."""

    enabled: bool | None = None
    client_id: str | None = None
    client_secret: str | None = None
    authorization_url: str | None = None
    token_url: str | None = None
    scopes: tuple[str, ...] = ()
    redirect_uri: str | None = None


def uses_oauth(oauth: McpOAuth | None, headers: tuple[tuple[str, str], ...]) -> bool:
    """Whether a remote server's requests carry our OAuth: unless `oauth.enabled` is
    false, or the settings give an `Authorization` header of their own (as Gemini CLI)."""
    if oauth is not None and oauth.enabled is not None:
        return oauth.enabled
    return not any(name.lower() == "authorization" for name, _ in headers)


@dataclass(frozen=True)
class McpStdioServer:
    """A local server the agent starts: `command args...` with `env` added to the agent's
    environment (minus its API keys). It runs in `cwd`, by default the workspace."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    options: McpOptions = McpOptions()
    cwd: str | None = None


@dataclass(frozen=True)
class McpHttpServer:
    """A remote server over streamable HTTP, with extra request `headers`.
    `sse_fallback`: a settings `url` without `type`, tried over streamable HTTP first and,
    when that fails (other than by asking for authorization), over SSE (as Gemini CLI)."""

    name: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    options: McpOptions = McpOptions()
    sse_fallback: bool = False
    oauth: McpOAuth | None = None


@dataclass(frozen=True)
class McpSseServer:
    """A remote server over the older HTTP+SSE transport, with extra request `headers`."""

    name: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    options: McpOptions = McpOptions()
    oauth: McpOAuth | None = None


McpServerConfig = McpStdioServer | McpHttpServer | McpSseServer


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _pairs(value: Any) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), str(v)) for k, v in value.items()) if isinstance(value, Mapping) else ()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _oauth(name: str, value: Any) -> McpOAuth | None:
    """The entry's `oauth` object (a wrong type is warned about and ignored)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        logger.warning("mcpServers.%s.oauth: not an object; ignored", name)
        return None
    enabled = value.get("enabled")
    return McpOAuth(
        enabled=enabled if isinstance(enabled, bool) else None,
        client_id=_text(value.get("clientId")),
        client_secret=_text(value.get("clientSecret")),
        authorization_url=_text(value.get("authorizationUrl")),
        token_url=_text(value.get("tokenUrl")),
        scopes=_strings(value.get("scopes")),
        redirect_uri=_text(value.get("redirectUri")),
    )


def _options(entry: Mapping[str, Any]) -> McpOptions:
    timeout = entry.get("timeout")
    return McpOptions(
        timeout_s=timeout / 1000
        if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0
        else None,
        trust=entry.get("trust") is True,
        include_tools=_strings(entry.get("includeTools")),
        exclude_tools=_strings(entry.get("excludeTools")),
        source="settings",
        sandbox=entry.get("sandbox") is True,
    )


def servers_from_settings(
    settings: Mapping[str, Any], workspace: Path
) -> tuple[McpServerConfig, ...]:
    """Gemini CLI's `mcpServers`: `command`/`args`/`env`/`cwd` (stdio), `httpUrl`
    (streamable HTTP) or `url` (`type: "http"` or `"sse"`; without `type`, streamable
    HTTP then SSE) with `headers`; bad entries are logged and skipped."""
    raw = settings.get("mcpServers")
    if not isinstance(raw, Mapping):
        return ()
    out: list[McpServerConfig] = []
    for name, entry in raw.items():
        if not isinstance(entry, Mapping):
            logger.warning("mcpServers.%s: not an object; skipped", name)
            continue
        options = _options(entry)
        oauth = _oauth(str(name), entry.get("oauth"))
        if isinstance(entry.get("command"), str) and entry["command"]:
            cwd = entry.get("cwd")
            out.append(
                McpStdioServer(
                    str(name),
                    entry["command"],
                    _strings(entry.get("args")),
                    _pairs(entry.get("env")),
                    options,
                    str(workspace / cwd) if isinstance(cwd, str) and cwd else None,
                )
            )
        elif isinstance(entry.get("httpUrl"), str):
            out.append(
                McpHttpServer(
                    str(name), entry["httpUrl"], _pairs(entry.get("headers")), options, oauth=oauth
                )
            )
        elif isinstance(entry.get("url"), str) and entry.get("type") == "sse":
            out.append(
                McpSseServer(
                    str(name), entry["url"], _pairs(entry.get("headers")), options, oauth=oauth
                )
            )
        elif isinstance(entry.get("url"), str):
            out.append(
                McpHttpServer(
                    str(name),
                    entry["url"],
                    _pairs(entry.get("headers")),
                    options,
                    sse_fallback=entry.get("type") != "http",
                    oauth=oauth,
                )
            )
        else:
            logger.warning("mcpServers.%s: needs command, httpUrl or url; skipped", name)
    return tuple(out)


def prompt_wait(env: Mapping[str, str]) -> float:
    """`MCP_PROMPT_WAIT_S`, or `ADK_ACP_MCP_PROMPT_WAIT_S` when it is a number >= 0."""
    try:
        value = float(env.get("ADK_ACP_MCP_PROMPT_WAIT_S", ""))
    except ValueError:
        return MCP_PROMPT_WAIT_S
    return value if value >= 0 else MCP_PROMPT_WAIT_S


def merged_servers(
    editor: tuple[McpServerConfig, ...], settings: tuple[McpServerConfig, ...]
) -> tuple[McpServerConfig, ...]:
    """The editor's servers, then the settings' ones whose name the editor did not use."""
    taken = {s.name for s in editor}
    for server in settings:
        if server.name in taken:
            logger.info(
                "MCP server %r is given by the editor and in settings: the editor's is used",
                server.name,
            )
    return (*editor, *(s for s in settings if s.name not in taken))


def with_options(server: McpServerConfig, options: McpOptions) -> McpServerConfig:
    return replace(server, options=options)
