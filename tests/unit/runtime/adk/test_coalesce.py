"""Coalescing of chunks that arrive together: order kept, first chunk not delayed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from google.genai import types

from runtime.adk.coalesce import coalesced, merge_chunks


def _chunk(
    *parts: types.Part, finish: str | None = None, usage: int | None = None
) -> types.GenerateContentResponse:
    return types.GenerateContentResponse(
        candidates=[
            types.Candidate(
                content=types.Content(role="model", parts=list(parts)), finish_reason=finish
            )
        ],
        usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=usage)
        if usage
        else None,
    )


def test_merge_joins_text_and_keeps_other_parts_in_order() -> None:
    call = types.Part(function_call=types.FunctionCall(name="f", args={}))
    merged = merge_chunks(
        [
            _chunk(types.Part(text="thinking ", thought=True)),
            _chunk(types.Part(text="more", thought=True)),
            _chunk(types.Part(text="Hel")),
            _chunk(types.Part(text="lo"), usage=3),
            _chunk(call, finish="STOP"),
        ]
    )
    parts = merged.candidates[0].content.parts  # type: ignore[index, union-attr]
    assert [(p.text, bool(p.thought)) for p in parts[:2]] == [
        ("thinking more", True),
        ("Hello", False),
    ]
    assert parts[2].function_call and parts[2].function_call.name == "f"
    assert merged.candidates[0].finish_reason == "STOP"  # type: ignore[index]
    assert merged.usage_metadata and merged.usage_metadata.prompt_token_count == 3


def test_parts_with_thought_signatures_are_not_joined() -> None:
    merged = merge_chunks(
        [_chunk(types.Part(text="a", thought_signature=b"sig")), _chunk(types.Part(text="b"))]
    )
    assert [p.text for p in merged.candidates[0].content.parts] == ["a", "b"]  # type: ignore[index, union-attr]


async def _burst(
    n: int, *, pause_after_first: bool
) -> AsyncIterator[types.GenerateContentResponse]:
    for i in range(n):
        if i == 1 and pause_after_first:
            await asyncio.sleep(0.01)
        yield _chunk(types.Part(text=str(i)))


async def test_a_burst_is_batched_but_the_first_chunk_goes_alone() -> None:
    batches = [c.text async for c in coalesced(_burst(50, pause_after_first=True))]
    assert batches[0] == "0"
    assert "".join(batches) == "".join(str(i) for i in range(50))
    assert len(batches) < 10


async def test_errors_reach_the_consumer_after_what_came_before() -> None:
    async def broken() -> AsyncIterator[types.GenerateContentResponse]:
        yield _chunk(types.Part(text="a"))
        raise ConnectionResetError("dropped")

    got: list[str | None] = []
    with pytest.raises(ConnectionResetError):
        async for chunk in coalesced(broken()):
            got.append(chunk.text)
    assert got == ["a"]


async def test_closing_early_stops_the_reader() -> None:
    stopped = asyncio.Event()

    async def endless() -> AsyncIterator[types.GenerateContentResponse]:
        try:
            while True:
                await asyncio.sleep(0.001)
                yield _chunk(types.Part(text="x"))
        finally:
            stopped.set()

    agen = coalesced(endless())
    assert (await agen.__anext__()).text
    await agen.aclose()
    assert stopped.is_set()
