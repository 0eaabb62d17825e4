"""Model providers beside Gemini (runtime/models/providers.py, provider_router.py,
openai_generator.py; issue 34.2): which model ids are whose, the providers from the
environment and the settings, their context windows, the fallback chain naming them,
and an OpenAI error read as Gemini's."""

from __future__ import annotations

import httpx
import pytest
from google.genai import errors
from openai import APIStatusError

from runtime.models.catalog import context_window
from runtime.models.openai_generator import as_api_error
from runtime.models.policy_catalog import resolve_policy_chain
from runtime.models.provider_router import ProviderRouter
from runtime.models.providers import ProviderTable, is_provider_model, split_model
from runtime.models.quota_errors import RetryableQuotaError, classify_error


def test_model_ids_of_other_providers_and_of_gemini() -> None:
    assert split_model("openai/gpt-4.1") == ("openai", "gpt-4.1")
    assert split_model("ollama/qwen2.5-coder:7b") == ("ollama", "qwen2.5-coder:7b")
    assert split_model("vllm/org/model") == ("vllm", "org/model")
    for gemini in ("gemini-2.5-pro", "auto", "models/gemini-2.5-flash", "projects/p/x", "pro"):
        assert not is_provider_model(gemini)


def test_the_built_in_providers_read_the_environment() -> None:
    table = ProviderTable.from_config(
        {"OPENAI_BASE_URL": "http://gw/v1", "OPENAI_API_KEY": "k", "OLLAMA_HOST": "box:11434"},
        {},
    )
    openai = table.get("openai")
    ollama = table.get("ollama")
    assert openai is not None and (openai.base_url, openai.api_key) == ("http://gw/v1", "k")
    assert ollama is not None and ollama.base_url == "http://box:11434/v1"
    defaults = ProviderTable.from_config({}, {})
    assert defaults.get("openai").base_url == "https://api.openai.com/v1"  # type: ignore[union-attr]
    assert defaults.get("ollama").base_url == "http://127.0.0.1:11434/v1"  # type: ignore[union-attr]


def test_declared_providers_their_key_models_and_window() -> None:
    settings = {
        "modelProviders": {
            "vllm": {
                "baseUrl": "http://gpu:8000/v1",
                "apiKeyEnv": "VLLM_KEY",
                "contextWindow": 32768,
                "models": ["qwen", 3],
            },
            "ollama": {"contextWindow": 65536, "models": ["llama3"]},
            "bad/name": {"baseUrl": "x"},
        }
    }
    table = ProviderTable.from_config({"VLLM_KEY": "secret"}, settings)
    vllm = table.get("vllm")
    assert vllm is not None and vllm.api_key == "secret" and vllm.context_window == 32768
    assert table.get("bad/name") is None
    assert table.declared_models() == ["ollama/llama3", "vllm/qwen"]
    assert table.for_model("vllm/qwen") == (vllm, "qwen")
    router = ProviderRouter(None, table)
    assert router.context_window("vllm/qwen") == 32768
    assert router.context_window("ollama/llama3") == 65536
    assert router.context_window("gemini-2.5-pro") is None  # the catalogue's
    assert context_window("gemini-2.5-pro") == 1_048_576
    assert context_window("ollama/x") == 32768 and context_window("vllm/x") == 128_000


def test_a_declared_provider_whose_key_is_missing_is_refused_with_what_to_set() -> None:
    table = ProviderTable.from_config(
        {}, {"modelProviders": {"gw": {"baseUrl": "http://gw", "apiKeyEnv": "GW_KEY"}}}
    )
    router = ProviderRouter(None, table)
    with pytest.raises(errors.ClientError, match="set GW_KEY"):
        router.route("gw/m")
    with pytest.raises(errors.ClientError, match="no Google credentials"):
        router.route("gemini-2.5-pro")
    with pytest.raises(errors.ClientError, match="No model provider named 'nope'"):
        router.route("nope/m")
    assert router.endpoint("gw/m") == "http://gw"


def test_the_fallback_chain_of_the_settings_crosses_providers() -> None:
    chain = resolve_policy_chain("gemini-2.5-pro", fallback_models=["ollama/qwen", "openai/gpt"])
    assert [p.model for p in chain] == ["gemini-2.5-pro", "ollama/qwen", "openai/gpt"]
    assert [p.is_last_resort for p in chain] == [False, False, True]
    assert [p.model for p in resolve_policy_chain("gemini-2.5-pro")] == [
        "gemini-2.5-pro",
        "gemini-2.5-flash",
    ]


def _status_error(
    status: int, body: object, headers: dict[str, str] | None = None
) -> APIStatusError:
    request = httpx.Request("POST", "http://x/v1/chat/completions")
    response = httpx.Response(status, headers=headers or {}, request=request)
    return APIStatusError("failed", response=response, body=body)


def test_an_openai_429_with_retry_after_is_a_rate_limit_with_that_delay() -> None:
    error = as_api_error(
        _status_error(429, {"error": {"message": "Rate limit reached"}}, {"retry-after": "7"})
    )
    assert isinstance(error, errors.ClientError) and error.code == 429
    classified = classify_error(error, model="openai/m")
    assert isinstance(classified, RetryableQuotaError)
    assert classified.retry_delay_seconds == 7


def test_an_openai_400_keeps_the_servers_message() -> None:
    body = {
        "error": {
            "message": "maximum context length is 8192 tokens",
            "code": "context_length_exceeded",
        }
    }
    error = as_api_error(_status_error(400, body))
    assert isinstance(error, errors.ClientError)
    assert error.code == 400 and error.message == "maximum context length is 8192 tokens"
    network = httpx.ConnectError("refused")
    assert as_api_error(network) is network


def test_tool_schemas_are_made_acceptable_to_openai_without_losing_a_property() -> None:
    from runtime.models.openai_generator import openai_schema

    mcp = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "paths": {"type": "array"},
            "options": {"type": "object", "properties": {"tags": {"type": ["array", "null"]}}},
            "name": {"type": "string"},
        },
        "required": ["paths"],
    }
    fixed = openai_schema(mcp)
    assert "$schema" not in fixed
    assert fixed["properties"]["paths"] == {"type": "array", "items": {}}
    assert fixed["properties"]["options"]["properties"]["tags"]["items"] == {}
    assert set(fixed["properties"]) == {"paths", "options", "name"}
    assert fixed["required"] == ["paths"]
    assert openai_schema({"type": "object"}) == {"type": "object", "properties": {}}
    assert openai_schema(None) == {"type": "object", "properties": {}}


def test_another_providers_model_needs_no_google_credentials() -> None:
    from runtime.config import resolve_auth
    from runtime.errors import AuthRequiredError

    assert resolve_auth({}, model="ollama/qwen").kind == "none"
    assert resolve_auth({"GEMINI_API_KEY": "k"}, model="ollama/qwen").kind == "api_key"
    with pytest.raises(AuthRequiredError):
        resolve_auth({}, model="gemini-2.5-pro")
    with pytest.raises(AuthRequiredError):
        resolve_auth({})


def test_a_declared_key_variable_is_kept_out_of_child_processes() -> None:
    from runtime.services.secrets import child_environment

    base = {"GW_SECRETISH": "abc", "PATH": "/bin"}
    assert "GW_SECRETISH" in child_environment(base=base)
    ProviderTable.from_config(
        {}, {"modelProviders": {"gw": {"baseUrl": "http://gw", "apiKeyEnv": "GW_SECRETISH"}}}
    )
    assert child_environment(base=base) == {"PATH": "/bin"}
