"""The model catalogue: every model id we know, its display name and its context
window (Gemini CLI's `tokenLimit`), in one list.

Read by the editor's model choice (`acp_server/config_options.py`: the `offered`
models, in order), by the policy chains (`policy_catalog.py`: the ids), by usage
updates (`used / size`) and by compression's threshold (`context_window`). A model
id is matched to its window by prefix, longest first (`gemini-2.5-flash-lite-001`
is a `gemini-2.5-flash-lite`); unknown models get the default.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_CONTEXT_WINDOW = 1_048_576

AUTO = "auto"
GEMINI_PRO = "gemini-2.5-pro"
GEMINI_FLASH = "gemini-2.5-flash"
GEMINI_FLASH_LITE = "gemini-2.5-flash-lite"
PREVIEW_PRO = "gemini-3-pro-preview"
PREVIEW_FLASH = "gemini-3-flash-preview"


@dataclass(frozen=True)
class ModelInfo:
    """One model (or model family, matched by prefix). `offered`: listed in the
    editor's model choice."""

    id: str
    display_name: str
    context_window: int = DEFAULT_CONTEXT_WINDOW
    offered: bool = False


MODELS: tuple[ModelInfo, ...] = (
    ModelInfo(AUTO, "Auto (routes between Pro and Flash)", offered=True),
    ModelInfo(GEMINI_PRO, "Gemini 2.5 Pro", offered=True),
    ModelInfo(GEMINI_FLASH, "Gemini 2.5 Flash", offered=True),
    ModelInfo(GEMINI_FLASH_LITE, "Gemini 2.5 Flash Lite", offered=True),
    ModelInfo(PREVIEW_PRO, "Gemini 3 Pro (preview)", offered=True),
    ModelInfo(PREVIEW_FLASH, "Gemini 3 Flash (preview)", offered=True),
    ModelInfo("gemini-2.0-flash-preview-image-generation", "Gemini 2.0 Flash Image", 32_000),
    ModelInfo("gemini-1.5-pro", "Gemini 1.5 Pro", 2_097_152),
    ModelInfo("gemini-1.5-flash", "Gemini 1.5 Flash"),
    ModelInfo("gemini-2.0-flash", "Gemini 2.0 Flash"),
    ModelInfo("gemini-3-pro", "Gemini 3 Pro"),
    ModelInfo("gemini-3-flash", "Gemini 3 Flash"),
)

OFFERED: tuple[ModelInfo, ...] = tuple(m for m in MODELS if m.offered)

_BY_PREFIX = sorted((m for m in MODELS if m.id != AUTO), key=lambda m: -len(m.id))


def context_window(model: str) -> int:
    """The input token limit of `model` (a family prefix match; the default otherwise);
    another provider's model (`PROVIDER/NAME`): its provider's declared window."""
    from runtime.models.providers import provider_window, split_model

    split = split_model(model)
    if split is not None:
        return provider_window(split[0])
    name = model.removeprefix("models/")
    for info in _BY_PREFIX:
        if name.startswith(info.id):
            return info.context_window
    return DEFAULT_CONTEXT_WINDOW
