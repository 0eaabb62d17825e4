"""Coalescing of streamed chunks that arrive together.

ADK spends a fixed cost on every partial response (events, callbacks,
telemetry), so a burst of 200 small chunks costs 200 times that. A reader task
pulls chunks off the model stream as they come; each time the consumer is
ready, it takes everything already received and merges it into one chunk. The
first chunk is never delayed (it is taken the moment it arrives), and nothing is
reordered: text and thought deltas are joined, other parts (function calls,
parts carrying a thought signature) are kept as they are, and the finish
reason, usage and model version of the last chunk win.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator

from google.genai import types

_END = object()


def _joinable(a: types.Part, b: types.Part) -> bool:
    return (
        a.text is not None
        and b.text is not None
        and bool(a.thought) == bool(b.thought)
        and not a.thought_signature
        and not b.thought_signature
    )


def merge_chunks(chunks: list[types.GenerateContentResponse]) -> types.GenerateContentResponse:
    """One response holding the parts of `chunks`, in order; metadata from the last."""
    if len(chunks) == 1:
        return chunks[0]
    parts: list[types.Part] = []
    for chunk in chunks:
        if not chunk.candidates or not chunk.candidates[0].content:
            continue
        for part in chunk.candidates[0].content.parts or []:
            if parts and _joinable(parts[-1], part):
                parts[-1] = parts[-1].model_copy(
                    update={"text": (parts[-1].text or "") + (part.text or "")}
                )
            else:
                parts.append(part)
    last = chunks[-1]
    base = next((c for c in reversed(chunks) if c.candidates), last)
    candidate = base.candidates[0] if base.candidates else types.Candidate()
    finish = next(
        (
            c.candidates[0].finish_reason
            for c in reversed(chunks)
            if c.candidates and c.candidates[0].finish_reason
        ),
        None,
    )
    usage = next((c.usage_metadata for c in reversed(chunks) if c.usage_metadata), None)
    merged_candidate = candidate.model_copy(
        update={"content": types.Content(role="model", parts=parts), "finish_reason": finish}
    )
    return last.model_copy(
        update={
            "candidates": [merged_candidate],
            "usage_metadata": usage,
            "model_version": next(
                (c.model_version for c in reversed(chunks) if c.model_version), None
            ),
        }
    )


async def coalesced(
    stream: AsyncIterator[types.GenerateContentResponse],
) -> AsyncGenerator[types.GenerateContentResponse, None]:
    """Yield merged batches of what `stream` produced since the last yield."""
    queue: asyncio.Queue[object] = asyncio.Queue()

    async def read() -> None:
        try:
            async for chunk in stream:
                queue.put_nowait(chunk)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which re-raises it
            queue.put_nowait(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        else:
            queue.put_nowait(_END)

    reader = asyncio.create_task(read())
    try:
        done = False
        while not done:
            batch: list[types.GenerateContentResponse] = []
            item = await queue.get()
            while True:
                if item is _END:
                    done = True
                    break
                if isinstance(item, BaseException):
                    if batch:
                        yield merge_chunks(batch)
                    raise item
                batch.append(item)  # type: ignore[arg-type]
                if queue.empty():
                    break
                item = queue.get_nowait()
            if batch:
                yield merge_chunks(batch)
    finally:
        if not reader.done():
            reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
