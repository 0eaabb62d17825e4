"""Model providers beside Gemini (issue 34.2): OpenAI-compatible endpoints and Ollama.

A model id `PROVIDER/NAME` names a provider's model: `openai/NAME` goes to
`OPENAI_BASE_URL` (default OpenAI's API) with `OPENAI_API_KEY`; `ollama/NAME` to
Ollama's OpenAI-compatible `/v1` at `OLLAMA_HOST` (default `http://127.0.0.1:11434`);
any other provider is declared in the settings (`modelProviders`, workspace over user):

    "modelProviders": {
      "vllm": {"baseUrl": "http://gpu:8000/v1", "apiKeyEnv": "VLLM_API_KEY",
               "contextWindow": 32768, "models": ["qwen2.5-coder-32b"]}
    }

(`openai` and `ollama` may be declared too, to set their models or context window).
Every other model id (`gemini-…`, `auto`, `models/…`) is Gemini's, unchanged.
Stdlib only: read by the early `session/new` path and the model choice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OPENAI = "openai"
OLLAMA = "ollama"
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
OLLAMA_DEFAULT_HOST = "http://127.0.0.1:11434"
OPENAI_CONTEXT_WINDOW = 128_000
OLLAMA_CONTEXT_WINDOW = 32_768
"""Ollama's own default context is smaller unless `num_ctx` is raised: declare the real
one (`contextWindow`) so that compression starts in time."""

SETTINGS_KEY = "modelProviders"


def provider_window(name: str) -> int:
    """A provider's window when its declaration is not at hand (the session's generator
    knows the declared one: `ContentGenerator.context_window`)."""
    return OLLAMA_CONTEXT_WINDOW if name == OLLAMA else OPENAI_CONTEXT_WINDOW


_GEMINI_PREFIXES = ("models", "tunedModels", "projects", "publishers")


@dataclass(frozen=True)
class Provider:
    """One OpenAI-compatible endpoint. `api_key` resolved from `api_key_env` (or fixed)."""

    name: str
    base_url: str
    api_key: str | None
    api_key_env: str | None
    context_window: int
    models: tuple[str, ...] = ()
    ollama: bool = False

    def model_id(self, name: str) -> str:
        return f"{self.name}/{name}"


def split_model(model: str) -> tuple[str, str] | None:
    """(provider, name) for `PROVIDER/NAME`; None for a Gemini model id."""
    provider, sep, name = model.partition("/")
    if not sep or not provider or not name or provider in _GEMINI_PREFIXES:
        return None
    return provider, name


def is_provider_model(model: str) -> bool:
    return split_model(model) is not None


def _ollama_url(host: str) -> str:
    host = host.strip().rstrip("/")
    if "://" not in host:
        host = f"http://{host}"
    return f"{host}/v1"


def _positive_int(value: Any, default: int) -> int:
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default
    )


@dataclass(frozen=True)
class ProviderTable:
    """The providers one session can reach, by name (hashable: a generator cache key)."""

    providers: tuple[Provider, ...]

    def get(self, name: str) -> Provider | None:
        return next((p for p in self.providers if p.name == name), None)

    def for_model(self, model: str) -> tuple[Provider, str] | None:
        split = split_model(model)
        if split is None:
            return None
        provider = self.get(split[0])
        return (provider, split[1]) if provider is not None else None

    def context_window(self, model: str) -> int | None:
        found = self.for_model(model)
        return found[0].context_window if found is not None else None

    def declared_models(self) -> list[str]:
        return [p.model_id(m) for p in self.providers for m in p.models]

    @classmethod
    def from_config(cls, env: Mapping[str, str], settings: Mapping[str, Any]) -> ProviderTable:
        """The built-in `openai` and `ollama` plus the settings' `modelProviders`."""
        declared = settings.get(SETTINGS_KEY)
        declared = declared if isinstance(declared, Mapping) else {}
        found: dict[str, Provider] = {
            OPENAI: Provider(
                OPENAI,
                env.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL,
                env.get("OPENAI_API_KEY"),
                "OPENAI_API_KEY",
                OPENAI_CONTEXT_WINDOW,
            ),
            OLLAMA: Provider(
                OLLAMA,
                _ollama_url(env.get("OLLAMA_HOST") or OLLAMA_DEFAULT_HOST),
                "ollama",  # Ollama takes any key; the client needs one
                None,
                OLLAMA_CONTEXT_WINDOW,
                ollama=True,
            ),
        }
        for name, entry in declared.items():
            if (
                not isinstance(name, str)
                or not name
                or "/" in name
                or not isinstance(entry, Mapping)
            ):
                continue
            base = found.get(name)
            url = entry.get("baseUrl")
            key_env = entry.get("apiKeyEnv")
            key_env = key_env if isinstance(key_env, str) and key_env else None
            if key_env is not None:
                from runtime.services.secrets import remember_credential_name

                remember_credential_name(key_env)  # never passed on to commands and hooks
            models = entry.get("models")
            found[name] = Provider(
                name=name,
                base_url=url if isinstance(url, str) and url else (base.base_url if base else ""),
                api_key=(env.get(key_env) if key_env else None)
                or (base.api_key if base else None)
                or ("none" if key_env is None else None),
                api_key_env=key_env or (base.api_key_env if base else None),
                context_window=_positive_int(
                    entry.get("contextWindow"),
                    base.context_window if base else OPENAI_CONTEXT_WINDOW,
                ),
                models=tuple(m for m in models if isinstance(m, str) and m)
                if isinstance(models, list)
                else (),
                ollama=base.ollama if base else False,
            )
        return cls(tuple(found.values()))
