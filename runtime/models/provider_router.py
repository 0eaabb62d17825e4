"""The session's one ContentGenerator when models of several providers may be called.

Each call goes where its model id says (`runtime.models.providers`): `PROVIDER/NAME` to
that provider's OpenAI-compatible endpoint (one `OpenAICompatGenerator` each, made on
first use), anything else to Gemini. The model id is read at every call, so a fallback
or a model switch may cross providers in the middle of a session, and subagents and
compression (which share the session's generator) follow.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from runtime.models.content_generator import ContentGenerator
from runtime.models.providers import Provider, ProviderTable, split_model

if TYPE_CHECKING:
    from google.genai import types

    from runtime.models.openai_generator import OpenAICompatGenerator

NO_GOOGLE_CREDENTIALS = (
    "{model} is a Gemini model, and no Google credentials are set: set GEMINI_API_KEY "
    "(or sign in with `adk-acp --login`), or choose another provider's model "
    "(openai/NAME, ollama/NAME)."
)


_clients: dict[Provider, OpenAICompatGenerator] = {}
"""One generator (one `openai` client, its connections) per provider per process, as for
Gemini's client; the warm-up makes those the environment names."""


def provider_generator(provider: Provider) -> OpenAICompatGenerator:
    generator = _clients.get(provider)
    if generator is None:
        from runtime.models.openai_generator import OpenAICompatGenerator

        generator = _clients[provider] = OpenAICompatGenerator(provider)
    return generator


def _refusal(message: str) -> Exception:
    from google.genai import errors

    body = {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
    return errors.ClientError(400, body)


class ProviderRouter(ContentGenerator):
    """Routes each call by its model id; `gemini` None when there are no Google credentials."""

    def __init__(self, gemini: ContentGenerator | None, table: ProviderTable) -> None:
        self.gemini = gemini
        self.table = table
        self._providers: dict[str, ContentGenerator] = {}

    def route(self, model: str) -> ContentGenerator:
        """The generator for `model`; raises a 400 `APIError` saying what to do when none."""
        found = self.table.for_model(model)
        if found is None:
            split = split_model(model)
            if split is not None:
                raise _refusal(
                    f"No model provider named {split[0]!r} (in {model!r}): the known ones are "
                    f"{', '.join(p.name for p in self.table.providers)}; declare others in "
                    "the settings' `modelProviders`."
                )
            if self.gemini is None:
                raise _refusal(NO_GOOGLE_CREDENTIALS.format(model=model))
            return self.gemini
        provider, _ = found
        generator = self._providers.get(provider.name)
        if generator is None:
            if not provider.base_url:
                raise _refusal(f"The model provider {provider.name!r} has no `baseUrl`.")
            if not provider.api_key:
                raise _refusal(
                    f"{model} needs an API key: set {provider.api_key_env or 'its key'} "
                    f"for {provider.base_url}."
                )
            generator = provider_generator(provider)
            self._providers[provider.name] = generator
        return generator

    def context_window(self, model: str) -> int | None:
        return self.table.context_window(model)

    def endpoint(self, model: str) -> str:
        found = self.table.for_model(model)
        if found is not None:
            return found[0].base_url
        return self.gemini.endpoint(model) if self.gemini is not None else ""

    async def generate_content(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> types.GenerateContentResponse:
        return await self.route(model).generate_content(
            model=model, contents=contents, config=config
        )

    async def generate_content_stream(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> AsyncIterator[types.GenerateContentResponse]:
        stream = self.route(model).generate_content_stream(
            model=model, contents=contents, config=config
        )
        async for chunk in stream:
            yield chunk

    async def aclose(self) -> None:
        """The clients are the process's (shared, as Gemini's): nothing of them closes here."""
        self._providers.clear()
