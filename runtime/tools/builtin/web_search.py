"""`google_web_search`: an answer grounded in Google Search, with its sources cited.

Gemini CLI's web search tool. The query goes, as a one-turn request, to the model of
Gemini CLI's `web-search` model config (`gemini-3-flash-preview`, temperature 0,
topP 1, `tools: [{googleSearch: {}}]`) through the session's ContentGenerator (so
the same credentials, fake script or recording apply). The answer's
`groundingMetadata` is turned into text for the calling model: each grounding
support's chunk numbers (`[1][2]`) are inserted at its segment's end, a UTF-8 byte
offset, and the chunks are listed after the answer under "Sources:".

Differences from Gemini CLI: its request also carries its core system prompt (here
the request carries none), and it goes through its retry loop (here one attempt: a
failure is reported to the model, which may search again).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.models.catalog import PREVIEW_FLASH
from runtime.protocol import DisplayText, ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.builtin.args import ArgError, parse_error, str_arg
from runtime.tools.builtin.results import error_result

if TYPE_CHECKING:
    from google.genai import types

    from runtime.models.content_generator import ContentGenerator

logger = logging.getLogger(__name__)

CONTENT_GENERATOR_KEY = "content_generator"
"""`ToolEnv.extra` key: a callable returning the session's ContentGenerator."""

WEB_SEARCH_MODEL = PREVIEW_FLASH
"""The model of Gemini CLI's `web-search` config (it extends `gemini-3-flash-base`)."""


@dataclass(frozen=True)
class Support:
    """One grounding support: where a grounded segment ends (a UTF-8 byte offset) and
    the chunks (0-based) that ground it."""

    end_byte: int
    chunk_indices: tuple[int, ...]


def insert_citations(text: str, supports: Sequence[Support]) -> str:
    """`text` with `[n]` markers (n = chunk index + 1) inserted at each support's end.

    Offsets are byte positions in the UTF-8 text, as the API gives them. Markers are
    inserted from the last position backwards; supports ending at the same byte keep
    Gemini CLI's order there (the later support's marker first). An offset past the
    end is taken as the end; one inside a character leaves U+FFFD in its place."""
    data = text.encode("utf-8")
    ordered = sorted(supports, key=lambda s: -s.end_byte)  # stable, as Gemini CLI's sort
    pieces: list[bytes] = []
    last = len(data)
    for support in ordered:
        position = max(0, min(support.end_byte, last))
        marker = "".join(f"[{index + 1}]" for index in support.chunk_indices)
        pieces.append(data[position:last])
        pieces.append(marker.encode("utf-8"))
        last = position
    pieces.append(data[:last])
    return b"".join(reversed(pieces)).decode("utf-8", errors="replace")


def answer_text(response: types.GenerateContentResponse) -> str:
    """The text parts (thoughts left out) of the first candidate, joined."""
    candidates = response.candidates or []
    content = candidates[0].content if candidates else None
    parts = (content.parts if content is not None else None) or []
    return "".join(p.text for p in parts if p.text and not p.thought)


def grounding(
    response: types.GenerateContentResponse,
) -> tuple[list[tuple[str, str]], list[Support]]:
    """The sources `(title, uri)` and supports of the first candidate's grounding."""
    candidates = response.candidates or []
    metadata = candidates[0].grounding_metadata if candidates else None
    if metadata is None:
        return [], []
    sources = [
        ((c.web.title if c.web else None) or "Untitled", (c.web.uri if c.web else None) or "No URI")
        for c in metadata.grounding_chunks or []
    ]
    supports = [
        Support(s.segment.end_index or 0, tuple(s.grounding_chunk_indices))
        for s in metadata.grounding_supports or []
        if s.segment is not None and s.grounding_chunk_indices is not None
    ]
    return sources, supports


def format_answer(query: str, response: types.GenerateContentResponse) -> ToolResult:
    """The tool's result for the model's answer: cited text and sources, or "no results"."""
    text = answer_text(response)
    if not text.strip():
        return ToolResult(
            llm_content=f'No search results or information found for query: "{query}"',
            display=(DisplayText(text="No information found."),),
            raw_output={"query": query, "sources": []},
        )
    sources, supports = grounding(response)
    if sources:
        if supports:
            text = insert_citations(text, supports)
        listed = "\n".join(f"[{n}] {title} ({uri})" for n, (title, uri) in enumerate(sources, 1))
        text += "\n\nSources:\n" + listed
    return ToolResult(
        llm_content=f'Web search results for "{query}":\n\n{text}',
        display=(DisplayText(text=f'Search results for "{query}" returned.'),),
        raw_output={"query": query, "sources": [{"title": t, "uri": u} for t, u in sources]},
    )


def _parse(args: dict[str, Any]) -> str:
    query = str_arg(args, "query", required=True)
    if not query or not query.strip():
        raise ArgError("The 'query' parameter cannot be empty.")
    return query


class WebSearchTool(GcliTool):
    """`google_web_search`: Google Search through the Gemini API, answer with citations."""

    name = "google_web_search"
    kind = "search"
    description = (
        "Searches the web with Google Search (through the Gemini API) and returns an answer "
        "built from the results, with numbered citations such as [1] and the list of source "
        "titles and URLs. Use it for current information, documentation or errors you do not "
        "know; to read a source in full, pass its URL to 'web_fetch'."
    )

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What to search the web for: a question or search terms.",
                }
            },
            "required": ["query"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        return parse_error(_parse, args)

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        query = args.get("query")
        return ToolDisplay(
            title=f'Searching the web for: "{query if isinstance(query, str) else ""}"',
            kind="search",
        )

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        from google.genai import types

        try:
            query = _parse(args)
        except ArgError as exc:
            return error_result(str(exc), "invalid_arguments")
        generator_of: Callable[[], ContentGenerator] | None = env.extra.get(CONTENT_GENERATOR_KEY)
        config = types.GenerateContentConfig(
            temperature=0, top_p=1, tools=[types.Tool(google_search=types.GoogleSearch())]
        )
        try:
            if generator_of is None:
                raise RuntimeError("this session has no model connection for searching")
            response = await generator_of().generate_content(
                model=WEB_SEARCH_MODEL,
                contents=[types.Content(role="user", parts=[types.Part(text=query)])],
                config=config,
            )
        except Exception as exc:  # noqa: BLE001 - any failure is told to the model
            message = f'Error during web search for query "{query}": {exc}'
            logger.warning("%s", message)
            return ToolResult(
                llm_content=f"Error: {message}",
                display=(DisplayText(text="Error performing web search."),),
                is_error=True,
                error_type="web_search_failed",
            )
        return format_answer(query, response)
