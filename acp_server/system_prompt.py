"""The client-supplied system prompt (ACP `systemPrompt` on `session/new`, `load`,
`resume` and `fork`; advertised as `sessionCapabilities.systemPrompt` with the
`override` mode in `capabilities.py`).

The pinned `acp` schema (1.19) has no such field, so the session requests are taken
by the subclasses here, which keep it. `append` adds the text after the agent's own
instructions, `override` replaces them (`runtime.prompt.ClientPrompt`); the session
record keeps it, so a load or resume without one restores it. A mode we do not
support, an empty content list or a block that is not text is refused with -32602
before anything is opened, as the schema asks.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from acp_server import schema
from acp_server.errors import invalid_params
from runtime.prompt import ClientPrompt

SUPPORTED_MODES = ("append", "override")


class SystemPromptParam(BaseModel):
    """`SystemPrompt`: how to combine (`mode`) and what (`content`, text blocks)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    mode: str
    content: list[dict[str, Any]]
    field_meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    def client_prompt(self) -> ClientPrompt:
        """The runtime's form, or the -32602 error the request is answered with."""
        if self.mode not in SUPPORTED_MODES:
            raise invalid_params(
                f"systemPrompt mode {self.mode!r} is not supported (append, override)"
            )
        if not self.content:
            raise invalid_params("systemPrompt content must not be empty")
        texts = []
        for block in self.content:
            if block.get("type") != "text" or not isinstance(block.get("text"), str):
                raise invalid_params("systemPrompt content takes text blocks only")
            texts.append(block["text"])
        text = "\n\n".join(t for t in texts if t.strip())
        if not text:
            raise invalid_params("systemPrompt content has no text")
        return ClientPrompt(mode="override" if self.mode == "override" else "append", text=text)


class _WithSystemPrompt(BaseModel):
    system_prompt: SystemPromptParam | None = Field(default=None, alias="systemPrompt")

    def client_prompt(self) -> ClientPrompt | None:
        return self.system_prompt.client_prompt() if self.system_prompt is not None else None


class NewSessionParams(_WithSystemPrompt, schema.NewSessionRequest):
    """`session/new` params with `systemPrompt`."""


class LoadSessionParams(_WithSystemPrompt, schema.LoadSessionRequest):
    """`session/load` params with `systemPrompt`."""


class ResumeSessionParams(_WithSystemPrompt, schema.ResumeSessionRequest):
    """`session/resume` params with `systemPrompt`."""


class ForkSessionParams(_WithSystemPrompt, schema.ForkSessionRequest):
    """`session/fork` params with `systemPrompt`."""


def client_prompt_of(params: Any) -> ClientPrompt | None:
    """The request's system prompt, if its params class keeps one."""
    return params.client_prompt() if isinstance(params, _WithSystemPrompt) else None
