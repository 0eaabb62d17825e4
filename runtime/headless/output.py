"""The three output formats of a headless run (Gemini CLI's `--output-format`).

- `text`: the model's answer streamed to stdout, nothing else there; tool calls
  (one line each, `✓` or `✗`), notices and warnings go to stderr.
- `json`: one JSON object on stdout at the end: `session_id`, `response` (the answer
  after the last tool call), `stats` (see `runtime.headless.stats`), and `error`
  (`type`, `message`, `code`) or `warnings` when there are any.
- `stream-json`: one JSON object per line as things happen: `init` (session id,
  model), `message` (the user's prompt, then the answer's chunks with `delta`),
  `tool_use`, `tool_result`, `error` (non-fatal warnings) and a last `result`
  (`status`, `error`, `stats`).

Model text has its terminal escape sequences removed in every format (as Gemini CLI
does), so an answer cannot drive the user's terminal. A subagent's own events
(`thread_id` set) are not shown: its call is one tool call of the run.
"""

from __future__ import annotations

import abc
import json
import re
from dataclasses import dataclass
from typing import IO, Any, Literal, assert_never

from runtime.headless.stats import RunStats
from runtime.protocol import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    CommandsChangedEvent,
    CompactionEvent,
    ErrorEvent,
    MessageEvent,
    NoticeEvent,
    PlanEvent,
    SessionUpdateEvent,
    SubagentEvent,
    TextPart,
    ToolRequestEvent,
    ToolResponseEvent,
    ToolUpdateEvent,
    UsageEvent,
    now_iso,
)

OutputFormat = Literal["text", "json", "stream-json"]
FORMATS: tuple[OutputFormat, ...] = ("text", "json", "stream-json")

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor moves)
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (titles, hyperlinks)
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC
    r"|\x1b[@-Z\\-_]"  # two-character escapes
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"  # other control characters (tabs and newlines stay)
)


def strip_escapes(text: str) -> str:
    return _ESCAPES.sub("", text)


@dataclass(frozen=True)
class RunError:
    """Why a run failed: `type` names the kind (Gemini CLI's error names for its
    fatal errors), `code` is the process exit code."""

    type: str
    message: str
    code: int

    def as_json(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message, "code": self.code}


def _agent_text(event: MessageEvent) -> str:
    return strip_escapes("".join(p.text for p in event.content if isinstance(p, TextPart)))


def _tool_output(event: ToolResponseEvent) -> str:
    output = (event.data or {}).get("output")
    return output if isinstance(output, str) else ""


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


class RunOutput(abc.ABC):
    """Where a run's events are shown. `begin` once, `event` per engine event, `end`
    once. `event` sorts the events (one exhaustive match) into the hooks a format
    overrides: `text` (the answer's chunks), `tool_request`, `tool_response`,
    `warning` (a non-fatal error); notices go to stderr in every format."""

    def __init__(self, stdout: IO[str], stderr: IO[str], stats: RunStats) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.stats = stats
        self.session_id = ""

    def begin(self, session_id: str, model: str, prompt: str) -> None:
        self.session_id = session_id

    def event(self, event: AgentEvent) -> None:
        if isinstance(event, NoticeEvent):
            self.note("INFO", event.text)
        if event.thread_id is not None:
            return
        match event:
            case MessageEvent(role="agent"):
                text = _agent_text(event)
                if text:
                    self.text(text)
            case ToolRequestEvent():
                self.tool_request(event)
            case ToolResponseEvent():
                self.tool_response(event)
            case ErrorEvent(fatal=False):
                self.warning(strip_escapes(event.message))
            case (
                MessageEvent()
                | ErrorEvent()
                | AgentStartEvent()
                | AgentEndEvent()
                | ToolUpdateEvent()
                | UsageEvent()
                | SessionUpdateEvent()
                | PlanEvent()
                | NoticeEvent()
                | CompactionEvent()  # its notice says it
                | SubagentEvent()  # its tool call says it
                | CommandsChangedEvent()
            ):
                pass
            case _:
                assert_never(event)

    def text(self, text: str) -> None:
        """A chunk of the model's answer (escape sequences removed). Default: not shown."""
        return None

    def tool_request(self, event: ToolRequestEvent) -> None:
        """A tool call was requested (before any approval). Default: not shown."""
        return None

    def tool_response(self, event: ToolResponseEvent) -> None:
        """A tool call ended (done, failed, denied or cancelled). Default: not shown."""
        return None

    def warning(self, message: str) -> None:
        """A non-fatal error: a stop notice, a loop, a hook's block. Default: not shown."""
        return None

    @abc.abstractmethod
    def end(self, error: RunError | None) -> None: ...

    def note(self, level: str, text: str) -> None:
        """A line for the user on stderr, in every format."""
        self.stderr.write(f"[{level}] {strip_escapes(text)}\n")
        self.stderr.flush()


