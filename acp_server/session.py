"""One ACP session: owns its prompt task and forwards its agent session's events.

`prompt` sends the user's message to the agent session and waits for that stream's
`agent_end`; every event on the way becomes a `session/update` at once, so all
updates of a turn are written before its response. `cancel` aborts the agent's
stream; the prompt then returns stopReason `cancelled` — always, whether the
model was streaming, a tool or a permission prompt was pending, or the model
had not answered yet. A turn that fails for good (say, out of quota) answers
with a JSON-RPC error whose message says what happened; the session stays
usable. `close` (also on `session/delete`) first answers every prompt still
waiting with `cancelled`, so no `session/prompt` is left unanswered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from acp_server import schema
from acp_server.errors import BUSY, INTERNAL_ERROR, AcpError, turn_failed
from acp_server.turn_usage import TurnUsage
from acp_server.updates import (
    ClientUpdates,
    UpdateMapper,
    config_update,
    mode_update,
    stop_reason,
)
from runtime.protocol import (
    AgentEndEvent,
    AgentEvent,
    CommandsChangedEvent,
    ErrorEvent,
    MessageSend,
    ToolUpdateEvent,
    UsageEvent,
)

if TYPE_CHECKING:
    from acp_server.transport import ClientLink
    from runtime.session import AgentSession

logger = logging.getLogger(__name__)

CLOSE_WAIT_S = 10.0
"""How long `close` waits for a stopped turn's prompt to be answered."""


async def _ready(parts: tuple[Any, ...]) -> tuple[Any, ...]:
    return parts


