"""Scripted model: Gemini CLI's `--fake-responses` JSONL format (design: fake ContentGenerator).

One line per model call, consumed in order:

    {"method": "generateContentStream", "response": [<GenerateContentResponse>, ...]}
    {"method": "generateContent", "response": <GenerateContentResponse>}

A line may also be `{"error": {"code": 429, "status": "...", "message": "...",
"details": [...]}}` (our extension): the call raises the same `google.genai`
error a real server would produce, so retry and fallback can be scripted too.
The same scripts drive Gemini CLI and this agent. A file that is missing or not in
this format does not stop the agent: every model call fails with a ConfigError naming
the file (read again at each call, so a fixed file is used from the next prompt on).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import ConfigError
from runtime.models.content_generator import ContentGenerator

if TYPE_CHECKING:
    from google.genai import types

logger = logging.getLogger(__name__)

BURST_S = 0.001


class FakeResponsesExhausted(RuntimeError):
    """The script has no line left for this model call."""


def _load_lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"the --fake-responses file {path} does not exist") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read the --fake-responses file {path}: {exc}") from exc
    lines: list[dict[str, Any]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number}: not JSON: {exc}") from exc
        if not isinstance(entry, dict) or not ("response" in entry or "error" in entry):
            raise ConfigError(f"{path}:{number}: expected an object with 'method' and 'response'")
        lines.append(entry)
    return lines


class FakeContentGenerator(ContentGenerator):
    """Replays a script. `requests` records what the last `keep_requests` calls were
    asked (model, contents): a bounded window, so a long scripted run measures the
    agent, not a record that grows with every call's whole history."""

    def __init__(
        self,
        script: Path | list[dict[str, Any]],
        *,
        chunk_delay_s: float = 0.0,
        keep_requests: int = 16,
    ) -> None:
        self._script = script if isinstance(script, Path) else None
        self._problem: ConfigError | None = None
        self._lines: list[dict[str, Any]] = [] if isinstance(script, Path) else list(script)
        if self._script is not None:
            self._load()
        self._next = 0
        self._chunk_delay_s = chunk_delay_s
        self.requests: deque[tuple[str, list[types.Content]]] = deque(maxlen=keep_requests)

    def _load(self) -> None:
        """Reads the script file; a missing or bad file is kept as the error every
        model call raises (the agent keeps serving; the file is read again then)."""
        assert self._script is not None
        try:
            self._lines, self._problem = _load_lines(self._script), None
        except ConfigError as exc:
            logger.error("%s", exc)
            self._problem = exc

    def _take(self, model: str, contents: list[types.Content]) -> dict[str, Any]:
        self.requests.append((model, list(contents)))
        if self._problem is not None:
            self._load()
            if self._problem is not None:
                raise self._problem
        if self._next >= len(self._lines):
            raise FakeResponsesExhausted(
                f"the fake responses script has no entry left for model call #{self._next + 1}"
            )
        entry = self._lines[self._next]
        self._next += 1
        if "error" in entry:
            _raise_api_error(entry["error"])
        return entry

    async def generate_content(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> types.GenerateContentResponse:
        from google.genai import types as gtypes

        response = self._take(model, contents)["response"]
        if isinstance(response, list):
            response = _merge_stream(response)
        return gtypes.GenerateContentResponse.model_validate(response)

    async def generate_content_stream(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> AsyncIterator[types.GenerateContentResponse]:
        from google.genai import types as gtypes

        response = self._take(model, contents)["response"]
        chunks = response if isinstance(response, list) else [response]
        last_yield = time.perf_counter()
        for index, chunk in enumerate(chunks):
            # Chunks of one script line "arrive together", as a burst read from a
            # socket does: the loop gets control after the first chunk and then
            # about every millisecond, so the first chunk goes out at once and the
            # rest may be passed on in batches.
            if self._chunk_delay_s:
                await asyncio.sleep(self._chunk_delay_s)
            elif index == 1 or time.perf_counter() - last_yield > BURST_S:
                await asyncio.sleep(0)
                last_yield = time.perf_counter()
            yield gtypes.GenerateContentResponse.model_validate(chunk)


def _merge_stream(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """A streamed script line asked for as one response: join the chunks' parts."""
    parts: list[Any] = []
    last: dict[str, Any] = {}
    for chunk in chunks:
        last = chunk
        for candidate in chunk.get("candidates", [])[:1]:
            parts.extend((candidate.get("content") or {}).get("parts", []))
    merged = dict(last)
    candidate = dict((last.get("candidates") or [{}])[0])
    candidate["content"] = {"role": "model", "parts": parts}
    merged["candidates"] = [candidate]
    return merged


def _raise_api_error(error: dict[str, Any]) -> None:
    from google.genai import errors

    code = int(error.get("code", 500))
    body = {"error": error}
    if 400 <= code < 500:
        raise errors.ClientError(code, body)
    raise errors.ServerError(code, body)