class TextOutput(RunOutput):
    def __init__(self, stdout: IO[str], stderr: IO[str], stats: RunStats) -> None:
        super().__init__(stdout, stderr, stats)
        self._open_line = False  # stdout has text without its final newline
        self._warned: set[str] = set()

    def _newline(self) -> None:
        if self._open_line:
            self.stdout.write("\n")
            self.stdout.flush()
            self._open_line = False

    def text(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()
        self._open_line = not text.endswith("\n")

    def tool_request(self, event: ToolRequestEvent) -> None:
        self._newline()

    def tool_response(self, event: ToolResponseEvent) -> None:
        self._newline()
        title = strip_escapes(event.display.title if event.display else event.name)
        if event.is_error:
            why = strip_escapes(_first_line(_tool_output(event)))
            self.stderr.write(f"✗ {title}: {why}\n")
        else:
            self.stderr.write(f"✓ {title}\n")
        self.stderr.flush()

    def warning(self, message: str) -> None:
        self._newline()
        self._warned.add(message)
        self.note("WARNING", message)

    def end(self, error: RunError | None) -> None:
        self._newline()
        if error is not None and error.message not in self._warned:
            self.note("ERROR", error.message)


class JsonOutput(RunOutput):
    def __init__(self, stdout: IO[str], stderr: IO[str], stats: RunStats) -> None:
        super().__init__(stdout, stderr, stats)
        self._response = ""
        self._warnings: list[str] = []

    def text(self, text: str) -> None:
        self._response += text

    def tool_request(self, event: ToolRequestEvent) -> None:
        self._response = ""  # the answer is what follows the last tool call

    def warning(self, message: str) -> None:
        self._warnings.append(message)

    def end(self, error: RunError | None) -> None:
        body: dict[str, Any] = {}
        if self.session_id:
            body["session_id"] = self.session_id
        body["response"] = self._response
        body["stats"] = self.stats.metrics()
        if error is not None:
            body["error"] = error.as_json()
        if self._warnings:
            body["warnings"] = self._warnings
        self.stdout.write(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
        self.stdout.flush()


class StreamJsonOutput(RunOutput):
    def _emit(self, kind: str, **fields: Any) -> None:
        line = {"type": kind, "timestamp": now_iso(), **fields}
        self.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
        self.stdout.flush()

    def begin(self, session_id: str, model: str, prompt: str) -> None:
        super().begin(session_id, model, prompt)
        self._emit("init", session_id=session_id, model=model)
        self._emit("message", role="user", content=prompt)

    def text(self, text: str) -> None:
        self._emit("message", role="assistant", content=text, delta=True)

    def tool_request(self, event: ToolRequestEvent) -> None:
        self._emit(
            "tool_use", tool_name=event.name, tool_id=event.request_id, parameters=event.args
        )

    def tool_response(self, event: ToolResponseEvent) -> None:
        output = _tool_output(event)
        if not event.is_error:
            self._emit("tool_result", tool_id=event.request_id, status="success", output=output)
            return
        status = (event.data or {}).get("status")
        kind = "CANCELLED" if status == "cancelled" else "TOOL_EXECUTION_ERROR"
        self._emit(
            "tool_result",
            tool_id=event.request_id,
            status="error",
            error={"type": kind, "message": output},
        )

    def warning(self, message: str) -> None:
        self._emit("error", severity="warning", message=message)

    def end(self, error: RunError | None) -> None:
        fields: dict[str, Any] = {"status": "error" if error else "success"}
        if error is not None:
            fields["error"] = {"type": error.type, "message": error.message}
        self._emit("result", **fields, stats=self.stats.stream_stats())


def make_output(kind: OutputFormat, stdout: IO[str], stderr: IO[str], stats: RunStats) -> RunOutput:
    match kind:
        case "text":
            return TextOutput(stdout, stderr, stats)
        case "json":
            return JsonOutput(stdout, stderr, stats)
        case "stream-json":
            return StreamJsonOutput(stdout, stderr, stats)
        case _:
            assert_never(kind)
