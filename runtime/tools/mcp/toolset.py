"""Client-provided MCP servers' tools as scheduler tools (their ADK face is
`runtime/adk/mcp_toolset.py`).

What is used from where (see `client` for the reasons in full):
- the `mcp` SDK: `ClientSession` (initialize, tools/list, tools/call), its
  streamable-HTTP and SSE transports, its types; our own stdio transport
  (`stdio`) so server processes join the process-group registry;
- ADK: only `BaseToolset`, as the way into the agent (`GcliMcpToolset`, outside this
  room). ADK's `McpToolset`/`McpTool` are not used: their calls would bypass our scheduler.

Each server tool becomes an `GcliMcpTool` (a `GcliTool`): every call goes through the
scheduler like a built-in tool's — BeforeTool/AfterTool hooks, policy (`mcpName`
rules match through `mcp_server`), approval in the editor (default: ask, as Gemini
CLI), truncation of large results (the scheduler cuts MCP results).

Naming (current Gemini CLI, since its PR #21664): every MCP tool is exposed as
`mcp_<server>_<tool>`, characters outside `[A-Za-z0-9_.-]` replaced by `_`, names
over 63 characters shortened in the middle with `___`. So policy files written for
Gemini CLI (`toolName = "mcp_<server>_*"`, `"mcp_*"`, `mcpName = "<server>"`) apply
unchanged, and a server can never shadow a built-in tool or inherit its rules.
(Older Gemini CLI used the tool's own name and `<server>__<tool>` only on a clash.)
Two tools that still end up with one name: the first is kept, the other skipped
with a warning.

Lifecycle: the session starts the servers without waiting (session/new answers at
once); the first model request of the session waits until each server is ready or
has failed, at most `MCP_PROMPT_WAIT_S` from session start, then the ready servers'
tools are registered with the scheduler and declared to the model. A server still
starting then is named to the user as late; when it becomes ready its tools join from
the next model call (with a notice).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mcp import types as mcp_types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from runtime.protocol import DisplayText, ToolDisplay, ToolKind
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.mcp.client import McpConnection, McpUnavailable
from runtime.tools.mcp.config import McpStdioServer
from runtime.tools.mcp.servers import McpServers

if TYPE_CHECKING:
    from runtime.tools.scheduling.scheduler import Scheduler

logger = logging.getLogger(__name__)

MAX_NAME_LENGTH = 63
DISPLAY_LIMIT = 20_000
_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]")


def valid_name(name: str) -> str:
    """A function name the Gemini API accepts (Gemini CLI's `generateValidName`)."""
    name = _INVALID_NAME_CHARS.sub("_", name)
    if len(name) > MAX_NAME_LENGTH:
        name = name[:28] + "___" + name[-32:]
    return name


def mcp_tool_name(server: str, tool: str) -> str:
    """The name the model sees: `mcp_<server>_<tool>`, made valid."""
    return valid_name(f"mcp_{server}_{tool}")


def parameters_schema(input_schema: Any) -> dict[str, Any]:
    """The tool's JSON schema as a function's parameters: an object schema, without
    `$schema` (the rest goes to the model as `parametersJsonSchema`, as Gemini CLI does)."""
    schema = dict(input_schema) if isinstance(input_schema, dict) else {}
    schema.pop("$schema", None)
    schema["type"] = "object"
    if not isinstance(schema.get("properties"), dict):
        schema["properties"] = {}
    return schema


def tool_kind(tool: mcp_types.Tool) -> ToolKind:
    """`read` for tools that declare themselves read-only, else `other`."""
    annotations = tool.annotations
    return "read" if annotations is not None and annotations.read_only_hint else "other"


class GcliMcpTool(GcliTool):
    """One tool of an MCP server, called through `connection` with the tool's own name.

    `mcp_server` names the server: the policy engine (mcpName rules) and the
    scheduler's truncation key on it. `read_only`: the server marks the tool
    read-only (`readOnlyHint`), the only kind plan mode offers and runs."""

    mcp_server: str

    def __init__(self, connection: McpConnection, tool: mcp_types.Tool, *, name: str) -> None:
        self.connection = connection
        self.mcp_server = connection.name
        self.server_tool_name = tool.name
        self.name = name
        self.kind = tool_kind(tool)
        self.read_only = self.kind == "read"
        self.description = (tool.description or "").strip() or (
            f"The '{tool.name}' tool of the '{connection.name}' MCP server."
        )
        self._schema = parameters_schema(tool.input_schema)

    def parameters_schema(self) -> dict[str, Any]:
        return self._schema

    def mcp_context(self) -> dict[str, Any]:
        context: dict[str, Any] = {
            "server_name": self.mcp_server,
            "tool_name": self.server_tool_name,
        }
        config = self.connection.config
        if isinstance(config, McpStdioServer):
            if config.command:
                context["command"] = config.command
                context["args"] = list(config.args)
                if config.cwd:
                    context["cwd"] = config.cwd
        elif config.url:
            context["url"] = config.url
        return context

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        return ToolDisplay(title=f"{self.mcp_server}: {self.server_tool_name}", kind=self.kind)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        try:
            result = await self.connection.call_tool(
                self.server_tool_name, args, progress_reporter(env)
            )
        except McpUnavailable as exc:
            return ToolResult(
                llm_content=f"The MCP server '{self.mcp_server}' is not available ({exc}); "
                f"'{self.server_tool_name}' cannot be called.",
                is_error=True,
                error_type="mcp_server_unavailable",
            )
        except MCPError as exc:
            return ToolResult(
                llm_content=f"Calling '{self.server_tool_name}' on the MCP server "
                f"'{self.mcp_server}' failed: {exc.message}",
                is_error=True,
                error_type="mcp_error",
            )
        return tool_result(self.server_tool_name, result)


def progress_text(progress: float, total: float | None, message: str | None) -> str:
    """A `notifications/progress` as the line shown on the call: its message, and how far."""
    amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
    return f"{message} ({amount})" if message else f"Progress: {amount}"


def progress_reporter(env: ToolEnv) -> ProgressFnT | None:
    """The server's progress for this call, shown as the call's content (seam: tool
    progress, `ToolEnv.on_progress`; the editor gets updates of this tool call)."""
    report = env.on_progress
    if report is None:
        return None

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        await report((DisplayText(text=progress_text(progress, total, message)),))

    return on_progress


def tool_result(tool: str, result: mcp_types.CallToolResult) -> ToolResult:
    """A `tools/call` result as a ToolResult: text parts joined; images and audio go to
    the model as media (with a line saying so in the text); binary resources
    summarized; `isError` → an error result."""
    text = "\n".join(t for t in (_block_text(tool, block) for block in result.content) if t)
    media = [
        {"mimeType": block.mime_type, "data": block.data}
        for block in result.content
        if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent)
    ]
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    raw = (
        {"structuredContent": result.structured_content}
        if result.structured_content is not None
        else None
    )
    shown = text if len(text) <= DISPLAY_LIMIT else text[:DISPLAY_LIMIT] + "\n…"
    display = (DisplayText(text=shown),) if shown else ()
    if result.is_error:
        return ToolResult(
            llm_content=f"MCP tool '{tool}' reported an error: {text or 'no details given'}",
            display=display,
            is_error=True,
            raw_output=raw,
            error_type="mcp_tool_error",
        )
    return ToolResult(
        llm_content=text or f"MCP tool '{tool}' returned no content.",
        display=display,
        raw_output=raw,
        media=media or None,
    )


