"""HookBridgePlugin (design: HookBridgePlugin): the model hooks on ADK's callbacks.

- BeforeModel (`before_model_callback`): the hook sees the request (`llm_request`:
  model, messages as role and text, config, toolConfig) and may change it
  (`hookSpecificOutput.llm_request`: model, messages, config), answer instead of the
  model (`hookSpecificOutput.llm_response`: text, or candidates with parts), block
  it (deny: the reason becomes the answer) or stop the turn (`continue: false`).
- BeforeToolSelection (same callback, after BeforeModel): `hookSpecificOutput.
  toolConfig {mode: AUTO|ANY|NONE, allowedFunctionNames}` restricts what the model is
  offered: declarations outside the list are removed, NONE removes them all.
- AfterModel (`after_model_callback`, for every streamed chunk, as Gemini CLI):
  `hookSpecificOutput.llm_response` replaces the chunk's text; a deny drops the
  chunk and ends the turn ("Agent execution blocked: <reason>").

With no model hook configured the plugin is not installed at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

from runtime.services.hooks import HookRunner, HookVerdict, specific

logger = logging.getLogger(__name__)

MODEL_EVENTS = ("BeforeModel", "AfterModel", "BeforeToolSelection")


def _text(content: types.Content | None) -> str:
    if content is None:
        return ""
    return "".join(p.text for p in content.parts or () if p.text and not p.thought)


def request_for_hook(request: LlmRequest) -> dict[str, Any]:
    """The request as hooks see it (Gemini CLI's hook LLMRequest shape)."""
    messages: list[dict[str, Any]] = []
    config = request.config
    system = config.system_instruction if config is not None else None
    if isinstance(system, str) and system:
        messages.append({"role": "system", "content": system})
    elif isinstance(system, types.Content):
        messages.append({"role": "system", "content": _text(system)})
    for content in request.contents:
        messages.append({"role": content.role or "user", "content": _text(content)})
    settings: dict[str, Any] = {}
    if config is not None:
        for key, attr in (
            ("temperature", "temperature"),
            ("topP", "top_p"),
            ("topK", "top_k"),
            ("maxOutputTokens", "max_output_tokens"),
        ):
            value = getattr(config, attr, None)
            if value is not None:
                settings[key] = value
    tools = [d.name for d in _declarations(request)]
    return {
        "model": request.model,
        "messages": messages,
        "config": settings,
        "toolConfig": {"mode": "AUTO", "allowedFunctionNames": tools},
    }


def _declarations(request: LlmRequest) -> list[types.FunctionDeclaration]:
    config = request.config
    out: list[types.FunctionDeclaration] = []
    for tool in (config.tools if config is not None else None) or ():
        if isinstance(tool, types.Tool):
            out.extend(tool.function_declarations or ())
    return out


def response_from_hook(raw: Any, *, partial: bool | None = None) -> LlmResponse | None:
    """A hook's `llm_response`: `{text}` or `{candidates: [{content: {parts}}]}`."""
    if not isinstance(raw, dict):
        return None
    text = raw.get("text")
    if not isinstance(text, str):
        parts: list[str] = []
        for candidate in raw.get("candidates") or ():
            content = candidate.get("content") if isinstance(candidate, dict) else None
            for part in (content or {}).get("parts") or ():
                if isinstance(part, str):
                    parts.append(part)
                elif isinstance(part, dict) and isinstance(part.get("text"), str):
                    parts.append(part["text"])
        if not parts:
            return None
        text = "".join(parts)
    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part(text=text)]), partial=partial
    )


def _apply_request(request: LlmRequest, change: Any, sent: dict[str, Any]) -> None:
    if not isinstance(change, dict):
        return
    if isinstance(change.get("model"), str) and change["model"]:
        request.model = change["model"]
    messages = change.get("messages")
    if isinstance(messages, list) and messages != sent["messages"]:
        contents = []
        for message in messages:
            if not isinstance(message, dict) or message.get("role") == "system":
                continue
            role = "model" if message.get("role") == "model" else "user"
            contents.append(
                types.Content(role=role, parts=[types.Part(text=str(message.get("content", "")))])
            )
        if contents:
            request.contents = contents
    settings = change.get("config")
    if isinstance(settings, dict) and request.config is not None:
        for key, attr in (
            ("temperature", "temperature"),
            ("topP", "top_p"),
            ("topK", "top_k"),
            ("maxOutputTokens", "max_output_tokens"),
        ):
            if key in settings:
                setattr(request.config, attr, settings[key])


