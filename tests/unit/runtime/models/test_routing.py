"""Model routing: strategies, their order, the classifier, the sequence model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from google.genai import types

from runtime.models.availability import ModelAvailabilityService
from runtime.models.catalog import (
    GEMINI_FLASH,
    GEMINI_FLASH_LITE,
    GEMINI_PRO,
    PREVIEW_FLASH,
    PREVIEW_PRO,
)
from runtime.models.classifier import ClassifierStrategy, recent_turns
from runtime.models.content_generator import ContentGenerator
from runtime.models.routing import (
    ApprovalModeStrategy,
    DefaultStrategy,
    FallbackStrategy,
    ModelRouterService,
    OverrideStrategy,
    RoutingContext,
    RoutingDecision,
    RoutingStrategy,
    SequenceModel,
    apply_model_selection,
    route_with_sequence,
)

Request = tuple[str, list[types.Content], types.GenerateContentConfig | None]


class FakeGenerator(ContentGenerator):
    """Answers `generate_content` with a scripted text, or raises; records requests."""

    def __init__(self, answer: str | BaseException) -> None:
        self.answer = answer
        self.requests: list[Request] = []

    async def generate_content(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> types.GenerateContentResponse:
        self.requests.append((model, contents, config))
        if isinstance(self.answer, BaseException):
            raise self.answer
        part = types.Part(text=self.answer)
        return types.GenerateContentResponse(
            candidates=[types.Candidate(content=types.Content(role="model", parts=[part]))]
        )

    def generate_content_stream(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> AsyncIterator[types.GenerateContentResponse]:
        raise AssertionError("the classifier does not stream")


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def model_text(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


def tool_call(name: str) -> types.Content:
    return types.Content(
        role="model", parts=[types.Part(function_call=types.FunctionCall(name=name, args={}))]
    )


def tool_result(name: str) -> types.Content:
    return types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(name=name, response={"output": "x"})
            )
        ],
    )


def ctx(
    model: str, *, mode: str = "default", contents: list[types.Content] | None = None
) -> RoutingContext:
    return RoutingContext(
        contents=contents or [user("fix the bug")], requested_model=model, approval_mode=mode
    )


def choice(model_choice: str, reasoning: str = "because") -> str:
    return json.dumps({"reasoning": reasoning, "model_choice": model_choice})


@pytest.fixture
def availability() -> ModelAvailabilityService:
    return ModelAvailabilityService(clock=lambda: 0.0)


def router(
    availability: ModelAvailabilityService, answer: str | BaseException = "{}"
) -> tuple[ModelRouterService, FakeGenerator]:
    generator = FakeGenerator(answer)
    return ModelRouterService.standard(
        availability=availability, classifier=ClassifierStrategy(generator)
    ), generator


# ------------------------------------------------------------------ strategies


async def test_standard_order(availability: ModelAvailabilityService) -> None:
    service, _ = router(availability)
    assert [s.name for s in service.strategies] == [
        "fallback",
        "override",
        "approval_mode",
        "classifier",
        "default",
    ]


async def test_override_uses_explicit_model(availability: ModelAvailabilityService) -> None:
    service, generator = router(availability, choice("pro"))
    decision = await service.route(ctx(GEMINI_FLASH))
    assert (decision.model, decision.source) == (GEMINI_FLASH, "override")
    assert generator.requests == []


async def test_override_resolves_aliases(availability: ModelAvailabilityService) -> None:
    assert (await OverrideStrategy().route(ctx("flash-lite"))) == RoutingDecision(
        GEMINI_FLASH_LITE, "Explicit model gemini-2.5-flash-lite", "override"
    )
    assert await OverrideStrategy().route(ctx("auto")) is None


async def test_fallback_wins_when_requested_model_unavailable(
    availability: ModelAvailabilityService,
) -> None:
    availability.mark_terminal(GEMINI_PRO, "quota")
    service, _ = router(availability)
    decision = await service.route(ctx(GEMINI_PRO))
    assert (decision.model, decision.source) == (GEMINI_FLASH, "fallback")
    assert decision.reason == (
        "Model gemini-2.5-pro is unavailable (quota). Using fallback: gemini-2.5-flash"
    )


async def test_fallback_for_auto_checks_the_family_pro(
    availability: ModelAvailabilityService,
) -> None:
    availability.mark_terminal(PREVIEW_PRO, "capacity")
    decision = await FallbackStrategy(availability).route(ctx("auto-gemini-3"))
    assert decision is not None and decision.model == PREVIEW_FLASH


async def test_fallback_with_nothing_available_passes(
    availability: ModelAvailabilityService,
) -> None:
    availability.mark_terminal(GEMINI_PRO, "quota")
    availability.mark_terminal(GEMINI_FLASH, "quota")
    assert await FallbackStrategy(availability).route(ctx(GEMINI_PRO)) is None


async def test_approval_mode_plan_routes_auto_to_pro(
    availability: ModelAvailabilityService,
) -> None:
    service, generator = router(availability, choice("flash"))
    decision = await service.route(ctx("auto-gemini-3", mode="plan"))
    assert (decision.model, decision.source) == (PREVIEW_PRO, "approval_mode")
    assert generator.requests == []
    assert await ApprovalModeStrategy().route(ctx("auto", mode="default")) is None


async def test_plan_mode_does_not_override_an_explicit_model(
    availability: ModelAvailabilityService,
) -> None:
    service, _ = router(availability)
    decision = await service.route(ctx(GEMINI_FLASH, mode="plan"))
    assert (decision.model, decision.source) == (GEMINI_FLASH, "override")


@pytest.mark.parametrize(
    ("requested", "answer", "expected"),
    [
        ("auto", "flash", GEMINI_FLASH),
        ("auto", "pro", GEMINI_PRO),
        ("auto-gemini-2.5", "flash", GEMINI_FLASH),
        ("auto-gemini-3", "flash", PREVIEW_FLASH),
        ("auto-gemini-3", "pro", PREVIEW_PRO),
    ],
)
async def test_classifier_maps_choice_to_family(
    availability: ModelAvailabilityService, requested: str, answer: str, expected: str
) -> None:
    service, generator = router(availability, choice(answer, "simple edit"))
    decision = await service.route(ctx(requested))
    assert decision == RoutingDecision(expected, "simple edit", "classifier")
    model, _contents, config = generator.requests[0]
    assert model == GEMINI_FLASH_LITE
    assert config is not None and config.response_mime_type == "application/json"


@pytest.mark.parametrize(
    "answer", ["not json", json.dumps({"model_choice": "ultra"}), "[1]", RuntimeError("429")]
)
async def test_classifier_failure_falls_through_to_default(
    availability: ModelAvailabilityService, answer: str | BaseException
) -> None:
    service, _ = router(availability, answer)
    decision = await service.route(ctx("auto"))
    assert (decision.model, decision.source) == (GEMINI_PRO, "default")


async def test_classifier_sees_only_recent_conversation_turns() -> None:
    generator = FakeGenerator(choice("pro"))
    history = [user(f"old {i}") for i in range(5)] + [
        model_text("let me look"),
        tool_call("read_file"),
        tool_result("read_file"),
        user("now refactor it"),
    ]
    await ClassifierStrategy(generator).route(ctx("auto", contents=history))
    _model, contents, _config = generator.requests[0]
    texts = [p.text for c in contents for p in c.parts or ()]
    assert texts == ["old 3", "old 4", "let me look", "now refactor it"]


def test_recent_turns_drops_tool_only_contents() -> None:
    assert recent_turns([tool_call("x"), tool_result("x")], 4) == []


async def test_classifier_skips_when_aborted() -> None:
    generator = FakeGenerator(choice("pro"))
    event = asyncio.Event()
    event.set()
    context = RoutingContext(contents=[user("x")], requested_model="auto", abort_event=event)
    assert await ClassifierStrategy(generator).route(context) is None
    assert generator.requests == []


async def test_default_strategy() -> None:
    assert (await DefaultStrategy().route(ctx("auto"))) == RoutingDecision(
        GEMINI_PRO, "Default model gemini-2.5-pro", "default"
    )


# -------------------------------------------------------------- the composite


class Boom(RoutingStrategy):
    name = "boom"

    async def route(self, context: RoutingContext) -> RoutingDecision | None:
        raise RuntimeError("strategy bug")


class Never(RoutingStrategy):
    name = "never"

    async def route(self, context: RoutingContext) -> RoutingDecision | None:
        return None


async def test_throwing_strategy_is_skipped() -> None:
    service = ModelRouterService([Boom(), DefaultStrategy()])
    decision = await service.route(ctx(GEMINI_FLASH))
    assert decision.source == "default"


async def test_no_decision_falls_back_to_configured_model() -> None:
    service = ModelRouterService([Boom(), Never()])
    decision = await service.route(ctx("auto-gemini-3"))
    assert (decision.model, decision.source) == (PREVIEW_PRO, "router_failure")


async def test_first_decision_wins() -> None:
    service = ModelRouterService([OverrideStrategy(), DefaultStrategy()])
    assert (await service.route(ctx(GEMINI_FLASH))).source == "override"


# ------------------------------------------------------------ sequence model


async def test_sequence_model_is_sticky_until_new_prompt(
    availability: ModelAvailabilityService,
) -> None:
    service, generator = router(availability, choice("flash"))
    sequence = SequenceModel()
    first, announce = await route_with_sequence(service, sequence, ctx("auto"))
    assert (first.model, announce) == (GEMINI_FLASH, True)
    generator.answer = choice("pro")
    second, announce = await route_with_sequence(service, sequence, ctx("auto"))
    assert (second.model, second.source, announce) == (GEMINI_FLASH, "sequence", False)
    assert len(generator.requests) == 1
    sequence.on_new_prompt()
    third, announce = await route_with_sequence(service, sequence, ctx("auto"))
    assert (third.model, announce) == (GEMINI_PRO, True)


def test_sequence_model_resets() -> None:
    sequence = SequenceModel()
    assert sequence.set(GEMINI_PRO) is True
    assert sequence.set(GEMINI_FLASH) is False
    sequence.on_model_change()
    assert sequence.get() is None


@pytest.mark.parametrize(
    ("old", "new", "resets"),
    [
        ("default", "plan", True),
        ("plan", "default", True),
        ("default", "yolo", True),
        ("yolo", "autoEdit", True),
        ("default", "autoEdit", False),
        ("autoEdit", "default", False),
        ("plan", "plan", False),
    ],
)
def test_sequence_model_mode_change(old: str, new: str, resets: bool) -> None:
    sequence = SequenceModel()
    sequence.set(GEMINI_PRO)
    assert sequence.on_mode_change(old, new) is resets
    assert (sequence.get() is None) is resets


# --------------------------------------------------------- model selection


def test_apply_model_selection_available(availability: ModelAvailabilityService) -> None:
    selection = apply_model_selection(GEMINI_FLASH, availability=availability)
    assert (selection.model, selection.max_attempts) == (GEMINI_FLASH, 10)


def test_apply_model_selection_skips_unavailable(availability: ModelAvailabilityService) -> None:
    availability.mark_terminal(GEMINI_PRO, "quota")
    selection = apply_model_selection(GEMINI_PRO, availability=availability)
    assert selection.model == GEMINI_FLASH


def test_apply_model_selection_consumes_sticky(availability: ModelAvailabilityService) -> None:
    availability.mark_retry_once_per_turn(GEMINI_PRO)
    selection = apply_model_selection(GEMINI_PRO, availability=availability, auto_routing=True)
    assert (selection.model, selection.max_attempts) == (GEMINI_PRO, 1)
    again = apply_model_selection(GEMINI_PRO, availability=availability, auto_routing=True)
    assert again.model == GEMINI_FLASH
    availability.reset_turn()
    assert apply_model_selection(GEMINI_PRO, availability=availability).model == GEMINI_PRO


def test_apply_model_selection_nothing_available(availability: ModelAvailabilityService) -> None:
    availability.mark_terminal("my-model", "quota")
    assert apply_model_selection("my-model", availability=availability).model == "my-model"