class AcpSession:
    """An ACP session around one runtime `AgentSession` (`agent`)."""

    def __init__(
        self,
        conn: ClientLink,
        agent: AgentSession,
        config_options: Any,
        client: ClientUpdates | None = None,
    ) -> None:
        self.conn = conn
        self.agent = agent
        self.id = agent.id
        self.client = client or ClientUpdates()
        """The optional updates the client takes (also for a replay)."""
        self._config_options = config_options
        self._mapper = UpdateMapper(
            lambda: config_options.options(agent), lambda: agent.mode, self.client
        )
        self.plans = self._mapper.plans
        """The plans this client was shown (`PlanOperations`), live and replayed."""
        self._children: dict[str, UpdateMapper] = {}
        """A mapper per subagent session shown to a client that follows subagents."""
        self._ends: dict[str, asyncio.Future[AgentEndEvent]] = {}
        self._last_fatal: ErrorEvent | None = None
        self._cancel_requested = False
        self._prompting = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._last_stop: str = "end_turn"
        self._prompt_tasks: set[asyncio.Task[Any]] = set()
        self._usage = TurnUsage()
        self._waiting_calls: set[str] = set()
        self._unsubscribe = agent.protocol.subscribe(self._on_event)

    @property
    def running(self) -> bool:
        """A turn runs, or a `session/prompt` waits for its answer (ACP v2's `running`)."""
        return self._prompting or bool(self._prompt_tasks)

    @property
    def asking(self) -> bool:
        """A tool call waits for the user's permission (the waiting signal)."""
        return bool(self._waiting_calls)

    @property
    def last_stop(self) -> str:
        """The stop reason of the last turn that ended here."""
        return self._last_stop

    # ------------------------------------------------------------ events → updates

    def _on_event(self, event: AgentEvent) -> None:
        if event.thread_id is not None:  # a subagent's, shown as its own session or not
            self._subagent_event(event.thread_id, event)
            return
        if isinstance(event, ErrorEvent) and event.fatal:
            self._last_fatal = event
        if isinstance(event, UsageEvent):
            self._usage.add(event)
        if isinstance(event, ToolUpdateEvent) and event.waiting_on_user is not None:
            waiting = self._waiting_calls
            (waiting.add if event.waiting_on_user else waiting.discard)(event.request_id)
        if isinstance(event, AgentEndEvent):
            self._waiting_calls.clear()
        if isinstance(event, CommandsChangedEvent):
            self.announce_commands()
            return
        for update in self._mapper.map(event):
            self.conn.notify("session/update", {"sessionId": self.id, "update": update})
        if isinstance(event, AgentEndEvent):
            future = self._ends.pop(event.stream_id, None)
            if future is not None and not future.done():
                future.set_result(event)

    def _subagent_event(self, child_id: str, event: AgentEvent) -> None:
        if not self.client.subagents:
            return
        mapper = self._children.get(child_id)
        if mapper is None:
            mapper = self._children[child_id] = UpdateMapper(list, lambda: "", self.client)
        for update in mapper.map(event):
            self.conn.notify("session/update", {"sessionId": child_id, "update": update})

    def send_update(self, update: Any) -> None:
        self.conn.notify("session/update", {"sessionId": self.id, "update": update})

    # ------------------------------------------------------------ prompt / cancel

    def announce_commands(self) -> None:
        """`available_commands_update`: the slash commands (after new, load, resume)."""
        from runtime.commands import available

        commands = [
            {
                "name": c.name,
                "description": c.description,
                **({"input": {"hint": c.hint}} if c.hint else {}),
            }
            for c in available(self.agent)
        ]
        self.send_update(
            schema.AvailableCommandsUpdate.model_validate(
                {"sessionUpdate": "available_commands_update", "availableCommands": commands}
            )
        )

    async def command(self, name: str, args: str) -> dict[str, Any]:
        """Run a slash command (never a model call) and show its answer."""
        from runtime.commands import run_command

        outcome = await run_command(self.agent, name, args)
        if outcome.prompt is not None:  # an MCP prompt: its text is the user's message
            from runtime.protocol import TextPart

            parts = (TextPart(text=outcome.prompt),)
            return await self.prompt(lambda: _ready(parts))
        self.send_update(
            schema.AgentMessageChunk(
                session_update="agent_message_chunk",
                content=schema.TextContentBlock(type="text", text=outcome.text),
            )
        )
        if "mode" in outcome.changed:
            self.send_update(mode_update(self.agent.mode))
        if outcome.changed:
            self.send_update(config_update(self._config_options.options(self.agent)))
        return {"stopReason": "end_turn"}

    async def prompt(self, make_parts: Callable[[], Awaitable[tuple[Any, ...]]]) -> dict[str, Any]:
        """Run one turn. `make_parts` converts the prompt (it may read @-mentioned files
        through the editor); it runs inside the turn, so a cancel that arrives meanwhile
        still ends the turn as `cancelled`. A prompt that arrives while a turn runs
        steers it (see `steer`)."""
        if self._prompting:
            return await self.steer(make_parts)
        with self._answered_before_close():
            return await self._prompt(make_parts)

    async def _prompt(self, make_parts: Callable[[], Awaitable[tuple[Any, ...]]]) -> dict[str, Any]:
        self._prompting = True
        self._idle.clear()
        self._cancel_requested = False
        self._last_fatal = None
        self._usage = TurnUsage()
        try:
            parts = await make_parts()
            if self._cancel_requested:
                return {"stopReason": "cancelled"}
            end = await self._run_turn(parts)
        finally:
            self._prompting = False
            self._idle.set()
        if self._cancel_requested or end.reason == "aborted":
            self._last_stop = "cancelled"
        elif end.reason == "failed" and self._last_fatal is not None:
            self._last_stop = "end_turn"
            raise self._failure(end)
        else:
            self._last_stop = stop_reason(end.reason)
        usage = self._usage.answer()
        return {"stopReason": self._last_stop, **({"usage": usage} if usage else {})}

    async def steer(self, make_parts: Callable[[], Awaitable[tuple[Any, ...]]]) -> dict[str, Any]:
        """A prompt sent while a turn runs (InjectionService): queued and given to the
        model before the running turn's next model call; answered when that turn ends,
        with its stop reason. If the turn made no further model call, the message runs
        as a turn of its own: nothing typed is lost. A cancel answers it `cancelled`."""
        parts = await make_parts()
        token = self.agent.steer(parts)
        if token is None:
            if self._prompting:
                raise AcpError(BUSY, "A prompt is already running in this session.")
            return await self.prompt(lambda: _ready(parts))
        await self._idle.wait()
        assert self.agent.injection is not None
        leftover = self.agent.injection.withdraw(token)
        if self._last_stop == "cancelled":
            return {"stopReason": "cancelled"}
        if leftover is not None:
            if self._prompting:  # another queued message got there first: queue again
                return await self.steer(lambda: _ready(leftover))
            return await self.prompt(lambda: _ready(leftover))
        return {"stopReason": self._last_stop}

    async def _run_turn(self, parts: tuple[Any, ...]) -> AgentEndEvent:
        loop = asyncio.get_running_loop()
        result = await self.agent.send(MessageSend(content=parts))
        stream_id = result.stream_id
        assert stream_id is not None
        future: asyncio.Future[AgentEndEvent] = loop.create_future()
        self._ends[stream_id] = future
        if self._cancel_requested:
            await self.agent.protocol.abort()
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # $/cancel_request on the prompt itself: stop the agent too.
            self._cancel_requested = True
            await self.agent.protocol.abort()
            raise

    def _failure(self, end: AgentEndEvent) -> AcpError:
        fatal = self._last_fatal
        if fatal is None:
            return AcpError(
                INTERNAL_ERROR,
                f"The turn failed ({(end.data or {}).get('finishReason', 'unknown reason')}).",
            )
        return turn_failed(fatal)

    async def cancel(self) -> None:
        if not self._prompting:
            return
        self._cancel_requested = True
        await self.agent.protocol.abort()

    @contextlib.contextmanager
    def _answered_before_close(self) -> Iterator[None]:
        """Marks the request task waiting for a prompt's answer; `close` waits for it."""
        task = asyncio.current_task()
        if task is None or task in self._prompt_tasks:  # a steer running as a prompt
            yield
            return
        self._prompt_tasks.add(task)
        try:
            yield
        finally:
            self._prompt_tasks.discard(task)

    async def close(self) -> None:
        """Stop the running turn and wait until every waiting `session/prompt` has its
        answer (`cancelled`), then close the agent session: the close is answered after them."""
        await self.stop_turns()
        self._unsubscribe()
        await self.agent.close()

    async def stop_turns(self) -> None:
        """Stop the running turn and wait until every waiting `session/prompt` has its
        answer (`cancelled`); bounded by `CLOSE_WAIT_S`, then the prompts are cancelled."""
        waiting = set(self._prompt_tasks)
        if waiting:
            self._cancel_requested = True
            await self.agent.protocol.abort()
            _done, late = await asyncio.wait(waiting, timeout=CLOSE_WAIT_S)
            if late:
                logger.warning("%d prompt(s) still running at close; cancelling them", len(late))
                for task in late:
                    task.cancel()
                await asyncio.wait(late, timeout=CLOSE_WAIT_S)