def _block_text(tool: str, block: Any) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        kind = "image" if isinstance(block, mcp_types.ImageContent) else "audio"
        size = _decoded_size(block.data)
        return f"[Tool '{tool}' returned {kind} data ({block.mime_type}, {size} bytes), attached]"
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return resource.text
        mime = resource.mime_type or "application/octet-stream"
        what = f"{mime}, {_decoded_size(resource.blob)} bytes"
        return f"[Tool '{tool}' returned the resource {resource.uri} ({what}), not shown]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"Resource link: {block.title or block.name} at {block.uri}"
    return f"[Tool '{tool}' returned content of type {getattr(block, 'type', '?')}, not shown]"


def _decoded_size(data: str) -> int:
    return len(data) * 3 // 4


def wrap_tools(
    connections: Iterable[McpConnection], taken: Iterable[str] = ()
) -> list[GcliMcpTool]:
    """An GcliMcpTool per listed tool of each connection, named `mcp_<server>_<tool>`;
    names already in `taken` (or given earlier) are skipped with a warning."""
    used = set(taken)
    tools: list[GcliMcpTool] = []
    for connection in connections:
        for tool in connection.tools:
            if not connection.config.options.offers(tool.name):
                continue  # includeTools / excludeTools
            name = mcp_tool_name(connection.name, tool.name)
            if name in used:
                logger.warning(
                    "MCP server %s: tool %r skipped, the name %s is already taken",
                    connection.name,
                    tool.name,
                    name,
                )
                continue
            used.add(name)
            tools.append(GcliMcpTool(connection, tool, name=name))
    return tools


