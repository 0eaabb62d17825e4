"""What an MCP connection reads and reports once connected (`client`'s helpers): the
offers its `initialize` declares (tools, prompts, resources) and readable failures."""

from __future__ import annotations

import logging
from typing import Any

from mcp import ClientSession
from mcp import types as mcp_types
from mcp.shared.exceptions import MCPError

logger = logging.getLogger(__name__)

MAX_TOOL_PAGES = 50


def describe_error(exc: BaseException) -> str:
    """A short, readable reason for a failure (exception groups flattened)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_error(inner) for inner in exc.exceptions)
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, PermissionError):
        return f"cannot run {exc.filename or 'the command'}: permission denied"
    if isinstance(exc, MCPError):
        return exc.message
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def is_auth_failure(exc: BaseException) -> bool:
    """An OAuth failure (no SSE fallback then: the same server would ask again)."""
    from mcp.client.auth import OAuthFlowError

    if isinstance(exc, BaseExceptionGroup):
        return any(is_auth_failure(inner) for inner in exc.exceptions)
    return isinstance(exc, OAuthFlowError)


async def list_offers(
    name: str, session: ClientSession, initialized: Any
) -> tuple[
    tuple[mcp_types.Tool, ...], tuple[mcp_types.Prompt, ...], tuple[mcp_types.Resource, ...]
]:
    """The server's tools, prompts and resources, each listed only when its `initialize`
    declares it: a server of resources only (that answers `tools/list` with "method not
    found", as the SDK's servers do) is a working server. A declared list that then
    fails to come is empty, with a warning; only a failing `tools/list` fails the start."""
    caps = getattr(initialized, "capabilities", None)
    tools: tuple[mcp_types.Tool, ...] = ()
    prompts: tuple[mcp_types.Prompt, ...] = ()
    resources: tuple[mcp_types.Resource, ...] = ()
    if caps is None or caps.tools is not None:
        try:
            tools = await list_tools(session)
        except MCPError as exc:
            if exc.code != mcp_types.METHOD_NOT_FOUND:
                raise
            logger.info("MCP server %s has no tools/list", name)
    if caps is not None and caps.prompts is not None:
        try:
            prompts = tuple((await session.list_prompts()).prompts)
        except Exception as exc:  # noqa: BLE001 - the rest of the server still works
            logger.warning("MCP server %s: listing its prompts failed: %s", name, exc)
    if caps is not None and caps.resources is not None:
        try:
            resources = tuple((await session.list_resources()).resources)
        except Exception as exc:  # noqa: BLE001 - the rest of the server still works
            logger.warning("MCP server %s: listing its resources failed: %s", name, exc)
    return tools, prompts, resources


async def list_tools(session: ClientSession) -> tuple[mcp_types.Tool, ...]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(tools)
