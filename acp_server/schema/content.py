"""Content blocks (prompts, message chunks, tool call content) and resources.

Fields the agent never reads (`annotations`) are not modelled: they are ignored on
the way in, as the official schema's lenient reading of them would have them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from acp_server.schema.base import AcpModel, lenient


class TextContentBlock(AcpModel):
    type: Literal["text"] = "text"
    text: str


class ImageContentBlock(AcpModel):
    type: Literal["image"] = "image"
    data: str
    mime_type: Annotated[str, Field(alias="mimeType")]
    uri: Annotated[str | None, lenient] = None


class AudioContentBlock(AcpModel):
    type: Literal["audio"] = "audio"
    data: str
    mime_type: Annotated[str, Field(alias="mimeType")]


class ResourceContentBlock(AcpModel):
    """`resource_link`: a reference the agent reads itself (an @-mentioned file)."""

    type: Literal["resource_link"] = "resource_link"
    name: str
    uri: str
    description: Annotated[str | None, lenient] = None
    mime_type: Annotated[str | None, lenient, Field(alias="mimeType")] = None
    size: Annotated[int | None, lenient] = None
    title: Annotated[str | None, lenient] = None


class TextResourceContents(AcpModel):
    text: str
    uri: str
    mime_type: Annotated[str | None, lenient, Field(alias="mimeType")] = None


class BlobResourceContents(AcpModel):
    blob: str
    uri: str
    mime_type: Annotated[str | None, lenient, Field(alias="mimeType")] = None


class EmbeddedResourceContentBlock(AcpModel):
    """`resource`: the client embeds the resource's text or data."""

    type: Literal["resource"] = "resource"
    resource: TextResourceContents | BlobResourceContents


ContentBlock = Annotated[
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock,
    Field(discriminator="type"),
]
