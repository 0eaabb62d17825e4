"""AgentSession: one session's engine over its typed parts (design: AgentSession).

Made by the session factory (`runtime.session.factory.create_session`) from a
`SessionSpec` and the `SessionParts` its build steps return. It exposes the
AgentProtocol (send, abort, subscribe) by delegation, keeps the session's state
(mode, model choice), rewinds and compresses the history for the slash commands,
runs the SessionStart/SessionEnd/PreCompress hooks, and closes every part.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from runtime.errors import StreamActiveError
from runtime.protocol import (
    AgentEvent,
    AgentSend,
    CompactionEvent,
    MessageSend,
    SendResult,
    Subscriber,
    Unsubscribe,
    UpdateSend,
)
from runtime.services.checkpoints import CheckpointError, checkpoints_for
from runtime.services.record import CompressionMessage, is_typed_prompt
from runtime.services.recording import ChatRecordingService, Message
from runtime.session.handover import Handover
from runtime.session.parts import SessionParts
from runtime.session.paths import outputs_dir
from runtime.session.spec import APP_NAME, USER_ID, SessionSpec
from runtime.tools.policy.modes import ApprovalMode, parse_mode

if TYPE_CHECKING:
    from runtime.services.compression import CompressionResult
    from runtime.tools.policy.engine import PolicyEngine

logger = logging.getLogger(__name__)


def compression_notice(result: CompressionResult) -> str:
    return (
        f"Compressed the conversation: about {result.tokens_before:,} → "
        f"{result.tokens_after:,} tokens (older turns summarized; the full record is kept)."
    )


class AgentSession:
    """One session's engine and everything it owns; the AgentProtocol by delegation."""

    def __init__(self, spec: SessionSpec, parts: SessionParts) -> None:
        self.spec = spec
        self.id = spec.session_id
        self.config = spec.config
        self.host = spec.host
        self.roots = (spec.config.workspace, *spec.additional_roots)
        self.mode: ApprovalMode = spec.config.approval_mode
        self.parts = parts
        self.generator = parts.generator
        self.model_state = parts.model_state
        self.agent_model = parts.agent_model
        self.stream_control = parts.control
        self.scheduler = parts.scheduler.scheduler
        self.scheduler_tools = parts.scheduler.tools
        self.policy = parts.scheduler.policy
        self.mcp = parts.mcp
        self.agent = parts.agent
        self.session_service = parts.session_service
        self.runner = parts.runner
        self.protocol = parts.protocol
        self.recorder = parts.recorder
        self.prompt = parts.prompt
        self.injection = parts.injection
        self.hooks = parts.hooks
        self.handover = Handover(self)
        """The lease let go when another process asks, taken back before the next use."""
        recording = spec.recording
        self.checkpoints = checkpoints_for(
            spec.config.settings,
            recording.path.parent if recording is not None else None,
            spec.config.workspace,
            spec.config.env,
        )

    # ------------------------------------------------------------ AgentProtocol

    async def send(self, payload: AgentSend) -> SendResult:
        """A message starts a stream; an update changes the session (model, mode,
        title) and is confirmed by a `session_update` event. The session is in use
        until the stream runs (`Handover.in_use`: not handed over meanwhile)."""
        async with self.handover.in_use():  # the lease taken back if another process had it
            return await self._send(payload)

    async def _send(self, payload: AgentSend) -> SendResult:
        if isinstance(payload, MessageSend) and self.recorder is not None:
            if not await self.recorder.recording.still_driving():
                raise StreamActiveError(
                    f"session {self.id} was taken over by another adk-acp process while this "
                    "one was not renewing its lease; close it here and load it again"
                )
        if isinstance(payload, MessageSend) and self.mcp is not None:
            from runtime.tools.mcp.toolset import mention_resources

            content = await mention_resources(self.mcp.servers, payload.content)
            payload = payload.model_copy(update={"content": content})
        if isinstance(payload, MessageSend) and not self.protocol.active:
            await self.maybe_compress()
        if isinstance(payload, UpdateSend):
            if payload.model:
                self.choose_model(payload.model)
            mode = (payload.config or {}).get("mode")
            if mode is not None:
                self.set_mode(parse_mode(mode))
        return await self.protocol.send(payload)

    def subscribe(self, callback: Subscriber) -> Unsubscribe:
        return self.protocol.subscribe(callback)

    def relay(self, make: Callable[[str, str], AgentEvent]) -> None:
        """Emit a subagent's event on this session's stream (`make(id, stream_id)`)."""
        self.protocol.emit_external(make)

    async def abort(self) -> None:
        await self.protocol.abort()

    @property
    def events(self) -> tuple[AgentEvent, ...]:
        return self.protocol.events

    # ------------------------------------------------------------ session state

    async def start(self) -> None:
        live = await self.session_service.create_session(
            app_name=APP_NAME, user_id=USER_ID, session_id=self.id
        )
        if self.spec.history:
            await self.restore(list(self.spec.history), live)
        if self.recorder is not None:
            self.session_service.on_append = self.recorder.on_adk_event
        for text in startup_notices(self.spec, self.policy):
            self.protocol.pending_notice(text)
        await self.session_start(self.spec.start_source)
        if self.mcp is not None:
            self.mcp.servers.start()

    async def restore(self, messages: list[Message], live: Any = None) -> None:
        """Start the model's history over from recorded messages (load, resume, rewind,
        compression): the live ADK session gets one event per recorded turn."""
        from runtime.adk.history import events_from_record

        if live is None:
            live = await self.session_service.get_session(
                app_name=APP_NAME, user_id=USER_ID, session_id=self.id
            )
        events = events_from_record(messages, agent_name=self.agent.name)
        await self.session_service.replace_events(live, events)

    @property
    def model_choice(self) -> str:
        return self.model_state.choice

    def choose_model(self, model: str) -> None:
        """The user picked a model (or `auto`) for the rest of the session."""
        self.model_state.choose(model)
        self.agent_model.model = self.model_state.default_model
        if self.recorder is not None and not self.handover.handed_over:
            self.recorder.recording.set_metadata(modelChoice=model)

    def set_mode(self, mode: ApprovalMode) -> None:
        old, self.mode = self.mode, mode
        self.model_state.mode_changed(old, mode)
        if self.recorder is not None and not self.handover.handed_over:  # else at `drive`
            self.recorder.recording.set_metadata(mode=mode)

    def steer(self, parts: tuple[Any, ...]) -> int | None:
        """Queue a message for the running turn (InjectionService); None: no turn runs
        or this session cannot steer, send it as a prompt instead."""
        if self.injection is None or not self.protocol.active:
            return None
        return self.injection.add(parts)

    # ------------------------------------------------------------ history (slash commands)

    def _recording(self) -> ChatRecordingService:
        if self.recorder is None:
            from runtime.errors import RuntimeAgentError

            raise RuntimeAgentError("this session is not recorded")
        return self.recorder.recording

    def _idle(self) -> None:
        if self.protocol.active:
            raise StreamActiveError("a prompt is running; wait for it or cancel it first")

    async def rewind(self, turns: int = 1) -> list[Message]:
        """Drop the last `turns` exchanges (each from a typed prompt on): the record
        (ChatRecordingService.rewindTo) and the model's history. Returns what went."""
        self._idle()
        return await self._drop_turns(turns)

    async def _drop_turns(self, turns: int) -> list[Message]:
        recording = self._recording()
        prompts = [m for m in recording.messages if is_typed_prompt(m)]
        if not prompts or turns < 1:
            return []
        removed = recording.rewind_to(prompts[-min(turns, len(prompts))]["id"])
        await self.restore(recording.messages)
        return removed

    async def rewind_to(self, message_id: str) -> list[Message]:
        """Drop the recorded message `message_id` and everything after it (a checkpoint's
        conversation position), in the record and the model's history."""
        self._idle()
        recording = self._recording()
        removed = recording.rewind_to(message_id)
        if removed:
            await self.restore(recording.messages)
        return removed

    async def checkpoint(self, tool_name: str, args: dict[str, Any]) -> None:
        """An allowed edit is about to run: with checkpointing on, the workspace is
        snapshotted with the turn's prompt as the conversation position. A failure is
        told to the user; the edit goes on (as in Gemini CLI)."""
        if self.checkpoints is None:
            return
        messages = self.recorder.recording.messages if self.recorder is not None else []
        prompt = next((m for m in reversed(messages) if is_typed_prompt(m)), None)
        position = str(prompt["id"]) if prompt is not None else None
        try:
            name = await self.checkpoints.save(tool_name, args, self.id, position)
        except (CheckpointError, OSError) as exc:
            logger.warning("no checkpoint before %s: %s", tool_name, exc)
            self.protocol.notice(f"No checkpoint was made before {tool_name}: {exc}")
            return
        logger.info("checkpoint %s saved", name)

    async def clear_context(self) -> None:
        """Forget the conversation inside a running prompt (an AfterAgent hook's
        `clearContext`): the model's history and the record start over, between two
        model turns; the editor keeps what it showed."""
        if self.recorder is not None:
            await self._drop_turns(10**9)
            return
        live = await self.session_service.get_session(
            app_name=APP_NAME, user_id=USER_ID, session_id=self.id
        )
        assert live is not None, "the live ADK session exists while the session is open"
        await self.session_service.replace_events(live, [])

    def last_prompt_tokens(self) -> int:
        # Counts from before a compression summary no longer apply.
        return self._recording().last_input_tokens()

    async def compress(self, trigger: str = "manual") -> CompressionResult:
        """Summarize the older history (ChatCompressionService); raises
        CompressionError, history untouched, when it cannot."""
        from runtime.adk.history import history_messages, message_contents
        from runtime.services.compression import ChatCompressionService

        self._idle()
        recording = self._recording()
        from runtime.services.compression import NOTHING_TO_COMPRESS, CompressionError, split_point
        from runtime.services.hooks import fire

        history = history_messages(recording.messages)
        if split_point(history) is None:  # PreCompress fires only when there is something
            raise CompressionError(NOTHING_TO_COMPRESS)
        pre = await fire(self.hooks, "PreCompress", {"trigger": trigger}, trigger)
        if pre.system_message:
            self.protocol.notice(pre.system_message)
        contents = [message_contents(m, agent_name=self.agent.name) for m in history]
        service = ChatCompressionService(self.generator)
        result = await service.compress(
            history, contents, self.model_state.default_model, self.last_prompt_tokens()
        )
        message: CompressionMessage = {
            "type": "compression",
            "summary": result.summary,
            "keptFrom": result.kept_from,
            "tokensBefore": result.tokens_before,
            "tokensAfter": result.tokens_after,
        }
        recording.record_message(message)
        await self.restore(recording.messages)
        self.protocol.emit_external(
            lambda i, s: CompactionEvent(
                id=i,
                stream_id=s,
                compaction_id=message["id"],
                summary=result.summary,
                tokens_before=result.tokens_before,
                tokens_after=result.tokens_after,
            )
        )
        return result

    async def maybe_compress(self) -> None:
        """Compress before a prompt when the last one used `threshold` of the window."""
        from runtime.services.compression import CompressionError, compression_threshold

        if self.recorder is None:
            return
        tokens = self.last_prompt_tokens()
        limit = compression_threshold(self.config.settings) * self.model_state.context_window(
            self.model_state.default_model
        )
        if tokens < limit:
            return
        # said inside the prompt's own stream, before its answer, as a notice of its own
        try:
            result = await self.compress("auto")
        except CompressionError as exc:
            self.protocol.pending_notice(
                f"Could not compress the conversation ({exc}); it is unchanged."
            )
            return
        self.protocol.pending_notice(compression_notice(result))

    async def session_start(self, source: str) -> None:
        """SessionStart hooks: their system message is shown and their additional
        context given to the model with the next prompt."""
        from runtime.services.hooks import fire

        verdict = await fire(self.hooks, "SessionStart", {"source": source}, source)
        if verdict.system_message:
            self.protocol.pending_notice(verdict.system_message)
        if verdict.additional_context:
            self.protocol.add_context(verdict.additional_context)

    async def session_end(self, reason: str) -> None:
        from runtime.services.hooks import fire

        try:
            await fire(self.hooks, "SessionEnd", {"reason": reason}, reason)
        except Exception:  # noqa: BLE001 - closing goes on whatever a hook does
            logger.exception("SessionEnd hooks failed")

    async def close(self, reason: str = "exit") -> None:
        if self.model_state.discovery is not None:  # the model list still being asked for
            self.model_state.discovery.cancel()
        await self.protocol.abort()
        await self.session_end(reason)
        try:
            await self.runner.close()
        finally:
            # What ADK's scans keep for this session's events goes with it.
            await self.session_service.delete_session(
                app_name=APP_NAME, user_id=USER_ID, session_id=self.id
            )
            if self.mcp is not None:
                await self.mcp.servers.close()
            if self.spec.recording is not None:
                await self.spec.recording.aclose()
            else:  # a recorded session's masked outputs stay with its record
                await asyncio.to_thread(self._remove_tool_outputs)

    def _remove_tool_outputs(self) -> None:
        """Full tool outputs (truncated or masked) live as long as their session."""
        import shutil

        shutil.rmtree(outputs_dir(self.config.temp_dir, self.id), ignore_errors=True)


