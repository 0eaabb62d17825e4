"""The google-genai ContentGenerator: Gemini API key or Vertex AI (design: ContentGenerator).

Auth lives here and nowhere above. `GOOGLE_GEMINI_BASE_URL` / `GOOGLE_VERTEX_BASE_URL`
(gateways, proxies, the tests' fake server) keep working: they reach the client
through `AuthConfig.base_url`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from runtime.config import AuthConfig
from runtime.models.content_generator import ContentGenerator

if TYPE_CHECKING:
    from google.genai import types


class GenaiContentGenerator(ContentGenerator):
    """Calls the Gemini API (or Vertex AI) through `google.genai.Client`."""

    def __init__(self, auth: AuthConfig) -> None:
        from google import genai
        from google.genai import types

        http_options = types.HttpOptions(base_url=auth.base_url) if auth.base_url else None
        if auth.kind == "vertex":
            if auth.project:
                self._client = genai.Client(
                    vertexai=True,
                    project=auth.project,
                    location=auth.location,
                    http_options=http_options,
                )
            else:
                self._client = genai.Client(
                    vertexai=True, api_key=auth.api_key, http_options=http_options
                )
        else:
            self._client = genai.Client(api_key=auth.api_key, http_options=http_options)
        from runtime.models.genai_request import CachedStreamRequests

        self.requests = CachedStreamRequests(self._client.aio.models._api_client)
        self.requests.install(self._client.aio.models)
        self._endpoint = auth.base_url or _google_host(auth)

    def endpoint(self, model: str) -> str:
        return self._endpoint

    async def generate_content(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> types.GenerateContentResponse:
        return await self._client.aio.models.generate_content(
            model=model,
            contents=contents,
            config=config,
        )

    async def generate_content_stream(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> AsyncIterator[types.GenerateContentResponse]:
        stream = await self._client.aio.models.generate_content_stream(
            model=model,
            contents=contents,
            config=config,
        )
        async for chunk in stream:
            yield chunk

    async def aclose(self) -> None:
        await self._client.aio.aclose()


def _google_host(auth: AuthConfig) -> str:
    if auth.kind != "vertex":
        return "https://generativelanguage.googleapis.com"
    if auth.location and auth.location != "global":
        return f"https://{auth.location}-aiplatform.googleapis.com"
    return "https://aiplatform.googleapis.com"
