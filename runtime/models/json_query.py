"""Ask a model one question and get a JSON object back (the routing classifier, the loop judge)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from google.genai import types

from runtime.models.content_generator import ContentGenerator

logger = logging.getLogger(__name__)


async def ask_json(
    generator: ContentGenerator,
    *,
    model: str,
    contents: list[types.Content],
    system_instruction: str,
    schema: Any,
    what: str,
) -> dict[str, Any] | None:
    """The model's JSON answer (temperature 0, `schema` enforced), or None when the
    call fails or the answer is not a JSON object; failures are logged naming `what`."""
    config = types.GenerateContentConfig(
        system_instruction=system_instruction,
        response_mime_type="application/json",
        response_schema=schema,
        temperature=0.0,
    )
    try:
        response = await generator.generate_content(model=model, contents=contents, config=config)
        answer = json.loads(response.text or "")
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - an optional judgement: logged, and the caller goes on without it
        logger.warning("%s failed", what, exc_info=True)
        return None
    return answer if isinstance(answer, dict) else None