def startup_notices(spec: SessionSpec, policy: PolicyEngine) -> list[str]:
    """What the user hears at a main session's first prompt, once: settings fields of the
    wrong type (ignored, defaults used), policy rules that could not be loaded, and a
    sandbox asked for that cannot run here."""
    if spec.kind != "main":
        return []
    notices = []
    if spec.config.settings_problems:
        lines = "\n".join(f"- {p}" for p in spec.config.settings_problems)
        notices.append(f"Some settings were ignored (the defaults are used):\n{lines}")
    if policy.load_errors:
        lines = "\n".join(f"- {p}" for p in policy.load_errors)
        notices.append(f"Some policy rules could not be loaded and are not in force:\n{lines}")
    sandbox = spec.config.sandbox
    if sandbox.active and not policy.sandboxed:  # asked for, but it cannot run here
        from runtime.tools.io.sandbox import Sandbox

        problem = Sandbox.for_session(sandbox, roots=(), home=spec.config.home, env={}).problem
        notices.append(
            f"The {sandbox.mode} sandbox cannot run here: {problem}. Commands run without "
            "a sandbox, and are asked for as without one."
        )
    if spec.auth is not None and spec.auth.kind == "none":
        notices.append(
            "No Google credentials: Google Search (google_web_search) and Gemini models "
            "(auto routing included) are off; set GEMINI_API_KEY to have them."
        )
    return notices


SessionFactory = Callable[[SessionSpec], Awaitable[AgentSession]]
"""Builds and starts one session (`runtime.session.factory.create_session`); subagents
get it injected."""
