"""One headless prompt on the real engine: `adk-acp -p` (Gemini CLI's non-interactive mode).

`run_prompt` resolves credentials and settings for the workspace as a new ACP session
would, records the session in the store (so an editor can continue it), sends the
prompt, shows every event through the chosen output format and ends with an exit code:

| code | when |
|---|---|
| 0 | the model answered (tool calls that failed or were denied do not fail the run) |
| 1 | the model request failed for good, or the model refused or was cut off |
| 41 | no credentials |
| 42 | no input (an empty prompt and nothing on stdin) |
| 52 | a configuration problem (settings.json, a `--fake-responses` file) |
| 53 | a per-prompt limit was reached (`--max-turns`, `--max-tokens`, `--max-time`) |
| 130 | cancelled (Ctrl+C) |

Approvals: the Host decides. Without a terminal (`HeadlessHost`) a call that needs
approval is denied by the scheduler before anything runs, with a message for the model
and one on stderr saying how to allow it; with a terminal (`TerminalHost`) it is asked.
"""

from __future__ import annotations

import asyncio
import logging
import os
import select
import signal
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

from runtime.config import AgentFlags
from runtime.errors import AuthRequiredError, ConfigError, RuntimeAgentError
from runtime.headless.output import OutputFormat, RunError, RunOutput, make_output
from runtime.headless.stats import RunStats
from runtime.headless.terminal import TerminalHost
from runtime.host import HeadlessHost, Host
from runtime.protocol import (
    AgentEndEvent,
    AgentEvent,
    ErrorEvent,
    ToolRequestEvent,
    ToolResponseEvent,
    ToolUpdateEvent,
)

if TYPE_CHECKING:
    from runtime.models.content_generator import ContentGenerator
    from runtime.session import AgentSession, SessionService

logger = logging.getLogger(__name__)

EXIT_SUCCESS = 0
EXIT_ERROR = 1
EXIT_AUTH = 41
EXIT_INPUT = 42
EXIT_CONFIG = 52
EXIT_LIMIT = 53
EXIT_CANCELLED = 130

STDIN_LIMIT = 8 * 1024 * 1024
STDIN_FIRST_DATA_S = 0.5
CLOSE_TIMEOUT_S = 2.0
DATABASE_CLOSE_S = 10.0
"""More time to close when the record's queued lines go to a database (`--store`)."""


def denied_hint(title: str, kind: str) -> str:
    """What to do about a call denied for want of a terminal to ask on."""
    modes = "--approval-mode autoEdit (or yolo)" if kind == "edit" else "--approval-mode yolo"
    return (
        f"{title} needs approval, which cannot be asked without a terminal: run in a "
        f"terminal, or allow it with {modes} or a policy rule."
    )


@dataclass(frozen=True)
class HeadlessRun:
    """What one headless run needs. `generator` replaces the model (the demo); `home`
    overrides $HOME for settings and tool outputs; `record` keeps the session."""

    prompt: str
    output_format: OutputFormat
    workspace: Path
    flags: AgentFlags
    env: dict[str, str]
    record: bool = True
    generator: ContentGenerator | None = None
    home: Path | None = None


def read_piped_stdin(stream: IO[bytes], *, wait_first: bool) -> str:
    """What was piped in (at most 8 MB). With `wait_first` False, stdin is read to its
    end; otherwise, as Gemini CLI, nothing arriving within half a second counts as
    nothing piped (a parent that leaves stdin open and silent must not hang the run)."""
    if wait_first:
        try:
            ready, _, _ = select.select([stream], [], [], STDIN_FIRST_DATA_S)
        except (OSError, ValueError):  # not a selectable stream
            ready = [stream]
        if not ready:
            return ""
    data = stream.read(STDIN_LIMIT + 1) or b""
    if len(data) > STDIN_LIMIT:
        logger.warning("stdin input truncated to %d bytes", STDIN_LIMIT)
        data = data[:STDIN_LIMIT]
    return data.decode("utf-8", errors="replace")


def prompt_with_stdin(prompt: str, piped: str) -> str:
    """Gemini CLI's order: what was piped in, a blank line, then the prompt."""
    if piped and prompt:
        return f"{piped}\n\n{prompt}"
    return piped or prompt