class McpSessionTools:
    """A session's MCP tools as scheduler tools (the tools' side of the ADK toolset,
    `runtime/adk/mcp_toolset.py`).

    The first `offered` waits for the servers (`McpServers.wait_for_prompt`), wraps
    their tools (and the resource tools) and adds them to the session's scheduler;
    later calls rewrap when a server joined or changed its tools (`generation` counts
    the wraps); every call passes pending notices (failed or stopped servers) to
    `notice`. In plan mode (`mode`, the session's mode getter) only the tools their
    server marks read-only (and the resource tools) are offered; a subagent
    (`allowed`) is offered only the tools its definition names.
    """

    def __init__(
        self,
        servers: McpServers,
        *,
        scheduler: Callable[[], Scheduler],
        notice: Callable[[str], None],
        mode: Callable[[], str] | None = None,
        allowed: frozenset[str] | None = None,
    ) -> None:
        self.servers = servers
        self._mode = mode
        self._allowed = allowed
        self._scheduler = scheduler
        self._notice = notice
        self._lock = asyncio.Lock()
        self.wrapped: list[GcliTool] = []
        self.generation = 0  # 0: not loaded yet
        self._joined: set[str] = set()  # servers whose tools were offered

    async def offered(self) -> list[GcliTool]:
        """The tools offered for the next model call (see the class doc)."""
        async with self._lock:
            if self.generation == 0:
                await self._load()
            elif any(
                c.tools_changed or c.name not in self._joined
                for c in self.servers.ready_connections()
            ):
                await self._reload()
        self.flush_notices()
        tools = self.wrapped
        if self._allowed is not None:
            tools = [t for t in tools if t.name in self._allowed]
        if self._mode is not None and self._mode() == "plan":
            return [t for t in tools if t.read_only]
        return tools

    def flush_notices(self) -> None:
        """Shows the user what went wrong with servers since the last time (each once)."""
        for text in self.servers.take_notices():
            self._notice(f"\n\n_{text}_\n\n")

    async def _load(self) -> None:
        await self.servers.wait_for_prompt()
        for late in self.servers.starting_connections():
            self._notice(
                f"\n\n_MCP server '{late.name}' is still starting; this prompt goes on "
                "without its tools, which join when it is ready._\n\n"
            )
        scheduler = self._scheduler()
        self.wrapped = self._wrap(scheduler)
        scheduler.add_tools(self.wrapped)
        self.generation += 1

    def _wrap(self, scheduler: Scheduler) -> list[GcliTool]:
        """The ready servers' tools, and the resource tools when a server has resources."""
        from runtime.tools.mcp.resources import resource_tools

        ready = self.servers.ready_connections()
        self._joined.update(c.name for c in ready)
        wrapped: list[GcliTool] = [*wrap_tools(ready, taken=scheduler.tools)]
        return wrapped + resource_tools(self.servers, taken=scheduler.tools)

    async def _reload(self) -> None:
        """A server said its tools changed (`notifications/tools/list_changed`), or a late
        server is ready: list again and offer the new set from the next model call on."""
        ready = self.servers.ready_connections()
        changed = [c for c in ready if await c.refresh_tools()]
        joined = [c for c in ready if c.name not in self._joined]
        scheduler = self._scheduler()
        old = {t.name for t in self.wrapped}
        scheduler.remove_tools(old)
        self.wrapped = self._wrap(scheduler)
        scheduler.add_tools(self.wrapped)
        self.generation += 1
        for connection in changed:
            self._notice(f"\n\n_MCP server '{connection.name}' changed its tools._\n\n")
        for connection in joined:
            self._notice(f"\n\n_MCP server '{connection.name}' is ready; its tools join now._\n\n")


_MENTION = re.compile(r"@(\S+)")


async def mention_resources(servers: McpServers, parts: tuple[Any, ...]) -> tuple[Any, ...]:
    """MCP resources the prompt mentions (`@<uri>` in its text, or a resource link to a
    listed URI) are read from their server and added to the prompt as references."""
    from runtime.protocol import ReferencePart, TextPart

    if any(isinstance(p, TextPart) and "@" in p.text for p in parts):
        await servers.wait_for_prompt()  # the first prompt may come before the servers are up
    known = {str(r.uri): c for c in servers.ready_connections() for r in c.resources}
    if not known:
        return parts
    wanted: list[str] = []
    kept: list[Any] = []
    for part in parts:
        if isinstance(part, TextPart):
            wanted += [m.rstrip(".,;:!?)") for m in _MENTION.findall(part.text)]
            kept.append(part)
        elif isinstance(part, ReferencePart) and part.uri in known and part.data is None:
            wanted.append(part.uri)  # a link the editor could not read: read it here
        else:
            kept.append(part)
    added: list[Any] = []
    for uri in dict.fromkeys(u for u in wanted if u in known):
        try:
            result = await known[uri].read_resource(uri)
        except Exception as exc:  # noqa: BLE001 - the prompt goes on, saying what failed
            added.append(ReferencePart(text=f"[could not read {uri}: {exc}]", uri=uri))
            continue
        for item in result.contents:
            if isinstance(item, mcp_types.TextResourceContents):
                added.append(
                    ReferencePart(text=item.text, uri=uri, mime_type=item.mime_type or "text/plain")
                )
            else:
                added.append(
                    ReferencePart(
                        text=f"[binary resource {uri}]",
                        data=item.blob,
                        uri=uri,
                        mime_type=item.mime_type or "application/octet-stream",
                    )
                )
    return (*kept, *added)
