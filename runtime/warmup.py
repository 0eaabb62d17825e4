"""Background warm-up: import ADK and genai, then run one scripted turn.

`from google.adk.runners import Runner` imports ~670 modules and the first
`run_async` lazily imports ~500 more. Doing both on a daemon thread right after
`initialize` has been answered moves that cost off the first real prompt.
The turn runs in its own event loop with a fake model and touches no files.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

_warmed = False
"""Set once the imports and the scripted turn are done (a warm server's forked child
has them from its zygote: it only prepares its own generator)."""

_SCRIPT = [
    {
        "method": "generateContentStream",
        "response": [
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": "ok"}]},
                        "finishReason": "STOP",
                    }
                ]
            }
        ],
    }
]


async def _one_turn() -> None:
    from runtime.config import Limits, RuntimeConfig
    from runtime.host import HeadlessHost
    from runtime.models.fake_generator import FakeContentGenerator
    from runtime.protocol import MessageSend, TextPart
    from runtime.session import SessionSpec, create_session

    home = Path(tempfile.gettempdir()) / "adk-acp-warmup"
    config = RuntimeConfig(
        workspace=home, model="gemini-2.5-pro", settings={}, limits=Limits(), home=home
    )
    session = await create_session(
        SessionSpec(
            config=config,
            auth=None,
            host=HeadlessHost(),
            generator=FakeContentGenerator(list(_SCRIPT)),
        )
    )
    try:
        await session.protocol.send(MessageSend(content=(TextPart(text="warm up"),)))
        await session.protocol.wait()
    finally:
        await session.close()


def _prepare_generator(
    env: dict[str, str],
    fake_responses: Path | None,
    record_responses: Path | None,
    model: str | None = None,
) -> None:
    """Build the process's ContentGenerator now (a genai client loads CA bundles: ~0.1 s)."""
    from runtime.config import resolve_auth
    from runtime.errors import AuthRequiredError, ConfigError
    from runtime.session import content_generator_for

    try:
        auth = resolve_auth(env, fake_responses=fake_responses)
        content_generator_for(auth, record_responses)
    except (AuthRequiredError, ConfigError) as exc:
        logger.debug("no generator prepared: %s", exc)
    _prepare_providers(env, model or env.get("GEMINI_MODEL") or "")


def _prepare_providers(env: dict[str, str], model: str) -> None:
    """Another provider named by the environment or the model: its client library, ADK's
    `OpenAILlm` and its client load now (~1 s of imports), not at the first prompt."""
    from runtime.models.provider_router import provider_generator
    from runtime.models.providers import OLLAMA, OPENAI, ProviderTable, split_model

    names = {n for n, var in ((OPENAI, "OPENAI_BASE_URL"), (OLLAMA, "OLLAMA_HOST")) if env.get(var)}
    split = split_model(model)
    if split is not None:
        names.add(split[0])
    table = ProviderTable.from_config(env, {})
    for name in names:
        provider = table.get(name)
        if provider is None or not provider.api_key:
            continue
        generator = provider_generator(provider)
        try:
            generator.prepare()
        except ImportError as exc:  # pragma: no cover - installed with adk-acp
            logger.debug("no openai integration: %s", exc)


def warm_up(
    env: dict[str, str] | None = None,
    fake_responses: Path | None = None,
    record_responses: Path | None = None,
    model: str | None = None,
) -> None:
    """Imports, one scripted turn (once per process), then the generator for the
    environment's credentials (and another provider's client library when `model` or
    the environment names one)."""
    global _warmed
    if not _warmed:
        import google.genai  # noqa: F401
        from google.adk.runners import Runner  # noqa: F401

        asyncio.run(_one_turn())
        _warmed = True
    if env is not None:
        _prepare_generator(env, fake_responses, record_responses, model)
    # ~1.5 million objects now live for good (modules, classes, schemas). Left to
    # the collector, each full collection walks them all: 100+ ms pauses in the
    # middle of a turn (measured). Freezing moves them out of its sight.
    gc.collect()
    gc.freeze()
    logger.debug("warm-up done")