def end_error(
    end: AgentEndEvent, fatal: ErrorEvent | None, stop: ErrorEvent | None
) -> RunError | None:
    """The run's error (None: success) from how the stream ended."""
    data = end.data or {}
    stop_message = stop.message if stop is not None else None
    match end.reason:
        case "completed":
            return None
        case "aborted":
            return RunError("FatalCancellationError", "Operation cancelled.", EXIT_CANCELLED)
        case "max_turns" | "max_time":
            message = stop_message or "Stopped: this prompt reached its limit."
            return RunError("FatalTurnLimitedError", message, EXIT_LIMIT)
        case "max_budget" if data.get("code") == "MAX_TOKENS_EXCEEDED":
            message = stop_message or "Stopped: this prompt reached its token limit."
            return RunError("FatalTurnLimitedError", message, EXIT_LIMIT)
        case "max_budget":
            return RunError(
                "MAX_TOKENS", "The model's answer reached its output limit and was cut off.", 1
            )
        case "refusal":
            why = data.get("finishReason", "refusal")
            return RunError("REFUSAL", f"The model declined to answer ({why}).", EXIT_ERROR)
        case "failed" if fatal is not None:
            code = (fatal.meta or {}).get("code")
            return RunError(str(code or fatal.status), fatal.message, EXIT_ERROR)
        case "failed" | "elicitation":
            why = data.get("finishReason", end.reason)
            return RunError("INTERNAL", f"The prompt failed ({why}).", EXIT_ERROR)


class _Watcher:
    """Follows one stream: feeds the output and statistics, remembers the fatal error
    and the stop notice, and resolves when the stream's `agent_end` arrives.

    `needs_approval(request)` tells whether a call would have been asked: a call
    the run could not ask about (no terminal) that failed before it ran gets a
    line on stderr saying how to allow it."""

    def __init__(
        self,
        output: RunOutput,
        stats: RunStats,
        needs_approval: Callable[[ToolRequestEvent], bool] | None,
    ) -> None:
        self.output = output
        self.stats = stats
        self.needs_approval = needs_approval
        self.stream_id: str | None = None
        self.fatal: ErrorEvent | None = None
        self.stop: ErrorEvent | None = None
        self.ended: asyncio.Future[AgentEndEvent] = asyncio.get_running_loop().create_future()
        self._ends: list[AgentEndEvent] = []
        self._requests: dict[str, ToolRequestEvent] = {}
        self._ran: set[str] = set()

    def __call__(self, event: AgentEvent) -> None:
        self.stats.observe(event)
        self.output.event(event)
        match event:
            case ErrorEvent(fatal=True):
                self.fatal = event
            case ErrorEvent() if (event.meta or {}).get("code"):
                self.stop = event
            case ToolRequestEvent(thread_id=None):
                self._requests[event.request_id] = event
            case ToolUpdateEvent(status="in_progress"):
                self._ran.add(event.request_id)
            case ToolResponseEvent(thread_id=None, is_error=True):
                self._explain_denial(event)
            case AgentEndEvent():
                self._ends.append(event)
                self._check()
            case _:
                pass

    def watch(self, stream_id: str) -> None:
        self.stream_id = stream_id
        self._check()

    def _check(self) -> None:
        for end in self._ends:
            if end.stream_id == self.stream_id and not self.ended.done():
                self.ended.set_result(end)

    def _explain_denial(self, event: ToolResponseEvent) -> None:
        request = self._requests.get(event.request_id)
        if request is None or event.request_id in self._ran or self.needs_approval is None:
            return
        if self.needs_approval(request):
            display = request.display
            title = display.title if display else request.name
            self.output.note("WARNING", denied_hint(title, display.kind if display else "other"))


async def _start(run: HeadlessRun, host: Host) -> tuple[AgentSession, SessionService | None]:
    """Credentials, settings and the engine session, recorded (`run.record`) in the
    session store an editor's session would be: the JSONL files, or the PostgreSQL
    database of `--store`/`$ADK_ACP_STORE`/`general.sessionStore` (then also returned:
    the service whose store to close). Raises AuthRequiredError, ConfigError or another
    RuntimeAgentError."""
    from runtime.config import resolve_auth, resolve_config
    from runtime.session import OpenRequest, SessionService, SessionSpec, create_session

    home = run.home or Path(run.env.get("HOME") or Path.home())
    fake = run.flags.fake_responses
    if run.generator is None and fake is not None and not fake.is_file():
        # one run, no server to keep serving: a configuration error at once
        raise ConfigError(f"the --fake-responses file {fake} does not exist")
    config = resolve_config(run.workspace, run.flags, env=run.env, home=home)  # before auth
    session_id = uuid.uuid4().hex
    if run.record:

        async def create(spec: SessionSpec) -> AgentSession:
            return await create_session(replace(spec, generator=run.generator))

        service = SessionService(run.flags, run.env, home, create=create)
        request = OpenRequest(cwd=str(run.workspace), host_for=lambda _id: host)
        try:
            return await service.open(session_id, request), service
        except OSError as exc:  # the sessions folder cannot be written: run all the same
            logger.warning("this run is not recorded: %s", exc)
            await service.aclose()
        except BaseException:
            await service.aclose()
            raise
    auth = (
        resolve_auth(run.env, fake_responses=fake, model=config.model)
        if run.generator is None
        else None
    )
    spec = SessionSpec(
        config=config, auth=auth, host=host, session_id=session_id, generator=run.generator
    )
    return await create_session(spec), None


