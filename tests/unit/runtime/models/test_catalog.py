"""runtime/models/catalog.py: the one model catalogue."""

from __future__ import annotations

from acp_server.config_options import MODEL_CHOICES
from runtime.models import policy_catalog
from runtime.models.catalog import DEFAULT_CONTEXT_WINDOW, MODELS, OFFERED, context_window


def test_the_editor_offers_the_catalogue_in_order() -> None:
    assert MODEL_CHOICES == tuple((m.id, m.display_name) for m in OFFERED)
    assert [m.id for m in OFFERED] == [
        "auto",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "gemini-2.5-flash-lite",
        "gemini-3-pro-preview",
        "gemini-3-flash-preview",
    ]


def test_the_policy_chains_name_catalogue_models() -> None:
    known = {m.id for m in MODELS}
    for chain in (policy_catalog.STABLE_CHAIN, policy_catalog.PREVIEW_CHAIN):
        assert {p.model for p in chain} <= known


def test_context_windows_by_longest_prefix() -> None:
    assert context_window("gemini-1.5-pro-002") == 2_097_152
    assert context_window("models/gemini-2.0-flash-preview-image-generation") == 32_000
    assert context_window("gemini-2.0-flash-001") == 1_048_576
    assert context_window("gemini-3-pro-preview") == 1_048_576
    assert context_window("auto") == DEFAULT_CONTEXT_WINDOW
    assert context_window("something-else") == DEFAULT_CONTEXT_WINDOW
