"""One ACP session: owns its prompt task and forwards the engine's events.

`prompt` sends the user's message to the engine and waits for that stream's
`agent_end`; every event on the way becomes a `session/update` at once, so all
updates of a turn are written before its response. `cancel` aborts the engine
stream; the prompt then returns stopReason `cancelled` — always, whether the
model was streaming, a tool or a permission prompt was pending, or the model
had not answered yet. A turn that fails for good (say, out of quota) answers
with a JSON-RPC error whose message says what happened; the session stays
usable.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from acp_server.errors import BUSY, INTERNAL_ERROR, MODEL_ERROR, AcpError
from acp_server.updates import UpdateMapper, stop_reason
from runtime.protocol import AgentEndEvent, AgentEvent, ErrorEvent, MessageSend

if TYPE_CHECKING:
    from acp_server.transport import JsonRpcEngine
    from runtime.host import Host
    from runtime.session import AgentSession

logger = logging.getLogger(__name__)


class AcpSession:
    """An ACP session around one runtime `AgentSession`."""

    def __init__(
        self, engine: JsonRpcEngine, runtime: AgentSession, host: Host, config_options: Any
    ) -> None:
        self.engine = engine
        self.runtime = runtime
        self.host = host
        self.id = runtime.id
        self._config_options = config_options
        self._mapper = UpdateMapper(lambda: config_options.options(runtime), lambda: runtime.mode)
        self._ends: dict[str, asyncio.Future[AgentEndEvent]] = {}
        self._last_fatal: ErrorEvent | None = None
        self._cancel_requested = False
        self._prompting = False
        self._unsubscribe = runtime.protocol.subscribe(self._on_event)

    # ------------------------------------------------------------ events → updates

    def _on_event(self, event: AgentEvent) -> None:
        if isinstance(event, ErrorEvent) and event.fatal:
            self._last_fatal = event
        for update in self._mapper.map(event):
            self.engine.notify("session/update", {"sessionId": self.id, "update": update})
        if isinstance(event, AgentEndEvent):
            future = self._ends.pop(event.stream_id, None)
            if future is not None and not future.done():
                future.set_result(event)

    def send_update(self, update: Any) -> None:
        self.engine.notify("session/update", {"sessionId": self.id, "update": update})

    # ------------------------------------------------------------ prompt / cancel

    async def prompt(self, make_parts: Callable[[], Awaitable[tuple[Any, ...]]]) -> dict[str, Any]:
        """Run one turn. `make_parts` converts the prompt (it may read @-mentioned files
        through the editor); it runs inside the turn, so a cancel that arrives meanwhile
        still ends the turn as `cancelled`."""
        if self._prompting:
            raise AcpError(BUSY, "A prompt is already running in this session; cancel it first.")
        self._prompting = True
        self._cancel_requested = False
        self._last_fatal = None
        try:
            parts = await make_parts()
            if self._cancel_requested:
                return {"stopReason": "cancelled"}
            end = await self._run_turn(parts)
        finally:
            self._prompting = False
        if self._cancel_requested or end.reason == "aborted":
            return {"stopReason": "cancelled"}
        if end.reason == "failed":
            raise self._failure(end)
        return {"stopReason": stop_reason(end.reason)}

    async def _run_turn(self, parts: tuple[Any, ...]) -> AgentEndEvent:
        loop = asyncio.get_running_loop()
        result = await self.runtime.protocol.send(MessageSend(content=parts))
        stream_id = result.stream_id
        assert stream_id is not None
        future: asyncio.Future[AgentEndEvent] = loop.create_future()
        self._ends[stream_id] = future
        if self._cancel_requested:
            await self.runtime.protocol.abort()
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # $/cancel_request on the prompt itself: stop the engine too.
            self._cancel_requested = True
            await self.runtime.protocol.abort()
            raise

    def _failure(self, end: AgentEndEvent) -> AcpError:
        fatal = self._last_fatal
        if fatal is None:
            return AcpError(
                INTERNAL_ERROR,
                f"The turn failed ({(end.data or {}).get('finishReason', 'unknown reason')}).",
            )
        data: dict[str, Any] = {"status": fatal.status, **(fatal.meta or {})}
        code = (
            MODEL_ERROR
            if fatal.status in ("RESOURCE_EXHAUSTED", "NOT_FOUND", "UNAVAILABLE")
            else INTERNAL_ERROR
        )
        if fatal.meta and fatal.meta.get("httpStatus"):
            code = MODEL_ERROR
        return AcpError(code, fatal.message, data)

    async def cancel(self) -> None:
        if not self._prompting:
            return
        self._cancel_requested = True
        await self.runtime.protocol.abort()

    async def close(self) -> None:
        self._unsubscribe()
        await self.runtime.close()
