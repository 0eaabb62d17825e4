"""ACP content blocks → runtime content parts (the one place for content translation).

Text and images pass through (image data must be valid base64). A
`resource_link` (an @-mentioned file) is read into the context like the read
tool reads: confined to the session's roots (symlinks followed), regular files
only (a FIFO would block), at most MAX_MENTION_BYTES, off the event loop, and
through the editor when it offers `fs.readTextFile` (it sees unsaved buffers).
An embedded resource brings its own text (or data).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import mimetypes
import stat
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp_server import schema
from acp_server.errors import invalid_params
from runtime.errors import PathOutsideWorkspaceError, ToolError
from runtime.host import Host
from runtime.protocol import ContentPart, MediaPart, ReferencePart, TextPart
from runtime.tools.io.files import MAX_FILE_BYTES, BinaryFileError, FileAccess, FileTooLargeError
from runtime.tools.io.paths import resolve_in_roots

MAX_MENTION_BYTES = 2_000_000
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp", "image/heic", "image/heif"}


def uri_to_path(uri: str) -> Path | None:
    """The local path of a `file:` URI (or a bare path); None for other schemes.
    Raises ValueError for a URI that cannot be parsed."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return Path(unquote(parsed.path if parsed.scheme else uri))
    return None


def _shown(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def _read_image(path: Path) -> bytes:
    """An @-mentioned image from disk: regular files only, capped like the read tool."""
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"Not a regular file (a device, socket or pipe): {path}")
    if st.st_size > MAX_FILE_BYTES:
        raise FileTooLargeError(f"Image is too large to include ({st.st_size} bytes): {path}")
    with open(path, "rb") as handle:
        return handle.read(MAX_FILE_BYTES)


async def _read_mention(
    block: schema.ResourceContentBlock, roots: tuple[Path, ...], host: Host
) -> ContentPart:
    try:
        path = uri_to_path(block.uri)
    except ValueError as exc:
        raise invalid_params(f"malformed resource link uri {_shown(block.uri)!r}: {exc}") from None
    if path is None:
        return TextPart(
            text=f"[Referenced resource {_shown(block.uri)} (not a local file; not read)]"
        )
    try:
        path = resolve_in_roots(path, roots)
    except PathOutsideWorkspaceError:
        raise invalid_params(
            f"@-mentioned file is outside the workspace: {_shown(str(path))}"
        ) from None
    mime = block.mime_type or mimetypes.guess_type(path.name)[0] or "text/plain"
    try:
        if mime in IMAGE_TYPES:
            data = await asyncio.to_thread(_read_image, path)
            return MediaPart(data=base64.b64encode(data).decode(), mime_type=mime)
        text = await FileAccess(host, max_file_bytes=MAX_MENTION_BYTES).read_text(path)
    except FileNotFoundError:
        raise invalid_params(f"@-mentioned file does not exist: {_shown(str(path))}") from None
    except IsADirectoryError:
        return TextPart(text=f"[{path} is a directory; use the listing tools to explore it]")
    except BinaryFileError:
        return TextPart(text=f"[{path} is a binary file; not included]")
    except FileTooLargeError as exc:
        return TextPart(text=f"[{exc}; not included, use read_file with a line range]")
    except ToolError as exc:  # not a regular file: a FIFO would block, a device never ends
        raise invalid_params(f"@-mentioned path cannot be read: {exc}") from None
    except OSError as exc:
        raise invalid_params(f"@-mentioned file cannot be read: {exc.strerror or exc}") from None
    return ReferencePart(text=text, uri=str(path), mime_type="text/plain")


def _checked_base64(data: str, what: str) -> str:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise invalid_params(f"{what} is not valid base64") from None
    return data


def _embedded(block: schema.EmbeddedResourceContentBlock) -> ContentPart:
    resource: Any = block.resource
    uri = getattr(resource, "uri", None)
    if isinstance(resource, schema.TextResourceContents):
        return ReferencePart(
            text=resource.text, uri=uri, mime_type=resource.mime_type or "text/plain"
        )
    blob = getattr(resource, "blob", "")
    mime = getattr(resource, "mime_type", None) or "application/octet-stream"
    if mime in IMAGE_TYPES:
        return MediaPart(data=_checked_base64(blob, "the embedded image"), mime_type=mime)
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
                data = _checked_base64(block.data, "the image data")
                parts.append(MediaPart(data=data, mime_type=block.mime_type))
            elif block.uri:
                parts.append(MediaPart(uri=block.uri, mime_type=block.mime_type))
        elif isinstance(block, schema.AudioContentBlock):
            raise invalid_params(
                "audio prompts are not supported (promptCapabilities.audio is false)"
            )
        elif isinstance(block, schema.ResourceContentBlock):
            parts.append(await _read_mention(block, roots, host))
        elif isinstance(block, schema.EmbeddedResourceContentBlock):
            parts.append(_embedded(block))
        else:
            raise invalid_params(f"unsupported content block: {type(block).__name__}")
    if not parts:
        raise invalid_params("the prompt is empty")
    return tuple(parts)
