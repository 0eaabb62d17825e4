"""ContentGenerator: the one door to a model (Gemini CLI's `ContentGenerator`).

`GcliAgentModel` dispatches every model call through one of these. Auth lives
inside the implementation (API key, Vertex AI, a fake script), never in the
layers above. Errors are raised as `google.genai.errors.APIError` (or
subclasses) so the retry and fallback logic sees the same thing whichever
implementation runs.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from google.genai import types


class ContentGenerator(abc.ABC):
    """Generates content for a model id. Implementations: genai, fake, recording."""

    @abc.abstractmethod
    async def generate_content(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> types.GenerateContentResponse: ...

    @abc.abstractmethod
    def generate_content_stream(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> AsyncIterator[types.GenerateContentResponse]:
        """An async iterator of response chunks; errors surface on iteration."""

    def context_window(self, model: str) -> int | None:
        """The input token limit of `model` when this generator knows it (another
        provider's declared window); None: the catalogue's (`catalog.context_window`)."""
        return None

    def endpoint(self, model: str) -> str:
        """Where calls for `model` go, as the user would recognise it (a URL), for
        messages; empty when there is nothing to name (a script)."""
        return ""

    async def aclose(self) -> None:
        return None
