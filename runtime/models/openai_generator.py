"""The ContentGenerator of an OpenAI-compatible endpoint, on ADK's own `OpenAILlm`.

ADK 2.15's `google.adk.integrations.openai.OpenAILlm` turns the `LlmRequest`
(contents, system instruction, function declarations) into a Chat Completions
request and its answer back into `LlmResponse`s. This generator gives it an
`AsyncOpenAI` client of the provider (base URL, key, no retries of its own: the
resilience loop retries, and tells the user) and maps what it yields onto the
chunks every other generator yields, so everything above (the stream check, the
aggregator, loop detection, hooks, recording) sees Gemini's shapes:

- a streamed text delta → a chunk with one text part;
- a reasoning delta (`reasoning_content` or `reasoning`, as vLLM, DeepSeek and
  Ollama send it; `OpenAILlm` reads only `content`) → a chunk with one thought part:
  the client's stream marks it as content with `THOUGHT_MARK` for `OpenAILlm` to pass
  through in order, and it is turned back here; thoughts are left out of the history
  sent back (`OpenAILlm` would send them as "Thought: …" text);
- the tool-call argument deltas are `OpenAILlm`'s to gather (by index: parallel calls);
  the calls arrive whole in the last chunk, as Gemini sends them, with the finish
  reason and the usage of the final usage chunk.

Tool declarations: each JSON schema is made acceptable to OpenAI's function-schema rules
(`openai_schema`: an object at the top, `items` on every array, no `$schema`), keeping
every property. A server that sends no usage gets the prompt's estimated tokens
(`runtime.models.tokens`, Gemini CLI's estimate) so compression still starts in time.

Errors: an HTTP error of the endpoint is raised as genai's `APIError` (a 429's
`retry-after` as a `RetryInfo` detail), as the content generator contract says, so the
retry and fallback loop classifies it like Gemini's; connection errors pass as they
are (network errors, retried).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from runtime.models.content_generator import ContentGenerator
from runtime.models.providers import Provider

if TYPE_CHECKING:
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

logger = logging.getLogger(__name__)

THOUGHT_MARK = "\ue000adk-acp-thought\ue000"
"""Prefix of a reasoning delta passed through `OpenAILlm` as content (private use chars)."""

DEFAULT_MAX_OUTPUT_TOKENS = 8192
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 600.0  # a local model may think long before its first token


class OpenAICompatGenerator(ContentGenerator):
    """Calls one OpenAI-compatible provider (OpenAI, vLLM, llama.cpp, LM Studio, Ollama…)."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self._client: Any = None

    def endpoint(self, model: str) -> str:
        return self.provider.base_url

    def prepare(self) -> None:
        """Build the client now (imports, TLS context): the warm-up calls it."""
        self._openai()
        from google.adk.integrations.openai import OpenAILlm  # noqa: F401

    def _openai(self) -> Any:
        if self._client is None:
            import httpx
            from openai import AsyncOpenAI

            timeout = httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
            self._client = AsyncOpenAI(
                base_url=self.provider.base_url,
                api_key=self.provider.api_key or "none",
                max_retries=0,  # ours retry, and tell the user
                timeout=timeout,
            )
            _mark_reasoning(self._client)
        return self._client

    def _llm(self, name: str) -> Any:
        from google.adk.integrations.openai import OpenAILlm

        return OpenAILlm(
            model=name,
            client=self._openai(),
            base_url=self.provider.base_url,
            max_tokens=DEFAULT_MAX_OUTPUT_TOKENS,
        )

    def _request(
        self, name: str, contents: list[types.Content], config: types.GenerateContentConfig | None
    ) -> Any:
        from google.adk.models.llm_request import LlmRequest
        from google.genai import types

        config = config or types.GenerateContentConfig()
        update: dict[str, Any] = {"tools": _openai_tools(config.tools)} if config.tools else {}
        if config.thinking_config is not None:
            update["thinking_config"] = None
        if update:
            config = config.model_copy(update=update)
        return LlmRequest(model=name, contents=_without_thoughts(contents), config=config)

    def _name(self, model: str) -> str:
        prefix = f"{self.provider.name}/"
        return model.removeprefix(prefix)

    async def generate_content(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> types.GenerateContentResponse:
        name = self._name(model)
        request = self._request(name, contents, config)
        final: LlmResponse | None = None
        try:
            async for response in self._llm(name).generate_content_async(request, stream=False):
                final = response
        except Exception as exc:
            converted = as_api_error(exc)
            if converted is exc:
                raise
            raise converted from exc
        assert final is not None
        parts = [
            _thought_or_text(p) for p in (final.content.parts if final.content else None) or []
        ]
        return _response(model, parts, final)

    async def generate_content_stream(
        self,
        *,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig | None = None,
    ) -> AsyncIterator[types.GenerateContentResponse]:
        name = self._name(model)
        request = self._request(name, contents, config)
        stream = self._llm(name).generate_content_async(request, stream=True)
        try:
            async for response in stream:
                if not response.partial and response.usage_metadata is None:
                    response.usage_metadata = _estimated_usage(request)
                chunk = _chunk_of(model, response)
                if chunk is not None:
                    yield chunk
        except Exception as exc:
            converted = as_api_error(exc)
            if converted is exc:
                raise
            raise converted from exc
        finally:
            await stream.aclose()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def _without_thoughts(contents: list[types.Content]) -> list[types.Content]:
    """The history without the model's thoughts: `OpenAILlm` would send them back as
    "Thought: …" text, and reasoning servers ask not to get their reasoning back."""
    out = []
    for content in contents:
        parts = content.parts or []
        if any(p.thought for p in parts):
            kept = [p for p in parts if not p.thought]
            if not kept:
                continue
            content = content.model_copy(update={"parts": kept})
        out.append(content)
    return out


def _thought_or_text(part: types.Part) -> types.Part:
    from google.genai import types

    if part.text and part.text.startswith(THOUGHT_MARK):
        return types.Part(text=part.text.removeprefix(THOUGHT_MARK), thought=True)
    return part


def _chunk_of(model: str, response: LlmResponse) -> types.GenerateContentResponse | None:
    """One of `OpenAILlm`'s responses as a Gemini chunk; None for what the chunks
    already carried (its consolidated text) or will carry (argument deltas)."""
    parts = (response.content.parts if response.content else None) or []
    if response.partial:
        texts = [_thought_or_text(p) for p in parts if p.text]
        return _response(model, texts, None) if texts else None
    calls = [p for p in parts if p.function_call is not None]  # the text was streamed
    return _response(model, calls, response)


def _response(
    model: str, parts: list[types.Part], final: LlmResponse | None
) -> types.GenerateContentResponse:
    from google.genai import types

    finish = final.finish_reason if final is not None else None
    if final is not None and finish is None and final.error_code:
        finish = types.FinishReason.OTHER
    candidate = types.Candidate(
        content=types.Content(role="model", parts=parts), finish_reason=finish, index=0
    )
    return types.GenerateContentResponse(
        candidates=[candidate],
        usage_metadata=final.usage_metadata if final is not None else None,
        model_version=model,
    )


def _estimated_usage(request: Any) -> types.GenerateContentResponseUsageMetadata:
    """A server that sent no usage: the prompt's tokens estimated as Gemini CLI does."""
    from google.genai import types

    from runtime.models.tokens import estimate_contents_tokens, estimate_text_tokens

    tokens = estimate_contents_tokens(request.contents)
    instruction = request.config.system_instruction
    if isinstance(instruction, str):
        tokens += int(estimate_text_tokens(instruction))
    elif isinstance(instruction, types.Content):
        tokens += estimate_contents_tokens([instruction])
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=tokens, total_token_count=tokens
    )


