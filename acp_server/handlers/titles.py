"""`session/set_title` (ACP unstable): the client names a session.

Advertised as `sessionCapabilities.title: {}`. The title goes through the engine
(`UpdateSend(title=...)`), so it is recorded, listed by `session/list`, kept across
load and resume, told to the client as a `session_info_update`, and never replaced by
the first prompt's automatic title.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from acp_server.errors import invalid_params
from runtime.protocol import UpdateSend

if TYPE_CHECKING:
    from acp_server.state import ServerState

MAX_TITLE_CHARS = 200
"""A longer title is cut (with an ellipsis): lists and tabs show one line."""


class SetTitleRequest(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    session_id: str = Field(alias="sessionId")
    title: str


def clean_title(raw: str) -> str:
    """One line of at most `MAX_TITLE_CHARS`; a blank title is refused (-32602)."""
    title = " ".join(raw.split())
    if not title:
        raise invalid_params("title must not be empty")
    if len(title) > MAX_TITLE_CHARS:
        title = title[: MAX_TITLE_CHARS - 1].rstrip() + "…"
    return title


async def set_title(state: ServerState, params: SetTitleRequest) -> dict[str, str]:
    session = state.session(params.session_id)
    title = clean_title(params.title)
    await session.agent.send(UpdateSend(title=title))
    return {"title": title}