def _apply_tool_config(request: LlmRequest, tool_config: Any) -> None:
    if not isinstance(tool_config, dict) or request.config is None:
        return
    mode = str(tool_config.get("mode") or "AUTO").upper()
    allowed = tool_config.get("allowedFunctionNames")
    names = {str(n) for n in allowed} if isinstance(allowed, list) else None
    kept: list[Any] = []
    for tool in request.config.tools or ():
        if not isinstance(tool, types.Tool) or tool.function_declarations is None:
            kept.append(tool)
            continue
        declarations = [
            d
            for d in tool.function_declarations
            if mode != "NONE" and (names is None or d.name in names)
        ]
        if declarations:
            kept.append(tool.model_copy(update={"function_declarations": declarations}))
    request.config.tools = kept or None
    if mode in ("ANY", "NONE", "AUTO"):
        calling = types.FunctionCallingConfig(
            mode=types.FunctionCallingConfigMode(mode),
            allowed_function_names=sorted(names) if mode == "ANY" and names else None,
        )
        request.config.tool_config = types.ToolConfig(function_calling_config=calling)
    if request.config.tools is None:
        request.config.tool_config = None
        request.tools_dict.clear()


class HookBridgePlugin(BasePlugin):
    """The model hooks of one session (see the module docstring)."""

    def __init__(
        self,
        hooks: HookRunner,
        *,
        notice: Callable[[str], None],
        stop: Callable[[str], None],
        block: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(name="gcli_hook_bridge")
        self._hooks = hooks
        self._notice = notice
        self._stop = stop
        self._block = block or stop
        self._last_request: dict[str, Any] | None = None

    def _tell(self, verdict: HookVerdict) -> bool:
        """Show the system message; True when the hooks asked to stop the turn."""
        if verdict.system_message:
            self._notice(verdict.system_message)
        if verdict.stop:
            self._stop(verdict.stop_reason or "A hook stopped the agent.")
        return verdict.stop

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        sent = request_for_hook(llm_request)
        if self._hooks.has("BeforeModel"):
            answers = await self._hooks.run("BeforeModel", {"llm_request": sent})
            verdict = HookVerdict.of(answers)
            if self._tell(verdict):
                return LlmResponse(content=types.Content(role="model", parts=[]))
            if verdict.blocked:
                reason = verdict.reason or "blocked by a hook"
                return response_from_hook({"text": f"Model request blocked by a hook: {reason}"})
            for answer in answers:
                replacement = response_from_hook(specific(answer, "llm_response"))
                if replacement is not None:
                    return replacement
                _apply_request(llm_request, specific(answer, "llm_request"), sent)
            sent = request_for_hook(llm_request)
        if self._hooks.has("BeforeToolSelection"):
            answers = await self._hooks.run("BeforeToolSelection", {"llm_request": sent})
            verdict = HookVerdict.of(answers)
            if self._tell(verdict):
                return LlmResponse(content=types.Content(role="model", parts=[]))
            for answer in answers:
                _apply_tool_config(llm_request, specific(answer, "toolConfig"))
        self._last_request = sent
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        if not self._hooks.has("AfterModel") or llm_response.content is None:
            return None
        payload = {
            "llm_request": self._last_request or {},
            "llm_response": {
                "text": _text(llm_response.content),
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [{"text": _text(llm_response.content)}],
                        },
                        "finishReason": getattr(llm_response.finish_reason, "name", None),
                    }
                ],
            },
        }
        answers = await self._hooks.run("AfterModel", payload)
        verdict = HookVerdict.of(answers)
        if self._tell(verdict) or verdict.blocked:
            if not verdict.stop:
                self._block(verdict.reason or "a hook blocked the model's answer")
            return llm_response.model_copy(
                update={"content": types.Content(role="model", parts=[])}
            )
        for answer in answers:
            replacement = response_from_hook(
                specific(answer, "llm_response"), partial=llm_response.partial
            )
            if replacement is not None and replacement.content is not None:
                parts = [
                    p for p in llm_response.content.parts or () if p.function_call or p.thought
                ]
                content = types.Content(
                    role="model", parts=[*parts, *(replacement.content.parts or [])]
                )
                return llm_response.model_copy(update={"content": content})
        return None
