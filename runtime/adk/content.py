"""Runtime content parts → genai `Content` for the model (the user's side of a turn)."""

from __future__ import annotations

import base64
import binascii

from google.genai import types

from runtime.protocol import ContentPart, MediaPart, ReferencePart, TextPart, ThoughtPart


def _reference_text(part: ReferencePart) -> str:
    name = part.uri or "referenced file"
    return f"--- Content from referenced file: {name} ---\n{part.text}\n--- End of content ---"


def to_genai_parts(parts: tuple[ContentPart, ...] | list[ContentPart]) -> list[types.Part]:
    out: list[types.Part] = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append(types.Part(text=part.text))
        elif isinstance(part, ThoughtPart):
            continue
        elif isinstance(part, MediaPart):
            if part.data is not None:
                try:
                    raw = base64.b64decode(part.data, validate=True)
                except (binascii.Error, ValueError) as exc:
                    raise ValueError(f"media data is not valid base64: {exc}") from exc
                out.append(types.Part(inline_data=types.Blob(data=raw, mime_type=part.mime_type)))
            elif part.uri:
                out.append(
                    types.Part(
                        file_data=types.FileData(file_uri=part.uri, mime_type=part.mime_type)
                    )
                )
        elif isinstance(part, ReferencePart):
            if part.data is not None and part.mime_type and not part.mime_type.startswith("text/"):
                raw = base64.b64decode(part.data)
                out.append(types.Part(text=f"--- Attached: {part.uri or 'resource'} ---"))
                out.append(types.Part(inline_data=types.Blob(data=raw, mime_type=part.mime_type)))
            else:
                out.append(types.Part(text=_reference_text(part)))
    return out


def user_content(parts: tuple[ContentPart, ...]) -> types.Content:
    return types.Content(role="user", parts=to_genai_parts(parts))