def _startup_error(exc: Exception) -> RunError:
    if isinstance(exc, AuthRequiredError):
        return RunError("FatalAuthenticationError", str(exc), EXIT_AUTH)
    if isinstance(exc, ConfigError):
        return RunError("FatalConfigError", str(exc), EXIT_CONFIG)
    return RunError(type(exc).__name__, str(exc), EXIT_ERROR)


async def run_prompt(
    run: HeadlessRun,
    *,
    host: Host | None = None,
    stdout: IO[str],
    stderr: IO[str],
) -> int:
    """Run `run.prompt` once and return the exit code (see the module doc). `host`
    defaults to `HeadlessHost` (no questions: calls that need approval are denied)."""
    stats = RunStats()
    output = make_output(run.output_format, stdout, stderr, stats)
    host = host or HeadlessHost()
    if isinstance(host, TerminalHost):
        host.set_decision_sink(stats.decided)
    if not run.prompt.strip():
        return _fail(
            output,
            RunError(
                "FatalInputError",
                "No input provided: give a prompt with -p, or pipe text into adk-acp -p.",
                EXIT_INPUT,
            ),
        )
    try:
        session, service = await _start(run, host)
    except RuntimeAgentError as exc:
        return _fail(output, _startup_error(exc))
    failure: RunError | None
    try:
        failure = await _drive(session, run, output, stats, asks=not isinstance(host, HeadlessHost))
    except RuntimeAgentError as exc:
        failure = RunError(type(exc).__name__, str(exc), EXIT_ERROR)
    finally:
        await _close(session, service)
    output.end(failure)
    return failure.code if failure is not None else EXIT_SUCCESS


def _fail(output: RunOutput, error: RunError) -> int:
    output.end(error)
    return error.code


def _needs_approval(session: AgentSession) -> Callable[[ToolRequestEvent], bool]:
    """Whether the session's policy would ask the user about a call (an ask the
    scheduler turned into a denial, as there was no one to ask)."""

    def needs(request: ToolRequestEvent) -> bool:
        tool = session.scheduler.tools.get(request.name)
        verdict = session.policy.evaluate(
            request.name,
            request.args,
            mode=session.mode,
            mcp_server=getattr(tool, "mcp_server", None),
        )
        return verdict.decision == "ask_user"

    return needs


async def _drive(
    session: AgentSession, run: HeadlessRun, output: RunOutput, stats: RunStats, *, asks: bool
) -> RunError | None:
    from runtime.protocol import MessageSend, TextPart

    output.begin(session.id, session.model_state.default_model, run.prompt)
    watcher = _Watcher(output, stats, None if asks else _needs_approval(session))
    unsubscribe = session.subscribe(watcher)
    loop = asyncio.get_running_loop()
    interrupts = 0

    def on_interrupt() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1:  # a second Ctrl+C: leave now
            from runtime.processes import kill_all

            kill_all()
            os._exit(EXIT_CANCELLED)
        output.note("INFO", "Cancelling...")
        loop.create_task(session.abort())

    try:
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    except (NotImplementedError, RuntimeError):  # not the main thread
        logger.debug("no SIGINT handler for this run")
    try:
        stats.prompt_sent()
        result = await session.send(MessageSend(content=(TextPart(text=run.prompt),)))
        assert result.stream_id is not None
        watcher.watch(result.stream_id)
        end = await watcher.ended
    finally:
        unsubscribe()
        loop.remove_signal_handler(signal.SIGINT)
    return end_error(end, watcher.fatal, watcher.stop)


async def _close(session: AgentSession, service: SessionService | None) -> None:
    """Close the engine (a bounded wait; longer when the record's last lines go to a
    database) and the store's connections."""
    from runtime.processes import kill_all
    from runtime.services.session_store import FileRecordStore

    timeout = CLOSE_TIMEOUT_S
    if not isinstance(session.spec.records, FileRecordStore | None):
        timeout += DATABASE_CLOSE_S
    try:
        await asyncio.wait_for(session.close(), timeout=timeout)
    except TimeoutError:
        logger.warning("the session did not close within %.1f s", timeout)
    except Exception:  # noqa: BLE001 - the run's result stands whatever closing does
        logger.exception("closing the session failed")
    finally:
        kill_all()
    if service is not None:
        try:
            await service.aclose()
        except Exception:  # noqa: BLE001 - the run's result stands whatever closing does
            logger.exception("closing the session store failed")
