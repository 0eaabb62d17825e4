"""GcliAgentModel: the design's `BaseLlm` that dispatches through a ContentGenerator.

ADK calls `generate_content_async` once per model turn. This class maps the
`LlmRequest` onto `ContentGenerator.generate_content_stream(...)`, turns chunks
into partial `LlmResponse`s followed by one consolidated response (ADK's
`StreamingResponseAggregator`), and keeps the retry + fallback loop inside
itself (`ModelResilience`): errors are never thrown to the Runner for retry.
A streamed answer that is not usable (empty, a malformed tool call...: see
`stream_check`) raises `InvalidStreamError` instead of its consolidated response.
The model id is re-read from the request at every attempt, so a fallback
never dispatches with the old model's settings.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.utils.streaming_utils import StreamingResponseAggregator
from google.genai import types
from pydantic import ConfigDict, Field

from runtime.adk.coalesce import coalesced
from runtime.adk.stream_check import StreamCheck, answers_tool
from runtime.adk.stream_control import StreamControl
from runtime.models.content_generator import ContentGenerator

logger = logging.getLogger(__name__)

# A model call attempt: (model id) -> async iterator of LlmResponses.
Attempt = Callable[[str], AsyncGenerator[LlmResponse, None]]

NOTICE_KEY = "gcli_notice"
"""`custom_metadata` key of a response that carries only a notice for the user."""


def notice_response(text: str) -> LlmResponse:
    """A partial response without model output that tells the user `text` (a retry...).

    It passes through ADK in order with the model's own chunks, is never saved
    in the session (partial), and the translator turns it into a `notice` event.
    """
    return LlmResponse(
        content=types.Content(role="model", parts=[]),
        partial=True,
        custom_metadata={NOTICE_KEY: text},
    )


class ModelResilience:
    """Runs attempts with retry and fallback. The default makes one attempt.

    `run(request, attempt)` must yield the responses of the successful attempt
    and raise only when the call has failed for good.
    """

    async def run(self, request: LlmRequest, attempt: Attempt) -> AsyncGenerator[LlmResponse, None]:
        async for response in attempt(request.model or ""):
            yield response


def _wants_thoughts(model: str) -> bool:
    return model.startswith(("gemini-2.5", "gemini-3"))


class GcliAgentModel(BaseLlm):
    """A `BaseLlm` whose calls go through the session's ContentGenerator."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    generator: Any = Field(exclude=True)
    resilience: Any = Field(default_factory=ModelResilience, exclude=True)
    on_model_used: Callable[[str], Awaitable[None] | None] | None = Field(
        default=None, exclude=True
    )
    control: StreamControl | None = Field(default=None, exclude=True)

    @property
    def capabilities(self) -> Any:
        from google.adk.models._capabilities import LlmCapabilities

        return LlmCapabilities(output_schema_and_tools=True)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        if not llm_request.model:
            llm_request.model = self.model

        def attempt(model: str) -> AsyncGenerator[LlmResponse, None]:
            return self._attempt(llm_request, model or self.model, stream)

        async for response in self.resilience.run(llm_request, attempt):
            yield response

    def _watch(self, partial: LlmResponse) -> bool:
        """Let the session's guards see the streamed text; True to end the stream here."""
        if self.control is None or not partial.partial or partial.content is None:
            return False
        text = "".join(p.text for p in partial.content.parts or () if p.text and not p.thought)
        return bool(text) and self.control.watch_text(text)

    async def _attempt(
        self, llm_request: LlmRequest, model: str, stream: bool
    ) -> AsyncGenerator[LlmResponse, None]:
        generator: ContentGenerator = self.generator
        config = llm_request.config
        if _wants_thoughts(model) and config.thinking_config is None:
            config = config.model_copy(
                update={"thinking_config": types.ThinkingConfig(include_thoughts=True)}
            )
        if not stream:
            response = await generator.generate_content(
                model=model, contents=llm_request.contents, config=config
            )
            result = LlmResponse.create(response)
            result.model_version = result.model_version or model
            yield result
            return
        aggregator = StreamingResponseAggregator()
        last_usage: types.GenerateContentResponseUsageMetadata | None = None
        check = StreamCheck(answers_tool=answers_tool(llm_request.contents))
        chunks = coalesced(
            check.watch(
                generator.generate_content_stream(
                    model=model, contents=llm_request.contents, config=config
                )
            )
        )
        cut = False
        try:
            async for chunk in chunks:
                if chunk.usage_metadata:
                    last_usage = chunk.usage_metadata
                if chunk.candidates and len(chunk.candidates) > 1:
                    chunk.candidates = chunk.candidates[:1]
                cut = False
                async for partial in aggregator.process_response(chunk):
                    partial.model_version = partial.model_version or model
                    cut = self._watch(partial)
                    yield partial
                    if cut:
                        break
                if cut:
                    break  # a guard ended the stream (a loop): read no further
        finally:
            await chunks.aclose()
        problem = None if cut else check.verdict()
        if problem is not None:  # nothing of this attempt goes into the history
            raise problem
        final = aggregator.close()
        if final is not None:
            if last_usage:
                final.usage_metadata = last_usage
            final.model_version = final.model_version or model
            yield final
