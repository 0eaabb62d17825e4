"""The editor's model choice across providers (issue 34.2): Gemini's catalogue, then the
models of the other providers: those declared in the settings and those their servers
list (`GET {baseUrl}/models`, the OpenAI-compatible list Ollama, vLLM, llama.cpp and
gateways serve).

A provider's server is asked only when the user pointed at it: declared in the settings,
`OPENAI_BASE_URL` set (for `openai`), `OLLAMA_HOST` set or an `ollama/…` model chosen
(for `ollama`). It is asked after the session started, in the background, with a short
timeout; a server that does not answer adds nothing. Answers are kept per URL for
`LIST_TTL_S` in the process, so a second session asks nobody.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping

from runtime.models.catalog import OFFERED
from runtime.models.providers import OLLAMA, OPENAI, Provider, ProviderTable, split_model

logger = logging.getLogger(__name__)

LIST_TIMEOUT_S = 3.0
LIST_TTL_S = 300.0
MAX_LISTED = 200

_listed: dict[str, tuple[float, tuple[str, ...]]] = {}

Choice = tuple[str, str]


def gemini_choices() -> list[Choice]:
    return [(m.id, m.display_name) for m in OFFERED]


def choices(table: ProviderTable, listed: Mapping[str, tuple[str, ...]] = {}) -> list[Choice]:
    """Gemini's models, then each provider's declared and listed models (ids once)."""
    found = gemini_choices()
    seen = {c[0] for c in found}
    for provider in table.providers:
        for name in (*provider.models, *listed.get(provider.name, ())):
            model = provider.model_id(name)
            if model not in seen:
                seen.add(model)
                found.append((model, f"{name} ({provider.name})"))
    return found


def providers_to_ask(
    table: ProviderTable, env: Mapping[str, str], settings: Mapping[str, object], model: str
) -> list[Provider]:
    declared = settings.get("modelProviders")
    named = set(declared) if isinstance(declared, Mapping) else set()
    split = split_model(model)
    if split is not None:
        named.add(split[0])
    if env.get("OPENAI_BASE_URL"):
        named.add(OPENAI)
    if env.get("OLLAMA_HOST"):
        named.add(OLLAMA)
    return [p for p in table.providers if p.name in named and p.base_url]


async def listed_models(provider: Provider) -> tuple[str, ...]:
    """The ids `GET {base_url}/models` answers (cached); () when it does not answer."""
    now = time.monotonic()
    kept = _listed.get(provider.base_url)
    if kept is not None and now - kept[0] < LIST_TTL_S:
        return kept[1]
    import httpx

    headers = {"Authorization": f"Bearer {provider.api_key}"} if provider.api_key else {}
    try:
        async with httpx.AsyncClient(timeout=LIST_TIMEOUT_S) as client:
            response = await client.get(f"{provider.base_url.rstrip('/')}/models", headers=headers)
            response.raise_for_status()
            data = response.json().get("data")
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        logger.info("%s lists no models (%s)", provider.base_url, exc)
        return ()
    ids = tuple(
        str(item["id"])
        for item in (data if isinstance(data, list) else [])[:MAX_LISTED]
        if isinstance(item, dict) and isinstance(item.get("id"), str)
    )
    _listed[provider.base_url] = (now, ids)
    return ids


async def discover(providers: list[Provider]) -> dict[str, tuple[str, ...]]:
    """Each provider's listed models, asked at once."""
    found = await asyncio.gather(*(listed_models(p) for p in providers))
    return {p.name: ids for p, ids in zip(providers, found, strict=True) if ids}
