"""Records every model call in the `--fake-responses` format (`--record-responses FILE`).

Wraps another ContentGenerator; each call appends one JSONL line when it ends, so a
real session can be replayed later with `--fake-responses`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.models.content_generator import ContentGenerator

if TYPE_CHECKING:
    from google.genai import types

logger = logging.getLogger(__name__)


def _dump(response: types.GenerateContentResponse) -> dict[str, Any]:
    return response.model_dump(mode="json", by_alias=True, exclude_none=True)


class RecordingContentGenerator(ContentGenerator):
    """Passes calls through to `inner` and appends what came back to `path`."""

    def __init__(self, inner: ContentGenerator, path: Path) -> None:
        self._inner = inner
        self._path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def _append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, separators=(",", ":")) + "\n"
        with self._lock, self._path.open("a", encoding="utf-8") as handle:
            handle.write(line)

    async def generate_content(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> types.GenerateContentResponse:
        response = await self._inner.generate_content(model=model, contents=contents, config=config)
        self._append({"method": "generateContent", "response": _dump(response)})
        return response

    async def generate_content_stream(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> AsyncIterator[types.GenerateContentResponse]:
        chunks: list[dict[str, Any]] = []
        try:
            async for chunk in self._inner.generate_content_stream(
                model=model, contents=contents, config=config
            ):
                chunks.append(_dump(chunk))
                yield chunk
        finally:
            if chunks:
                self._append({"method": "generateContentStream", "response": chunks})

    def endpoint(self, model: str) -> str:
        return self._inner.endpoint(model)

    def context_window(self, model: str) -> int | None:
        return self._inner.context_window(model)

    async def aclose(self) -> None:
        await self._inner.aclose()
