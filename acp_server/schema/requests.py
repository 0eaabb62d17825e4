"""The requests the agent accepts (params of the client's calls), as the official v1
schema defines them, with its lenient readings where it asks for them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from acp_server.schema.base import AcpModel, lenient, or_default, valid_items
from acp_server.schema.content import ContentBlock

# ------------------------------------------------------------------ initialize


class Implementation(AcpModel):
    name: str
    version: str
    title: Annotated[str | None, lenient] = None


class FileSystemCapabilities(AcpModel):
    read_text_file: Annotated[bool, or_default(lambda: False), Field(alias="readTextFile")] = False
    write_text_file: Annotated[bool, or_default(lambda: False), Field(alias="writeTextFile")] = (
        False
    )


class AuthCapabilities(AcpModel):
    terminal: Annotated[bool, or_default(lambda: False)] = False


class ElicitationCapabilities(AcpModel):
    form: Annotated[dict[str, Any] | None, lenient] = None
    url: Annotated[dict[str, Any] | None, lenient] = None


class ClientSessionCapabilities(AcpModel):
    """`clientCapabilities.session` (newer ones: `handlers.initialize.InitializeParams`)."""

    config_options: Annotated[dict[str, Any] | None, lenient, Field(alias="configOptions")] = None


class ClientCapabilities(AcpModel):
    """What the client offers (capabilities the agent does not use are not kept)."""

    fs: Annotated[FileSystemCapabilities, or_default(FileSystemCapabilities)] = Field(
        default_factory=FileSystemCapabilities
    )
    terminal: Annotated[bool, or_default(lambda: False)] = False
    auth: Annotated[AuthCapabilities, or_default(AuthCapabilities)] = Field(
        default_factory=AuthCapabilities
    )
    session: Annotated[ClientSessionCapabilities | None, lenient] = None
    elicitation: Annotated[ElicitationCapabilities | None, lenient] = None
    plan: Annotated[dict[str, Any] | None, lenient] = None


class InitializeRequest(AcpModel):
    protocol_version: Annotated[int, Field(alias="protocolVersion", ge=0, le=65535)]
    client_capabilities: Annotated[
        ClientCapabilities,
        or_default(ClientCapabilities),
        Field(default_factory=ClientCapabilities, alias="clientCapabilities"),
    ]
    client_info: Annotated[Implementation | None, lenient, Field(alias="clientInfo")] = None

    @field_validator("protocol_version", mode="before")
    @classmethod
    def _version_number(cls, value: Any) -> Any:
        """Some clients send a date string ("2024-11-05"): read as version 1, not refused."""
        if isinstance(value, int):
            return value
        try:
            return int(value)
        except (TypeError, ValueError):
            return 1


class AuthenticateRequest(AcpModel):
    method_id: Annotated[str, Field(alias="methodId")]


# ------------------------------------------------------------------ sessions


class EnvVariable(AcpModel):
    name: str
    value: str


class HttpHeader(AcpModel):
    name: str
    value: str


class McpServerStdio(AcpModel):
    name: str
    command: str
    args: list[str]
    env: list[EnvVariable]


class HttpMcpServer(AcpModel):
    type: Literal["http"] = "http"
    name: str
    url: str
    headers: list[HttpHeader]


class SseMcpServer(AcpModel):
    type: Literal["sse"] = "sse"
    name: str
    url: str
    headers: list[HttpHeader]


class AcpMcpServer(AcpModel):
    """An MCP server the client itself provides over ACP (unstable; not supported here)."""

    type: Literal["acp"] = "acp"
    name: str
    server_id: Annotated[str, Field(alias="serverId")]


McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio

Directories = Annotated[list[str] | None, valid_items]


class NewSessionRequest(AcpModel):
    cwd: str
    additional_directories: Annotated[Directories, Field(alias="additionalDirectories")] = None
    mcp_servers: Annotated[list[McpServer], valid_items, Field(alias="mcpServers")]


class LoadSessionRequest(NewSessionRequest):
    session_id: Annotated[str, Field(alias="sessionId")]


class ResumeSessionRequest(AcpModel):
    session_id: Annotated[str, Field(alias="sessionId")]
    cwd: str
    additional_directories: Annotated[Directories, Field(alias="additionalDirectories")] = None
    mcp_servers: Annotated[list[McpServer] | None, valid_items, Field(alias="mcpServers")] = None


class ForkSessionRequest(ResumeSessionRequest):
    pass


class ListSessionsRequest(AcpModel):
    cwd: str | None = None
    cursor: str | None = None


class CloseSessionRequest(AcpModel):
    session_id: Annotated[str, Field(alias="sessionId")]


class DeleteSessionRequest(AcpModel):
    session_id: Annotated[str, Field(alias="sessionId")]


class PromptRequest(AcpModel):
    session_id: Annotated[str, Field(alias="sessionId")]
    prompt: list[ContentBlock]


class SetSessionModeRequest(AcpModel):
    session_id: Annotated[str, Field(alias="sessionId")]
    mode_id: Annotated[str, Field(alias="modeId")]