# ------------------------------------------------------------ tool schemas


def _openai_tools(tools: Any) -> Any:
    """The declarations with their JSON schemas made acceptable (copies; others as they are)."""
    from google.genai import types

    out: list[Any] = []
    for tool in tools:
        if not isinstance(tool, types.Tool) or not tool.function_declarations:
            out.append(tool)  # not a function tool: OpenAILlm skips it
            continue
        declarations = [
            d.model_copy(update={"parameters_json_schema": openai_schema(d.parameters_json_schema)})
            if d.parameters_json_schema is not None
            else d
            for d in tool.function_declarations
        ]
        out.append(tool.model_copy(update={"function_declarations": declarations}))
    return out


def openai_schema(schema: Any) -> dict[str, Any]:
    """A JSON schema as OpenAI's function parameters take it, no property lost: an object
    at the top with its `properties` (MCP's `inputSchema` may leave them out), `items` on
    every array (OpenAI refuses an array without), no `$schema`."""
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    fixed: dict[str, Any] = _fixed(schema)
    if fixed.get("type") is None and "properties" in fixed:
        fixed["type"] = "object"
    if fixed.get("type") == "object":
        fixed.setdefault("properties", {})
    return fixed


def _fixed(node: Any) -> Any:
    if isinstance(node, list):
        return [_fixed(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _fixed(value) for key, value in node.items() if key != "$schema"}
    kind = out.get("type")
    is_array = kind == "array" or (isinstance(kind, list) and "array" in kind)
    if is_array and "items" not in out:
        out["items"] = {}
    return out


# ------------------------------------------------------------ the client's stream


def _reasoning_of(delta: Any) -> str | None:
    extra = getattr(delta, "model_extra", None) or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _mark_reasoning(client: Any) -> None:
    """Streamed reasoning deltas become marked content (see the module docstring)."""
    completions = client.chat.completions
    original = completions.create

    async def create(**kwargs: Any) -> Any:
        result = await original(**kwargs)
        if not kwargs.get("stream"):
            return result
        return _marked(result)

    completions.create = create


async def _marked(stream: Any) -> AsyncIterator[Any]:
    async with stream:
        async for chunk in stream:
            choice = chunk.choices[0] if chunk.choices else None
            reasoning = _reasoning_of(choice.delta) if choice is not None else None
            if reasoning is None or choice is None:
                yield chunk
                continue
            thought = copy.deepcopy(chunk)
            thought.choices[0].delta.content = THOUGHT_MARK + reasoning
            thought.choices[0].delta.tool_calls = None
            thought.choices[0].finish_reason = None
            yield thought
            if choice.delta.content or choice.delta.tool_calls or choice.finish_reason:
                yield chunk


# ------------------------------------------------------------ errors

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def as_api_error(exc: Exception) -> Exception:
    """An OpenAI HTTP error as genai's `APIError` (Google's error body); others as they are."""
    try:
        from openai import APIStatusError
    except ImportError:  # pragma: no cover - installed with adk-acp
        return exc
    if not isinstance(exc, APIStatusError):
        return exc
    from google.genai import errors

    status = exc.status_code
    body = exc.body if isinstance(exc.body, dict) else {}
    inner = body.get("error", body) if isinstance(body, dict) else {}
    message = inner.get("message") if isinstance(inner, dict) else None
    error: dict[str, Any] = {
        "code": status,
        "message": str(message or exc.message),
        "status": _STATUS_NAMES.get(status, "UNKNOWN"),
    }
    retry_after = exc.response.headers.get("retry-after")
    if retry_after:
        try:
            seconds = float(retry_after)
        except ValueError:
            seconds = None
        if seconds is not None:
            retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo"}
            retry["retryDelay"] = f"{seconds:g}s"
            error["details"] = [retry]
    cls = errors.ClientError if status < 500 else errors.ServerError
    return cls(status, {"error": error})
