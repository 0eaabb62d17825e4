"""AdkAgentProtocol: the design's AgentProtocol on one ADK `Runner` per session.

Concurrency: one stream at a time per session. `send` starts the stream as a
task owned by this object and returns its id before `agent_start` is emitted.
Subscribers are called synchronously, in emission order, on the event loop;
the ACP layer turns each event into a notification right away, so order on the
wire is the order here. `abort()` sets ADK's abort signal (dangling tool calls
get a synthetic response, plugins' `after_run` runs); if the stream has not
wound down shortly after, the task is cancelled. Either way the stream ends
with `agent_end{aborted}` and the next `send` works.

Plugins stop a stream through `request_stop(...)`: a limit or the loop detector
names the end reason (and optionally an error to show), then the abort signal
ends the run.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from google.adk.agents._streaming_mode import StreamingMode
from google.adk.agents.run_config import RunConfig
from google.adk.runners import Runner
from google.genai import types

from runtime.adk.compat import quiet_telemetry
from runtime.adk.history_cache import HISTORY_CACHE, session_history

if TYPE_CHECKING:
    from runtime.services.hooks import HookRunner
from runtime.adk.agent_hooks import after_agent, before_agent
from runtime.adk.stream_control import StreamControl
from runtime.adk.stream_end import StopRequest as StopRequest
from runtime.adk.stream_end import StreamEnd
from runtime.adk.translator import AdkEventTranslator
from runtime.errors import StreamActiveError
from runtime.models.catalog import context_window as context_window_of
from runtime.protocol import (
    AgentEvent,
    AgentProtocol,
    AgentSend,
    AgentStartEvent,
    MessageEvent,
    MessageSend,
    NoticeEvent,
    SendResult,
    SessionUpdateEvent,
    Subscriber,
    TextPart,
    Unsubscribe,
)

logger = logging.getLogger(__name__)

EVENT_LOG_LIMIT = 4096  # events kept for `AgentProtocol.events`
AFTER_AGENT_RETRIES = 10  # AfterAgent denies that re-prompt the model within one prompt

ABORT_GRACE_S = 0.25


TITLE_LIMIT = 80


def title_from(parts: tuple[Any, ...]) -> str | None:
    text = " ".join(p.text for p in parts if isinstance(p, TextPart)).strip()
    if not text:
        return None
    first = text.splitlines()[0].strip()
    return first if len(first) <= TITLE_LIMIT else first[: TITLE_LIMIT - 1].rstrip() + "…"


class AdkAgentProtocol(AgentProtocol):
    """One session's engine: send / subscribe / abort / events over an ADK Runner.

    `current_model` tells the model the next stream will use (for the
    deterministic `session_update{model}`); `on_new_prompt` callbacks run
    before every stream (availability `reset_turn`, loop-detector reset,
    sequence-model reset...).
    """

    def __init__(
        self,
        *,
        runner: Runner,
        user_id: str,
        session_id: str,
        current_model: Callable[[], str],
        context_window: Callable[[str], int] = context_window_of,
        on_new_prompt: list[Callable[[], None]] | None = None,
        max_llm_calls: int = 500,
        control: StreamControl | None = None,
        hooks: HookRunner | None = None,
    ) -> None:
        self._control = control
        self._hooks = hooks
        # set by the session: forgets the conversation (an AfterAgent `clearContext`)
        self.on_clear_context: Callable[[], Awaitable[None]] | None = None
        self._pending_notices: list[str] = []
        self._context: list[str] = []
        self._runner = runner
        self._user_id = user_id
        self._session_id = session_id
        self._current_model = current_model
        self._context_window = context_window
        self._on_new_prompt = list(on_new_prompt or [])
        self._run_config = RunConfig(
            streaming_mode=StreamingMode.SSE,
            max_llm_calls=max_llm_calls,
            telemetry=quiet_telemetry(),
        )
        # The recent events (AgentProtocol.events), newest last: bounded, since a
        # session that streams for hours would otherwise keep every chunk it sent.
        self._events: deque[AgentEvent] = deque(maxlen=EVENT_LOG_LIMIT)
        self._subscribers: list[Subscriber] = []
        self._task: asyncio.Task[None] | None = None
        self._abort: asyncio.Event | None = None
        self._stop: StopRequest | None = None
        self._stream_id: str | None = None
        self._counter = 0
        self._titled = False
        self._announced_model: str | None = None
        self._history = session_history(runner, user_id, session_id)

    # ------------------------------------------------------------ AgentProtocol

    @property
    def events(self) -> tuple[AgentEvent, ...]:
        return tuple(self._events)

    def mark_titled(self) -> None:
        """The session has a title already (a loaded one): the next prompt keeps it."""
        self._titled = True

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def active(self) -> bool:
        return self._task is not None and not self._task.done()

    def subscribe(self, callback: Subscriber) -> Unsubscribe:
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    async def send(self, payload: AgentSend) -> SendResult:
        if not isinstance(payload, MessageSend):
            if payload.title:
                self._titled = True  # a title the user set is not replaced by the first prompt's
            stream_id = self._stream_id or uuid.uuid4().hex
            self._emit(
                SessionUpdateEvent(
                    id=self._next_id(stream_id),
                    stream_id=stream_id,
                    title=payload.title,
                    model=payload.model,
                    config=payload.config,
                )
            )
            return SendResult(stream_id=None)
        if self.active:
            raise StreamActiveError("a prompt is already running in this session")
        stream_id = uuid.uuid4().hex[:12]
        self._stream_id = stream_id
        self._counter = 0
        self._stop = None
        self._abort = asyncio.Event()
        self._task = asyncio.create_task(
            self._run_stream(stream_id, payload), name=f"stream-{stream_id}"
        )
        return SendResult(stream_id=stream_id)

    async def abort(self) -> None:
        task = self._task
        if task is None or task.done():
            return
        if self._stop is None:
            self._stop = StopRequest(reason="aborted")
        if self._abort is not None:
            self._abort.set()
        done, _ = await asyncio.wait({task}, timeout=ABORT_GRACE_S)
        if not done:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def wait(self) -> None:
        """Wait until the active stream (if any) has emitted `agent_end`."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    @property
    def abort_event(self) -> asyncio.Event | None:
        """The active stream's abort signal (None between streams)."""
        return self._abort if self.active else None

    def notice(self, text: str) -> None:
        """Show a message to the user in the current stream (a silent fallback, a retry)."""
        self.emit_external(lambda i, s: NoticeEvent(id=i, stream_id=s, text=text))

    def pending_notice(self, text: str) -> None:
        """A notice for the user that waits for the next stream (said before any prompt)."""
        self._pending_notices.append(text)

    def add_context(self, text: str) -> None:
        """Context for the model, sent with the next prompt (a SessionStart hook's)."""
        self._context.append(text)

    def user_message(self, parts: tuple[Any, ...]) -> None:
        """A message the user sent into the running stream (steering)."""
        self.emit_external(lambda i, s: MessageEvent(id=i, stream_id=s, role="user", content=parts))

    def config_changed(self, config: dict[str, Any]) -> None:
        """The engine changed the session's config itself (mode or model): tell subscribers."""
        self.emit_external(lambda i, s: SessionUpdateEvent(id=i, stream_id=s, config=config))

    def request_stop(self, stop: StopRequest) -> None:
        """End the active stream with `stop.reason` (used by limit and loop plugins)."""
        if self._stop is None or self._stop.reason == "aborted":
            self._stop = stop
        if self._abort is not None:
            self._abort.set()

    # ------------------------------------------------------------ internals

    def _next_id(self, stream_id: str) -> str:
        self._counter += 1
        return f"{stream_id}-{self._counter}"

    def _emit(self, event: AgentEvent) -> None:
        self._events.append(event)
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:
                logger.exception("a subscriber failed on %s", event.type)

    def emit_external(self, make: Callable[[str, str], AgentEvent]) -> None:
        """Emit an event built by a collaborator (the scheduler): `make(id, stream_id)`."""
        stream_id = self._stream_id or "idle"
        self._emit(make(self._next_id(stream_id), stream_id))

    def _begin(self, stream_id: str, payload: MessageSend, ids: Callable[[], str]) -> None:
        """The stream's opening events: start, the user's message, title, model, notices."""
        self._emit(AgentStartEvent(id=ids(), stream_id=stream_id))
        self._emit(
            MessageEvent(id=ids(), stream_id=stream_id, role="user", content=payload.content)
        )
        for callback in self._on_new_prompt:
            callback()
        if not self._titled:
            title = title_from(payload.content)
            if title:
                self._titled = True
                self._emit(SessionUpdateEvent(id=ids(), stream_id=stream_id, title=title))
        self._announce_model(stream_id)
        for text in self._pending_notices:
            self._emit(NoticeEvent(id=ids(), stream_id=stream_id, text=text))
        self._pending_notices.clear()

    async def _run_turns(self, payload: MessageSend, translator: AdkEventTranslator) -> None:
        """The prompt, then any follow-up a guard or an AfterAgent hook leaves (an
        AfterAgent deny is a new prompt, through BeforeAgent again, at most
        `AFTER_AGENT_RETRIES` times)."""
        prompt = "".join(p.text for p in payload.content if isinstance(p, TextPart))
        message: types.Content | None = await self._before_agent(payload.content)
        retries = 0
        while message is not None:
            answer: list[str] = []
            async for event in self._runner.run_async(
                user_id=self._user_id,
                session_id=self._session_id,
                new_message=message,
                run_config=self._run_config,
                abort_signal=self._abort,
            ):
                for out in translator.translate(event):
                    if isinstance(out, MessageEvent):
                        answer += [p.text for p in out.content if isinstance(p, TextPart)]
                    self._emit(out)
            message = self._follow_up()
            if message is None and retries < AFTER_AGENT_RETRIES:
                retry = await self._after_agent(prompt, "".join(answer), retries > 0)
                if retry is not None:
                    retries, prompt = retries + 1, retry
                    message = await self._before_agent((TextPart(text=retry),))

    async def _run_stream(self, stream_id: str, payload: MessageSend) -> None:
        def ids() -> str:
            return self._next_id(stream_id)

        if self._history is not None:  # this task's model calls reuse the built history
            HISTORY_CACHE.set(self._history)

        self._begin(stream_id, payload, ids)
        translator = AdkEventTranslator(stream_id, ids, self._context_window)
        end = StreamEnd(stream_id, ids)
        try:
            await self._run_turns(payload, translator)
            end.reason = translator.end_reason()
            if translator.finish_reason and end.reason != "completed":
                end.data = {"finishReason": translator.finish_reason}
        except asyncio.CancelledError:
            end.reason = "aborted"
        except Exception as exc:  # noqa: BLE001 - every failure becomes an error event and agent_end
            told, self._stop = end.failed(exc, self._stop)
            if told is not None:
                self._emit(told)
        finally:
            for event in end.closing(self._stop):
                self._emit(event)

    async def _before_agent(self, parts: tuple[Any, ...]) -> types.Content | None:
        """The user's message, after BeforeAgent hooks (None: a hook blocked it)."""
        context = list(self._context)
        self._context.clear()
        content, stop = await before_agent(
            self._hooks, parts, context, self.notice, self._keep_in_history
        )
        if stop is not None:
            self._stop = stop
        return content

    async def _keep_in_history(self, content: types.Content) -> None:
        """The user's message appended to the session without a model call (recorded, and
        sent with the next prompt's history)."""
        from google.adk.agents.invocation_context import new_invocation_context_id
        from google.adk.events import Event

        service = self._runner.session_service
        session = await service.get_session(
            app_name=self._runner.app_name, user_id=self._user_id, session_id=self._session_id
        )
        if session is None:
            logger.warning("session %s is gone; the stopped prompt is not kept", self._session_id)
            return
        event = Event(invocation_id=new_invocation_context_id(), author="user", content=content)
        await service.append_event(session, event)

    async def _after_agent(self, prompt: str, response: str, retrying: bool) -> str | None:
        """AfterAgent hooks (`stop_hook_active` on a retried turn); returns the prompt
        a deny sends to the model (see `agent_hooks.after_agent`)."""
        if self._hooks is None or not self._hooks.has("AfterAgent") or self._stop is not None:
            return None
        if self._abort is not None and self._abort.is_set():
            return None
        payload = {"prompt": prompt, "prompt_response": response, "stop_hook_active": retrying}
        retry, stop = await after_agent(self._hooks, payload, self.notice, self.on_clear_context)
        if stop is not None:
            self._stop = stop
        return retry

    def _follow_up(self) -> types.Content | None:
        """A user turn a guard left to send within this prompt (a loop nudge), if any."""
        text = self._control.take_follow_up() if self._control is not None else None
        if (
            text is None
            or self._stop is not None
            or (self._abort is not None and self._abort.is_set())
        ):
            return None
        return types.Content(role="user", parts=[types.Part(text=text)])

    def _announce_model(self, stream_id: str) -> None:
        model = self._current_model()
        self._emit(
            SessionUpdateEvent(id=self._next_id(stream_id), stream_id=stream_id, model=model)
        )
        self._announced_model = model

    def announce_model_change(self, model: str) -> None:
        """The model changed inside a stream (routing or fallback): say so once."""
        if model == self._announced_model:
            return
        self._announced_model = model
        stream_id = self._stream_id or "idle"
        self._emit(
            SessionUpdateEvent(id=self._next_id(stream_id), stream_id=stream_id, model=model)
        )
