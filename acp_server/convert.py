"""ACP content blocks → runtime content parts (the one place for content translation).

Text and images pass through. A `resource_link` (an @-mentioned file) is read
into the context: through the editor when it offers `fs.readTextFile` (it sees
unsaved buffers), else from disk, and only inside the session's roots. An
embedded resource brings its own text (or data).
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp import schema

from acp_server.errors import invalid_params
from runtime.host import Host
from runtime.protocol import ContentPart, MediaPart, ReferencePart, TextPart

MAX_MENTION_BYTES = 2_000_000
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp", "image/heic", "image/heif"}


def uri_to_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return Path(unquote(parsed.path if parsed.scheme else uri))
    return None


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    real = path.resolve()
    return any(real == r.resolve() or real.is_relative_to(r.resolve()) for r in roots)


async def _read_mention(block: schema.ResourceContentBlock, roots: tuple[Path, ...], host: Host) -> ContentPart:
    path = uri_to_path(block.uri)
    if path is None:
        return TextPart(text=f"[Referenced resource {block.uri} (not a local file; not read)]")
    if not path.is_absolute():
        path = roots[0] / path
    if not _inside(path, roots):
        raise invalid_params(f"@-mentioned file is outside the workspace: {path}")
    mime = block.mime_type or mimetypes.guess_type(path.name)[0] or "text/plain"
    if mime in IMAGE_TYPES:
        data = path.read_bytes()
        return MediaPart(data=base64.b64encode(data).decode(), mime_type=mime)
    try:
        if host.capabilities.read_text_file:
            text = await host.read_text_file(path)
        else:
            raw = path.read_bytes()
            if b"\0" in raw[:8192]:
                return TextPart(text=f"[{path} is a binary file; not included]")
            text = raw[:MAX_MENTION_BYTES].decode("utf-8", "replace")
    except FileNotFoundError as exc:
        raise invalid_params(f"@-mentioned file does not exist: {path}") from exc
    except IsADirectoryError:
        return TextPart(text=f"[{path} is a directory; use the listing tools to explore it]")
    return ReferencePart(text=text, uri=str(path), mime_type="text/plain")


def _embedded(block: schema.EmbeddedResourceContentBlock) -> ContentPart:
    resource: Any = block.resource
    uri = getattr(resource, "uri", None)
    if isinstance(resource, schema.TextResourceContents):
        return ReferencePart(text=resource.text, uri=uri, mime_type=resource.mime_type or "text/plain")
    blob = getattr(resource, "blob", "")
    mime = getattr(resource, "mime_type", None) or "application/octet-stream"
    if mime in IMAGE_TYPES:
        return MediaPart(data=blob, mime_type=mime)
    return ReferencePart(text=f"[binary resource {uri}]", data=blob, uri=uri, mime_type=mime)


async def prompt_to_parts(
    blocks: list[Any], roots: tuple[Path, ...], host: Host
) -> tuple[ContentPart, ...]:
    parts: list[ContentPart] = []
    for block in blocks:
        if isinstance(block, schema.TextContentBlock):
            parts.append(TextPart(text=block.text))
        elif isinstance(block, schema.ImageContentBlock):
            if block.data:
                parts.append(MediaPart(data=block.data, mime_type=block.mime_type))
            elif block.uri:
                parts.append(MediaPart(uri=block.uri, mime_type=block.mime_type))
        elif isinstance(block, schema.AudioContentBlock):
            raise invalid_params("audio prompts are not supported (promptCapabilities.audio is false)")
        elif isinstance(block, schema.ResourceContentBlock):
            parts.append(await _read_mention(block, roots, host))
        elif isinstance(block, schema.EmbeddedResourceContentBlock):
            parts.append(_embedded(block))
        else:
            raise invalid_params(f"unsupported content block: {type(block).__name__}")
    if not parts:
        raise invalid_params("the prompt is empty")
    return tuple(parts)
