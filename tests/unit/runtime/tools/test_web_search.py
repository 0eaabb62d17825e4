"""`google_web_search`: citations at UTF-8 byte offsets, sources, the search request,
and what the model gets when there is no answer or the search fails.

The model is `FakeContentGenerator` fed `--fake-responses` lines (camelCase wire JSON),
so these tests also show that such a script can carry `groundingMetadata`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime.models.fake_generator import FakeContentGenerator
from runtime.protocol import DisplayText
from runtime.tools.base import ToolEnv, ToolResult
from runtime.tools.builtin.web_search import (
    CONTENT_GENERATOR_KEY,
    WEB_SEARCH_MODEL,
    Support,
    WebSearchTool,
    insert_citations,
)
from tests.unit.runtime.tools.fakes import make_env

SOURCES = [
    {"web": {"uri": "https://example.com", "title": "Example Site"}},
    {"web": {"uri": "https://google.com", "title": "Google"}},
]


def answer(parts: list[dict[str, Any]], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """One `--fake-responses` line: a model answer, optionally grounded."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if metadata is not None:
        candidate["groundingMetadata"] = metadata
    return {"method": "generateContent", "response": {"candidates": [candidate]}}


def support(start: int, end: int, *indices: int) -> dict[str, Any]:
    return {
        "segment": {"startIndex": start, "endIndex": end},
        "groundingChunkIndices": list(indices),
    }


def env_with(tmp_path: Path, generator: FakeContentGenerator) -> ToolEnv:
    """A tool env whose session model connection is `generator`."""
    env = make_env(tmp_path / "ws")
    env.extra[CONTENT_GENERATOR_KEY] = lambda: generator
    return env


async def search(
    tmp_path: Path, lines: list[dict[str, Any]], query: str = "q"
) -> tuple[ToolResult, FakeContentGenerator]:
    generator = FakeContentGenerator(lines)
    return await WebSearchTool().execute({"query": query}, env_with(tmp_path, generator)), generator


def shown(result: ToolResult) -> list[str]:
    return [item.text for item in result.display if isinstance(item, DisplayText)]


# ---------------------------------------------------------------- insert_citations


def test_markers_go_at_each_support_end() -> None:
    text = "This is a test response."
    supports = [Support(14, (0,)), Support(24, (0, 1))]
    assert insert_citations(text, supports) == "This is a test[1] response.[1][2]"


def test_offsets_are_utf8_bytes_not_characters() -> None:
    text = "こんにちは! Gemini CLI✨️"  # 5 three-byte characters, then ✨ + a variation selector
    supports = [Support(16, (0,)), Support(33, (1, 2))]
    assert insert_citations(text, supports) == "こんにちは![1] Gemini CLI✨️[2][3]"


def test_supports_ending_at_the_same_byte_keep_gemini_clis_order() -> None:
    # overlapping segments: the later support's marker comes first where they share an end
    text = "Alpha beta gamma."
    supports = [Support(10, (0,)), Support(17, (1,)), Support(10, (2,)), Support(17, (0, 2))]
    assert insert_citations(text, supports) == "Alpha beta[3][1] gamma.[1][3][2]"


def test_supports_in_any_order_and_out_of_range() -> None:
    text = "ab"
    assert insert_citations(text, [Support(1, (0,)), Support(0, (1,))]) == "[2]a[1]b"
    assert insert_citations(text, [Support(99, (0,))]) == "ab[1]"
    assert insert_citations(text, []) == "ab"


def test_an_offset_inside_a_character_leaves_a_replacement_character() -> None:
    assert insert_citations("é!", [Support(1, (0,))]) == "\ufffd[1]\ufffd!"


# ---------------------------------------------------------------- the tool


async def test_grounded_answer_is_cited_with_its_sources(tmp_path: Path) -> None:
    text = "こんにちは! Gemini CLI✨️"
    metadata = {
        "webSearchQueries": ["gemini cli"],
        "groundingChunks": SOURCES,
        "groundingSupports": [support(0, 16, 0), support(17, 33, 0, 1)],
    }
    result, generator = await search(tmp_path, [answer([{"text": text}], metadata)], "gemini")

    assert result.llm_content == (
        'Web search results for "gemini":\n\n'
        "こんにちは![1] Gemini CLI✨️[1][2]\n\n"
        "Sources:\n[1] Example Site (https://example.com)\n[2] Google (https://google.com)"
    )
    assert not result.is_error
    assert shown(result) == ['Search results for "gemini" returned.']
    assert result.raw_output == {
        "query": "gemini",
        "sources": [
            {"title": "Example Site", "uri": "https://example.com"},
            {"title": "Google", "uri": "https://google.com"},
        ],
    }
    # one request: the query alone, to Gemini CLI's web-search model (its config: e2e)
    [(model, contents)] = generator.requests
    assert model == WEB_SEARCH_MODEL == "gemini-3-flash-preview"
    assert [c.model_dump(exclude_none=True) for c in contents] == [
        {"role": "user", "parts": [{"text": "gemini"}]}
    ]


async def test_answer_without_grounding_is_returned_as_is(tmp_path: Path) -> None:
    lines = [answer([{"text": "thinking", "thought": True}, {"text": "Plain answer."}])]
    result, _ = await search(tmp_path, lines)
    assert result.llm_content == 'Web search results for "q":\n\nPlain answer.'
    assert result.raw_output == {"query": "q", "sources": []}


async def test_sources_without_supports_are_listed_untitled_ones_too(tmp_path: Path) -> None:
    metadata = {"groundingChunks": [SOURCES[0], {"web": {}}, {}]}
    result, _ = await search(tmp_path, [answer([{"text": "Answer."}], metadata)])
    assert result.llm_content == (
        'Web search results for "q":\n\nAnswer.\n\nSources:\n'
        "[1] Example Site (https://example.com)\n[2] Untitled (No URI)\n[3] Untitled (No URI)"
    )


@pytest.mark.parametrize(
    "parts", [[], [{"text": ""}], [{"text": "  \n"}], [{"text": "only a thought", "thought": True}]]
)
async def test_empty_answer_means_no_results(tmp_path: Path, parts: list[dict[str, Any]]) -> None:
    metadata = {"groundingChunks": SOURCES}
    result, _ = await search(tmp_path, [answer(parts, metadata)], "nothing")
    assert result.llm_content == 'No search results or information found for query: "nothing"'
    assert not result.is_error
    assert shown(result) == ["No information found."]


async def test_no_candidates_means_no_results(tmp_path: Path) -> None:
    line = {"method": "generateContent", "response": {"promptFeedback": {"blockReason": "SAFETY"}}}
    result, _ = await search(tmp_path, [line])
    assert result.llm_content == 'No search results or information found for query: "q"'


async def test_a_model_error_is_told_to_the_model(tmp_path: Path) -> None:
    error = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Quota exceeded"}}
    result, _ = await search(tmp_path, [error], "news")
    assert result.is_error and result.error_type == "web_search_failed"
    assert result.llm_content.startswith('Error: Error during web search for query "news": ')
    assert "Quota exceeded" in result.llm_content
    assert shown(result) == ["Error performing web search."]


async def test_without_a_model_connection_the_search_fails_cleanly(tmp_path: Path) -> None:
    result = await WebSearchTool().execute({"query": "q"}, make_env(tmp_path / "ws"))
    assert result.is_error and result.error_type == "web_search_failed"
    assert "no model connection" in result.llm_content


@pytest.mark.parametrize("args", [{}, {"query": ""}, {"query": "   "}, {"query": 3}])
async def test_a_missing_or_empty_query_is_refused(tmp_path: Path, args: dict[str, Any]) -> None:
    tool = WebSearchTool()
    assert tool.validate(args) is not None
    generator = FakeContentGenerator([])
    result = await tool.execute(args, env_with(tmp_path, generator))
    assert result.is_error and result.error_type == "invalid_arguments"
    assert not generator.requests
    if args.get("query") == "":
        assert result.llm_content == "The 'query' parameter cannot be empty."


def test_display_is_a_search_titled_with_the_query(tmp_path: Path) -> None:
    tool = WebSearchTool()
    env = make_env(tmp_path / "ws")
    display = tool.display({"query": "python 3.14 release"}, env)
    assert display.kind == tool.kind == "search"
    assert display.title == 'Searching the web for: "python 3.14 release"'
    assert tool.parameters_schema()["required"] == ["query"]
