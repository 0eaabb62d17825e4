"""The end-to-end ACP client: starts a real agent process and drives it over stdio.

One named async method per ACP request (`initialize`, `new_session`, `prompt`, ...),
and the client side served for real: `session/request_permission` through a
pluggable policy, `fs/*` on the real disk, `terminal/*` as local processes, each in
its own process group. Every line the agent writes to stdout must be one valid
JSON-RPC 2.0 message, every `session/update` must validate against
`acp.schema.SessionNotification`, and the agent may only call the client methods the
client advertised; anything else is recorded as a violation, fails the pending
waits at once, and fails `close()`. stderr is kept in a buffer for the messages.

    client = await AcpTestClient.spawn([sys.executable, "-m", "acp_server.cli"], env={...})
    await client.initialize()
    session_id = (await client.new_session(str(tmp_path)))["sessionId"]
    result = await client.prompt(session_id, "hello")
    assert result["stopReason"] == "end_turn" and "hello" in client.text_of(session_id)
    await client.close()           # stdin EOF, the agent must exit within a bound

or the `make_agent(argv, env)` fixture of `tests/conftest.py`, which closes (and so
checks) every client it made.

Why pygls, and how far. The guide asks for pytest-lsp. pytest-lsp 1.0.1's
`LanguageClient` is an LSP client (lsprotocol types, LSP checks), but its fixture
machinery only needs a `pygls.client.JsonRPCClient` (`ClientServerConfig.client_factory`,
`start_io(*cmd, env=...)`, `stop()`), so this class subclasses `JsonRPCClient` and
works with `@pytest_lsp.fixture(config=ClientServerConfig(server_command=...,
client_factory=AcpTestClient))` too. pygls serves the agent→client side: handlers
registered with `feature()` (tests may add their own), results and errors framed as
JSON-RPC, -32601 for unknown methods. Three things are ours, each small:
- framing: pygls reads Content-Length frames (`io_.run_async`) and writes bare JSON
  without a newline when `include_headers=False`; `start_io` here reads lines and a
  writer appends the `\\n`;
- structuring: pygls turns params and results into namedtuples (which renames keys
  such as `_meta`); our converter keeps plain dicts;
- our own requests: pygls keeps incoming and outgoing requests in one table keyed
  by id, so an agent request whose id equals one of ours (both sides count from 1)
  would take over our pending future. Our requests and their responses are
  therefore correlated here, before pygls sees a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import json
import logging
import os
import shlex
import signal
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import pydantic
from acp import schema
from pygls.client import JsonRPCClient
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcMethodNotFound
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)

from tests.e2e.official_schema import TrafficCheck, official_schema

logger = logging.getLogger(__name__)

JsonObject = dict[str, Any]
T = TypeVar("T")
PROTOCOL_VERSION = 1
STDOUT_LINE_LIMIT = 1 << 30  # messages may be tens of MB
RESOURCE_NOT_FOUND = -32002
_TOP_LEVEL_KEYS = {"jsonrpc", "id", "method", "params", "result", "error"}

# The real agent as the end-to-end tests start it.
AGENT_COMMAND = [sys.executable, "-m", "acp_server.cli"]
# Anything from the developer's environment that would change which model or
# credentials the agent picks, or where it traces: cleared for every test agent.
CLEARED_ENV = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_MODEL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "ADK_ACP_TRACE_FILE",
    "XDG_STATE_HOME",  # sessions are recorded under the test's HOME
    "ADK_ACP_STORE",  # ... and not in a developer's database
    "ADK_ACP_LEASE_SECONDS",
    "OTEL_TRACES_EXPORTER",  # no trace export unless a test asks for it
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)

# Set for every test agent unless a test overrides it: a prompt waits for the session's
# MCP servers as long as they take to start (up to their start-up timeout), so a
# loaded machine does not make them "late"; the late-server test removes it.
AGENT_TEST_ENV = {"ADK_ACP_MCP_PROMPT_WAIT_S": "60"}

# Results validated against acp.schema when the agent answers.
_RESULT_MODELS: dict[str, Any] = {
    "initialize": schema.InitializeResponse,
    "authenticate": schema.AuthenticateResponse,
    "session/new": schema.NewSessionResponse,
    "session/load": schema.LoadSessionResponse,
    "session/resume": schema.ResumeSessionResponse,
    "session/fork": schema.ForkSessionResponse,
    "session/list": schema.ListSessionsResponse,
    "session/close": schema.CloseSessionResponse,
    "session/delete": schema.DeleteSessionResponse,
    "session/prompt": schema.PromptResponse,
    "session/set_mode": schema.SetSessionModeResponse,
    "session/set_config_option": schema.SetSessionConfigOptionResponse,
}
# Client methods and the capability that must have been advertised for each.
_CAPABILITY_OF: dict[str, Callable[[JsonObject], bool]] = {
    "fs/read_text_file": lambda c: bool((c.get("fs") or {}).get("readTextFile")),
    "fs/write_text_file": lambda c: bool((c.get("fs") or {}).get("writeTextFile")),
    "terminal/create": lambda c: bool(c.get("terminal")),
    "terminal/output": lambda c: bool(c.get("terminal")),
    "terminal/wait_for_exit": lambda c: bool(c.get("terminal")),
    "terminal/kill": lambda c: bool(c.get("terminal")),
    "terminal/release": lambda c: bool(c.get("terminal")),
    "elicitation/create": lambda c: bool(c.get("elicitation")),
}


class AcpError(Exception):
    """The agent answered a request with a JSON-RPC error."""

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{method}: error {code}: {message}")
        self.method = method
        self.code = code
        self.message = message
        self.data = data


class AgentProtocolViolation(AssertionError):
    """The agent broke the protocol: non-JSON-RPC stdout, an invalid update, an
    unadvertised client method, ..."""


class AgentExited(AssertionError):
    """The agent process ended while something was still waiting on it."""


# ---------------------------------------------------------------- permission policies

CANCELLED: JsonObject = {"outcome": "cancelled"}
PermissionPolicy = Callable[[JsonObject], JsonObject | Awaitable[JsonObject]]


def selected(option_id: str) -> JsonObject:
    """The outcome choosing `option_id`."""
    return {"outcome": "selected", "optionId": option_id}


def choose_kind(*kinds: str) -> PermissionPolicy:
    """A policy picking the first option whose kind comes first in `kinds` (else cancel)."""

    def policy(params: JsonObject) -> JsonObject:
        options = params.get("options") or []
        for kind in kinds:
            for option in options:
                if option.get("kind") == kind:
                    return selected(option["optionId"])
        return dict(CANCELLED)

    return policy


allow_once = choose_kind("allow_once", "allow_always")
allow_always = choose_kind("allow_always", "allow_once")
reject_once = choose_kind("reject_once", "reject_always")


def cancel_every_permission(params: JsonObject) -> JsonObject:
    return dict(CANCELLED)


@dataclass(eq=False)
class PermissionRequest:
    """One `session/request_permission` from the agent, and its answer once given.

    In queue mode the test answers it with `select`, `select_kind` or `cancel`.
    `opened` / `closed` are positions in the client's event counter, for overlap checks.
    """

    params: JsonObject
    opened: int
    closed: int | None = None
    outcome: JsonObject | None = None
    meta: JsonObject | None = None
    """The answer's `_meta`, when the test gives one (`answer(..., meta=)`)."""
    _future: asyncio.Future[JsonObject] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    @property
    def session_id(self) -> str:
        return str(self.params.get("sessionId"))

    @property
    def tool_call(self) -> JsonObject:
        return dict(self.params.get("toolCall") or {})

    @property
    def options(self) -> list[JsonObject]:
        return list(self.params.get("options") or [])

    @property
    def answered(self) -> bool:
        return self._future.done()

    def answer(self, outcome: JsonObject, *, meta: JsonObject | None = None) -> None:
        if not self._future.done():
            self.meta = meta
            self._future.set_result(outcome)

    def select(self, option_id: str) -> None:
        if option_id not in {o.get("optionId") for o in self.options}:
            raise ValueError(f"no option {option_id!r} in {self.options}")
        self.answer(selected(option_id))

    def select_kind(self, kind: str) -> None:
        self.answer(choose_kind(kind)(self.params))

    def cancel(self) -> None:
        self.answer(dict(CANCELLED))


# ---------------------------------------------------------------- requests in flight


@dataclass(eq=False)
class PendingRequest:
    """A request sent to the agent. `await result()` returns its result or raises AcpError."""

    id: int | str
    method: str
    params: JsonObject
    _client: AcpTestClient
    _future: asyncio.Future[JsonObject]

    def done(self) -> bool:
        return self._future.done()

    async def response(self, timeout: float | None = None) -> JsonObject:
        """The raw response message (`result` or `error`)."""
        return await self._client._await_future(
            self._future, timeout, f"the answer to {self.method} (id {self.id})"
        )

    async def result(self, timeout: float | None = None) -> Any:
        message = await self.response(timeout)
        if "error" in message:
            error = message["error"]
            raise AcpError(
                self.method, error.get("code"), error.get("message", ""), error.get("data")
            )
        return message.get("result")


def _plain_converter() -> Any:
    """pygls' converter, but params and results stay plain dicts."""
    converter = default_converter()
    converter.register_structure_hook(
        JsonRPCRequestMessage,
        lambda o, cls: cls(
            id=o["id"], method=o["method"], jsonrpc=o["jsonrpc"], params=o.get("params")
        ),
    )
    converter.register_structure_hook(
        JsonRPCNotification,
        lambda o, cls: cls(method=o["method"], jsonrpc=o["jsonrpc"], params=o.get("params")),
    )
    converter.register_structure_hook(
        JsonRPCResponseMessage,
        lambda o, cls: cls(id=o["id"], jsonrpc=o["jsonrpc"], result=o.get("result")),
    )
    return converter


def check_jsonrpc(message: Any) -> str | None:
    """Why `message` is not a JSON-RPC 2.0 request, notification or response (None if it is)."""
    if not isinstance(message, dict):
        return "not a JSON object"
    if message.get("jsonrpc") != "2.0":
        return 'no "jsonrpc": "2.0"'
    if extra := set(message) - _TOP_LEVEL_KEYS:
        return f"unknown top-level keys {sorted(extra)}"
    msg_id = message.get("id")
    id_ok = isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)
    if "method" in message:
        if not isinstance(message["method"], str):
            return "method is not a string"
        if "id" in message and not id_ok:
            return f"bad request id {msg_id!r}"
        if "params" in message and not isinstance(message["params"], (dict, list)):
            return "params is neither an object nor an array"
        if "result" in message or "error" in message:
            return "a request carries result/error"
        return None
    if "id" not in message:
        return "neither a request, a notification nor a response"
    if ("result" in message) == ("error" in message):
        return "a response needs exactly one of result and error"
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict) or not isinstance(error.get("message"), str):
            return "error is not {code, message}"
        if not isinstance(error.get("code"), int) or isinstance(error.get("code"), bool):
            return "error code is not an integer"
        return None if id_ok or msg_id is None else f"bad response id {msg_id!r}"
    return None if id_ok else f"bad response id {msg_id!r}"


_OPT_IN_UPDATES = {
    "notice": "notices",
    "compaction_update": "compaction",
    "compaction_summary_chunk": "compaction",
}
"""Session updates newer than the pinned acp.schema (ACP 1.21) and the
`clientCapabilities.session` entry a client opts in to them with."""
_OPT_IN_TOP_UPDATES = {
    "plan_update": "plan",
    "plan_removed": "plan",
    "subagent_update": "subagents",
}
"""The same, for updates a top-level `clientCapabilities` entry opts in to."""


def _validation_problem(model: Any, value: Any, what: str) -> str | None:
    try:
        pydantic.TypeAdapter(model).validate_python(value)
    except pydantic.ValidationError as exc:
        return f"{what} does not match acp.schema: {exc}"
    return None


async def _exited_within(proc: asyncio.subprocess.Process, timeout: float) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while proc.returncode is None:
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def _blocks(blocks: str | Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[JsonObject]:
    if isinstance(blocks, str):
        return [{"type": "text", "text": blocks}]
    if isinstance(blocks, Mapping):
        return [dict(blocks)]
    return [dict(b) for b in blocks]


# ---------------------------------------------------------------- fs and terminals


@dataclass(frozen=True)
class FsCall:
    """One fs/* call from the agent: `method` is "read" or "write"."""

    method: Literal["read", "write"]
    path: str
    params: JsonObject


class LocalFiles:
    """`fs/*` on the real disk. `unsaved` maps absolute paths to editor buffers that
    reads see instead of the file (a write replaces the buffer)."""

    def __init__(
        self,
        *,
        root: Path | None,
        missing: Literal["error", "empty", "internal"],
        unsaved: Mapping[str, str] | None,
        violation: Callable[[str], None],
    ) -> None:
        self.root = root.resolve() if root is not None else None
        self.missing = missing
        self.unsaved = dict(unsaved or {})
        self.calls: list[FsCall] = []
        self._violation = violation

    @property
    def reads(self) -> list[str]:
        return [c.path for c in self.calls if c.method == "read"]

    @property
    def writes(self) -> list[str]:
        return [c.path for c in self.calls if c.method == "write"]

    def _path(self, raw: str) -> Path:
        path = Path(raw)
        if not path.is_absolute():
            self._violation(f"fs path is not absolute: {raw!r}")
            raise JsonRpcInvalidParams(f"path must be absolute: {raw}")
        if self.root is not None and not path.resolve().is_relative_to(self.root):
            raise JsonRpcInvalidParams(f"{raw} is outside the client's root {self.root}")
        return path

    def read(self, params: JsonObject) -> JsonObject:
        self.calls.append(FsCall("read", params["path"], params))
        path = self._path(params["path"])
        if str(path) in self.unsaved:
            text = self.unsaved[str(path)]
        else:
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                if self.missing == "internal":  # how the official SDK clients and acpx answer
                    raise JsonRpcException(
                        message="Internal error",
                        code=-32603,
                        data={"details": f"ENOENT: no such file or directory, open '{path}'"},
                    ) from None
                if self.missing == "error":
                    raise JsonRpcException(
                        message=f"Resource not found: {path}",
                        code=RESOURCE_NOT_FOUND,
                        data={"path": str(path)},
                    ) from None
                text = ""
            except (OSError, UnicodeDecodeError) as exc:
                raise JsonRpcException(message=f"cannot read {path}: {exc}", code=-32603) from None
        line, limit = params.get("line"), params.get("limit")
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start : None if limit is None else start + limit])
        return {"content": text}

    def write(self, params: JsonObject) -> JsonObject:
        self.calls.append(FsCall("write", params["path"], params))
        path = self._path(params["path"])
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(params["content"], encoding="utf-8")
        except OSError as exc:
            raise JsonRpcException(message=f"cannot write {path}: {exc}", code=-32603) from None
        self.unsaved.pop(str(path), None)
        return {}


@dataclass(eq=False)
class LocalTerminal:
    """A command started for `terminal/create`, in its own process group."""

    id: str
    params: JsonObject
    process: asyncio.subprocess.Process
    byte_limit: int | None
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    released: bool = False
    reader: asyncio.Task[None] | None = None

    @property
    def exit_status(self) -> JsonObject | None:
        code = self.process.returncode
        if code is None or self.reader is None or not self.reader.done():
            return None
        if code < 0:
            return {"exitCode": None, "signal": signal.Signals(-code).name}
        return {"exitCode": code, "signal": None}

    def text(self) -> str:
        return self.output.decode("utf-8", errors="replace")

    def kill(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)

    async def finish(self) -> None:
        await self.process.wait()
        if self.reader is not None:
            await self.reader


class LocalTerminals:
    """`terminal/*` as local processes. With `shell`, the command line (command and
    quoted args) runs under `/bin/sh -c`, as editors run it in the user's shell."""

    def __init__(self, *, shell: bool) -> None:
        self.shell = shell
        self.release_gate: asyncio.Event | None = None
        """When set to an Event, `terminal/release` is answered only once it is set (an
        editor slow to release, or one that never answers)."""
        self.calls: list[tuple[str, JsonObject]] = []
        self.created: list[LocalTerminal] = []
        self._live: dict[str, LocalTerminal] = {}

    async def create(self, params: JsonObject) -> JsonObject:
        self.calls.append(("create", params))
        command, args = params["command"], list(params.get("args") or [])
        argv = (
            ["/bin/sh", "-c", shlex.join([command, *args]) if args else command]
            if self.shell
            else [command, *args]
        )
        env = dict(os.environ) | {e["name"]: e["value"] for e in params.get("env") or []}
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                cwd=params.get("cwd"),
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise JsonRpcException(message=f"cannot start {command}: {exc}", code=-32603) from None
        term = LocalTerminal(
            f"term-{len(self.created) + 1}", params, process, params.get("outputByteLimit")
        )
        term.reader = asyncio.create_task(self._pump(term))
        self.created.append(term)
        self._live[term.id] = term
        return {"terminalId": term.id}

    @staticmethod
    async def _pump(term: LocalTerminal) -> None:
        assert term.process.stdout is not None
        while chunk := await term.process.stdout.read(65536):
            term.output += chunk
            if term.byte_limit is not None and len(term.output) > term.byte_limit:
                del term.output[: len(term.output) - term.byte_limit]
                while term.output and term.output[0] & 0xC0 == 0x80:  # keep whole characters
                    del term.output[0]
                term.truncated = True

    def _get(self, method: str, params: JsonObject) -> LocalTerminal:
        self.calls.append((method, params))
        term = self._live.get(params["terminalId"])
        if term is None:
            raise JsonRpcInvalidParams(f"unknown or released terminal {params['terminalId']!r}")
        return term

    def output(self, params: JsonObject) -> JsonObject:
        term = self._get("output", params)
        result: JsonObject = {"output": term.text(), "truncated": term.truncated}
        if (status := term.exit_status) is not None:
            result["exitStatus"] = status
        return result

    async def wait_for_exit(self, params: JsonObject) -> JsonObject:
        term = self._get("wait_for_exit", params)
        await term.finish()
        return term.exit_status or {}

    async def kill(self, params: JsonObject) -> JsonObject:
        self._get("kill", params).kill()
        return {}

    async def release(self, params: JsonObject) -> JsonObject:
        term = self._get("release", params)
        if self.release_gate is not None:
            await self.release_gate.wait()
        term.kill()
        await term.finish()
        term.released = True
        del self._live[term.id]
        return {}

    async def close_all(self) -> None:
        """Kill and reap every terminal still alive (the client is closing)."""
        for term in list(self._live.values()):
            term.kill()
            await term.finish()
        self._live.clear()


class _LineWriter:
    """pygls' writer interface over the agent's stdin: one message per line."""

    def __init__(self, client: AcpTestClient) -> None:
        self._client = client

    def write(self, data: bytes) -> None:
        self._client._write_line(data)

    def close(self) -> None:
        return None


# ---------------------------------------------------------------- the client


class AcpTestClient(JsonRPCClient):
    """An ACP client driving one agent process (see the module docstring).

    `permission_policy` answers `session/request_permission`: a callable from the
    request params to an outcome (`allow_once`, `reject_once`, `selected(id)`, ...),
    or "queue" to hand each request to the test (`next_permission_request`).
    `missing_file` is how `fs/read_text_file` answers a missing file: "error"
    (-32002 resource not found) or "empty". `fs_root`, when given, confines fs/*
    to that directory. `default_timeout` bounds every wait without its own timeout.

    What the agent did is kept for assertions: `transcript` (every message, both
    ways), `updates()` / `text_of()`, `permission_requests` (and
    `max_open_permissions`), `files.calls`, `terminals.calls`, `elicitations`,
    `orphan_errors` (errors with id null, e.g. -32700), `violations`, `stderr_text`,
    `returncode`, `left_processes` (the agent exited leaving processes in its group).
    """

    def __init__(
        self,
        *,
        permission_policy: PermissionPolicy | Literal["queue"] = allow_once,
        missing_file: Literal["error", "empty", "internal"] = "error",
        fs_root: Path | None = None,
        unsaved_buffers: Mapping[str, str] | None = None,
        terminal_shell: bool = True,
        elicitation_policy: Callable[[JsonObject], JsonObject | Awaitable[JsonObject]]
        | None = None,
        cancel_answers_permissions: bool = True,
        default_timeout: float = 30.0,
        official_schema_check: bool = True,
    ) -> None:
        super().__init__(converter_factory=_plain_converter)
        schema_file = official_schema() if official_schema_check else None
        self.schema_check = TrafficCheck(schema_file) if schema_file is not None else None
        self.permission_policy = permission_policy
        self.elicitation_policy = elicitation_policy
        self.cancel_answers_permissions = cancel_answers_permissions
        self.default_timeout = default_timeout
        self.files = LocalFiles(
            root=fs_root, missing=missing_file, unsaved=unsaved_buffers, violation=self._violation
        )
        self.terminals = LocalTerminals(shell=terminal_shell)

        self.process: asyncio.subprocess.Process | None = None
        self.returncode: int | None = None
        self.advertised: JsonObject | None = None
        self.transcript: list[tuple[Literal["client", "agent"], JsonObject]] = []
        self.notifications: list[JsonObject] = []
        self.violations: list[str] = []
        self.orphan_errors: list[JsonObject] = []
        self.permission_requests: list[PermissionRequest] = []
        self.elicitations: list[JsonObject] = []
        self.cancel_requests_received: list[JsonObject] = []
        self.turn_usages: list[JsonObject | None] = []
        self.max_open_permissions = 0
        self.left_processes = False

        self._stderr = bytearray()
        self._ids = itertools.count(1)
        self._pending: dict[int | str, tuple[str, asyncio.Future[JsonObject]]] = {}
        self._abandoned: set[int | str] = set()
        self._waiters: list[tuple[Callable[[], Any], asyncio.Future[Any]]] = []
        self._updates: list[tuple[str, JsonObject]] = []
        self._permission_queue: deque[PermissionRequest] = deque()
        self._incoming: dict[Any, asyncio.Task[Any]] = {}
        self._cancel_on_start: set[Any] = set()
        self._events = itertools.count()
        self._tasks: list[asyncio.Task[None]] = []
        self._exited = asyncio.Event()
        self._closed = False
        self._register_client_methods()

    # ------------------------------------------------------------ lifecycle

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | Path | None = None,
        **options: Any,
    ) -> AcpTestClient:
        """Start `argv` and return a client connected to it (options: see the class)."""
        client = cls(**options)
        await client.start_io(*argv, env=env, cwd=cwd)
        return client

    async def start_io(  # type: ignore[override]
        self,
        cmd: str,
        *args: str,
        env: Mapping[str, str | None] | None = None,
        cwd: str | Path | None = None,
    ) -> None:
        """Start the agent. `env` overlays this process' environment (None removes a key)."""
        full_env = dict(os.environ) | AGENT_TEST_ENV
        for key, value in (env or {}).items():
            if value is None:
                full_env.pop(key, None)
            else:
                full_env[key] = value
        self.process = await asyncio.create_subprocess_exec(
            cmd,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=full_env,
            cwd=cwd,
            limit=STDOUT_LINE_LIMIT,
            start_new_session=True,
        )
        self._server = self.process
        self.protocol.set_writer(_LineWriter(self), include_headers=False)
        stdout_task = asyncio.create_task(self._read_stdout(), name="acp-stdout")
        stderr_task = asyncio.create_task(self._read_stderr(), name="acp-stderr")
        self._tasks = [stdout_task, stderr_task, asyncio.create_task(self._watch_exit(stdout_task))]
        logger.debug("started agent pid %s: %s", self.process.pid, [cmd, *args])

    async def close(
        self, *, exit_timeout: float = 10.0, expect_exit_code: int | None = 0, check: bool = True
    ) -> int | None:
        """Close stdin, wait for the agent to exit, clean up; returns its exit code.

        Fails (AssertionError) if the agent did not exit within `exit_timeout`
        (it is then killed), exited with another code than `expect_exit_code`
        (None: any), or broke the protocol at any point; `check=False` only logs.
        """
        if self._closed:
            return self.returncode
        self._closed = True
        problems: list[str] = []
        for request in self.permission_requests:
            request.cancel()
        try:
            if await self._end_process(exit_timeout):
                problems.append(f"the agent did not exit within {exit_timeout}s after stdin closed")
                expect_exit_code = None
        finally:
            await self.terminals.close_all()
            handlers = list(self._incoming.values())
            for task in handlers:
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)
            self._stop_event.set()
        if expect_exit_code is not None and self.returncode != expect_exit_code:
            problems.append(
                f"the agent exited with code {self.returncode}, expected {expect_exit_code}"
            )
        problems += [f"protocol violation: {v}" for v in self.violations]
        if problems:
            report = "\n".join(problems) + self.debug_tail()
            if check:
                raise AssertionError(report)
            logger.warning("%s", report)
        return self.returncode

    async def _end_process(self, exit_timeout: float) -> bool:
        """Close stdin and reap the agent; True if it had to be killed.

        Exit is watched through `returncode`, not `wait()`: on Python 3.11 `wait()`
        also waits for the pipes, which a process the agent left behind keeps open.
        """
        proc = self.process
        if proc is None:
            return False
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
            with contextlib.suppress(ConnectionError):
                await proc.stdin.wait_closed()
        killed = not await _exited_within(proc, exit_timeout)
        if killed:
            self._kill_group(proc.pid)
        else:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, 0)  # raises if the agent's process group is empty
                self.left_processes = True
                logger.warning("the agent left processes in its process group; killing them")
                self._kill_group(proc.pid)
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            self._violation(
                "the agent's stdout/stderr stay open: held by a process outside its group"
            )
        self.returncode = proc.returncode
        _done, pending = await asyncio.wait(self._tasks, timeout=5)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        return killed

    async def stop(self) -> None:
        """pygls / pytest-lsp teardown: the same as `close()`."""
        await self.close()

    async def __aenter__(self) -> AcpTestClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        try:
            await self.close()
        except AssertionError as problem:
            if exc is None:
                raise
            exc.add_note(f"while closing the agent: {problem}")

    @staticmethod
    def _kill_group(pid: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)

    # ------------------------------------------------------------ reading

    async def _read_stdout(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout
        while True:
            try:
                line = await stdout.readline()
            except ValueError as exc:
                self._violation(f"stdout line too long: {exc}")
                return
            if not line:
                return
            self._on_line(line)

    async def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        while chunk := await self.process.stderr.read(65536):
            self._stderr += chunk

    async def _watch_exit(self, stdout_task: asyncio.Task[None]) -> None:
        assert self.process is not None
        while self.process.returncode is None:
            await asyncio.sleep(0.02)
        # the lines still in the pipe are handled before we call the agent gone
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(stdout_task), 1.0)
        self.returncode = self.process.returncode
        self._exited.set()
        self._fail_all(
            AgentExited(f"the agent exited with code {self.returncode}{self.debug_tail()}")
        )
        self._pending.clear()

    def _fail_all(self, error: Exception) -> None:
        """Fail every pending request and wait (marked retrieved: a test may not await them)."""
        futures = [f for _m, f in self._pending.values()] + [f for _c, f in self._waiters]
        for future in futures:
            if not future.done():
                future.set_exception(error)
                future.exception()

    def _on_line(self, raw: bytes) -> None:
        if not raw.endswith(b"\n"):
            self._violation(f"stdout ended inside a line: {raw[:200]!r}")
        try:
            message = json.loads(raw)
        except ValueError:
            self._violation(f"stdout line is not JSON: {raw[:300]!r}")
            return
        if problem := check_jsonrpc(message):
            self._violation(f"stdout line is not JSON-RPC ({problem}): {raw[:300]!r}")
            return
        self.transcript.append(("agent", message))
        next(self._events)
        if self.schema_check is not None:
            entry = None if "method" in message else self._pending.get(message["id"])
            answered = entry[0] if entry is not None else None
            if problem := self.schema_check.agent_message(message, answered):
                self._violation(problem)
        if "method" in message:
            if "id" not in message:
                self.notifications.append(message)
            try:
                self.protocol.handle_message(self.protocol.structure_message(message))
            except Exception as exc:  # keep reading: report it as the agent's fault
                self._violation(f"cannot handle {message.get('method')!r}: {exc!r}")
        else:
            self._on_response(message)
        self._check_waiters()

    def _on_response(self, message: JsonObject) -> None:
        msg_id = message["id"]
        entry = self._pending.pop(msg_id, None) if msg_id is not None else None
        if entry is None:
            if msg_id is None:
                self.orphan_errors.append(message)
            elif msg_id not in self._abandoned:
                self._violation(f"response to an unknown request id {msg_id!r}")
            return
        method, future = entry
        if "result" in message and method in _RESULT_MODELS:
            if problem := _validation_problem(
                _RESULT_MODELS[method], message["result"], f"{method} result"
            ):
                self._violation(problem)
        if method == "session/prompt" and isinstance(message.get("result"), dict):
            message = self._usage_apart(message)
        if not future.done():
            future.set_result(message)

    def _usage_apart(self, message: JsonObject) -> JsonObject:
        """A prompt answer's `usage` (ACP unstable, checked against the schema above) is
        kept in `turn_usages` (None for an answer without it), so tests compare stop reasons
        alone; the transcript keeps the answer whole."""
        result = dict(message["result"])
        self.turn_usages.append(result.pop("usage", None))
        return {**message, "result": result}

    def _violation(self, text: str) -> None:
        logger.error("ACP violation by the agent: %s", text)
        self.violations.append(text)
        self._fail_all(AgentProtocolViolation(text))

    # ------------------------------------------------------------ writing

    def _write_line(self, data: bytes) -> None:
        proc = self.process
        if proc is None or proc.stdin is None or proc.stdin.is_closing():
            logger.debug("dropping a message to a closed agent: %.200r", data)
            return
        with contextlib.suppress(ValueError):
            sent = json.loads(data)
            self.transcript.append(("client", sent))
            if self.schema_check is not None and isinstance(sent, dict):
                self.schema_check.client_message(sent)
        proc.stdin.write(data + b"\n")

    def _send(self, message: JsonObject) -> None:
        if self._exited.is_set() or self._closed:
            raise AgentExited(f"the agent is gone (exit code {self.returncode}){self.debug_tail()}")
        data = json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False, separators=(",", ":"))
        self._write_line(data.encode())

    async def _drain(self) -> None:
        if self.process is not None and self.process.stdin is not None:
            with contextlib.suppress(ConnectionError):
                await self.process.stdin.drain()

    async def send_raw_line(self, data: bytes) -> None:
        """Write `data` to the agent's stdin as is (a newline is added if missing)."""
        proc = self.process
        if proc is None or proc.stdin is None:
            raise RuntimeError("the agent is not started")
        proc.stdin.write(data if data.endswith(b"\n") else data + b"\n")
        await self._drain()

    def begin(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        msg_id: int | str | None = None,
    ) -> PendingRequest:
        """Send a request without waiting; `msg_id` picks the id (default: 1, 2, 3...)."""
        request_id: int | str = msg_id if msg_id is not None else next(self._ids)
        if request_id in self._pending:
            raise ValueError(f"request id {request_id!r} is still pending")
        future: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        body = dict(params or {})
        self._pending[request_id] = (method, future)
        self._send({"id": request_id, "method": method, "params": body})
        return PendingRequest(request_id, method, body, self, future)

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> Any:
        """Send a request and return its result (AcpError for an error answer)."""
        pending = self.begin(method, params)
        await self._drain()
        return await pending.result(timeout)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification."""
        self._send({"method": method, "params": dict(params or {})})
        await self._drain()

    async def _await_future(self, future: asyncio.Future[T], timeout: float | None, what: str) -> T:
        limit = self.default_timeout if timeout is None else timeout
        try:
            return await asyncio.wait_for(asyncio.shield(future), limit)
        except TimeoutError:
            for key, (_method, pending) in list(self._pending.items()):
                if pending is future:
                    del self._pending[key]
                    self._abandoned.add(key)
            raise TimeoutError(f"waited {limit}s for {what}{self.debug_tail()}") from None

    # ------------------------------------------------------------ agent methods

    async def initialize(
        self,
        client_capabilities: Mapping[str, Any] | None = None,
        protocol_version: int = PROTOCOL_VERSION,
        *,
        client_info: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> JsonObject:
        """`initialize`. Default capabilities: fs read/write and terminals (plus
        elicitation when an `elicitation_policy` is set)."""
        if client_capabilities is None:
            caps: JsonObject = {
                "fs": {"readTextFile": True, "writeTextFile": True},
                "terminal": True,
            }
            if self.elicitation_policy is not None:
                caps["elicitation"] = {"form": {}}
        else:
            caps = dict(client_capabilities)
        self.advertised = caps
        params: JsonObject = {
            "protocolVersion": protocol_version,
            "clientCapabilities": caps,
            "clientInfo": dict(client_info or {"name": "acp-test-client", "version": "1.0.0"}),
        }
        if meta is not None:
            params["_meta"] = dict(meta)
        return await self.request("initialize", params, timeout=timeout)

    async def authenticate(
        self, method_id: str, meta: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> JsonObject:
        params: JsonObject = {"methodId": method_id}
        if meta is not None:
            params["_meta"] = dict(meta)
        return await self.request("authenticate", params, timeout=timeout)

    async def new_session(
        self,
        cwd: str | Path,
        mcp_servers: Sequence[Mapping[str, Any]] = (),
        additional_directories: Sequence[str | Path] | None = None,
        *,
        meta: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> JsonObject:
        """`session/new`; returns the result (`sessionId`, `modes`, `configOptions`...)."""
        params = self._session_params(cwd, mcp_servers, additional_directories, meta)
        return await self.request("session/new", params, timeout=timeout)

    async def load_session(
        self,
        session_id: str,
        cwd: str | Path,
        mcp_servers: Sequence[Mapping[str, Any]] = (),
        additional_directories: Sequence[str | Path] | None = None,
        *,
        timeout: float | None = None,
    ) -> JsonObject:
        params = self._session_params(cwd, mcp_servers, additional_directories, None)
        params["sessionId"] = session_id
        return await self.request("session/load", params, timeout=timeout)

    @staticmethod
    def _session_params(
        cwd: str | Path,
        mcp_servers: Sequence[Mapping[str, Any]],
        additional_directories: Sequence[str | Path] | None,
        meta: Mapping[str, Any] | None,
    ) -> JsonObject:
        params: JsonObject = {"cwd": str(cwd), "mcpServers": [dict(s) for s in mcp_servers]}
        if additional_directories is not None:
            params["additionalDirectories"] = [str(d) for d in additional_directories]
        if meta is not None:
            params["_meta"] = dict(meta)
        return params

    def start_prompt(
        self,
        session_id: str,
        blocks: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        meta: Mapping[str, Any] | None = None,
    ) -> PendingRequest:
        """Send `session/prompt` without waiting (for cancel tests). A str is one text block."""
        params: JsonObject = {"sessionId": session_id, "prompt": _blocks(blocks)}
        if meta is not None:
            params["_meta"] = dict(meta)
        return self.begin("session/prompt", params)

    async def prompt(
        self,
        session_id: str,
        blocks: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        meta: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> JsonObject:
        """One prompt turn; returns the result (`stopReason`). Updates: `updates()`."""
        pending = self.start_prompt(session_id, blocks, meta=meta)
        await self._drain()
        return await pending.result(timeout)

    async def cancel(self, session_id: str) -> None:
        """`session/cancel`; then, like editors do, answer this session's open
        permission requests with `cancelled` (unless `cancel_answers_permissions` is off)."""
        await self.notify("session/cancel", {"sessionId": session_id})
        if self.cancel_answers_permissions:
            for request in self.permission_requests:
                if request.session_id == session_id:
                    request.cancel()

    async def cancel_request(self, request_id: int | str) -> None:
        """`$/cancel_request {requestId}`."""
        await self.notify("$/cancel_request", {"requestId": request_id})

    async def set_mode(
        self, session_id: str, mode_id: str, *, timeout: float | None = None
    ) -> JsonObject:
        params = {"sessionId": session_id, "modeId": mode_id}
        return await self.request("session/set_mode", params, timeout=timeout)

    async def set_config_option(
        self, session_id: str, config_id: str, value: str | bool, *, timeout: float | None = None
    ) -> JsonObject:
        """`session/set_config_option`; a bool value is sent as a boolean option."""
        params: JsonObject = {"sessionId": session_id, "configId": config_id, "value": value}
        if isinstance(value, bool):
            params["type"] = "boolean"
        return await self.request("session/set_config_option", params, timeout=timeout)

    async def set_model(
        self, session_id: str, model_id: str, *, timeout: float | None = None
    ) -> JsonObject:
        """`session/set_model` (removed from the spec; some clients still send it)."""
        params = {"sessionId": session_id, "modelId": model_id}
        return await self.request("session/set_model", params, timeout=timeout)

    # ------------------------------------------------------------ observing

    def updates(self, session_id: str | None = None, kind: str | None = None) -> list[JsonObject]:
        """The `update` objects of `session/update`, in order, optionally filtered."""
        return [
            u
            for sid, u in self._updates
            if (session_id is None or sid == session_id)
            and (kind is None or u.get("sessionUpdate") == kind)
        ]

    def text_of(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        """The concatenated text of the session's message chunks of `kind`."""
        return "".join(
            u["content"].get("text", "")
            for u in self.updates(session_id, kind)
            if isinstance(u.get("content"), dict) and u["content"].get("type") == "text"
        )

    async def wait_for_update(
        self,
        predicate: Callable[[JsonObject], bool] = lambda u: True,
        *,
        session_id: str | None = None,
        since: int = 0,
        timeout: float | None = None,
    ) -> JsonObject:
        """The first update (of the session, from index `since`) matching `predicate`."""

        def check() -> JsonObject | None:
            return next((u for u in self.updates(session_id)[since:] if predicate(u)), None)

        return await self._wait(check, timeout, "a matching session/update")

    async def wait_for_message(
        self, predicate: Callable[[JsonObject], bool], *, timeout: float | None = None
    ) -> JsonObject:
        """The first message from the agent (any kind) matching `predicate`."""

        def check() -> JsonObject | None:
            return next((m for who, m in self.transcript if who == "agent" and predicate(m)), None)

        return await self._wait(check, timeout, "a matching message from the agent")

    async def next_permission_request(self, timeout: float | None = None) -> PermissionRequest:
        """Queue mode: the next permission request, for the test to answer."""

        def check() -> PermissionRequest | None:
            return self._permission_queue.popleft() if self._permission_queue else None

        return await self._wait(check, timeout, "a session/request_permission")

    @property
    def open_permissions(self) -> int:
        return sum(1 for r in self.permission_requests if r.closed is None)

    @property
    def stderr_text(self) -> str:
        return self._stderr.decode(errors="replace")

    def debug_tail(self, lines: int = 12) -> str:
        """The last messages and stderr lines, for failure messages."""
        last = [f"  {who}: {json.dumps(m)[:300]}" for who, m in self.transcript[-lines:]]
        err = self.stderr_text.splitlines()[-lines:]
        return "\n-- last messages:\n" + "\n".join(last) + "\n-- agent stderr:\n" + "\n".join(err)

    async def _wait(self, check: Callable[[], T | None], timeout: float | None, what: str) -> T:
        value = check()
        if value is not None:
            return value
        if self._exited.is_set():
            raise AgentExited(f"waiting for {what}: the agent exited with code {self.returncode}")
        if self.violations:
            raise AgentProtocolViolation(self.violations[0])
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        entry = (check, future)
        self._waiters.append(entry)
        try:
            return await self._await_future(future, timeout, what)
        finally:
            self._waiters.remove(entry)

    def _check_waiters(self) -> None:
        for check, future in list(self._waiters):
            if not future.done() and (value := check()) is not None:
                future.set_result(value)

    # ------------------------------------------------------------ client methods

    def _register_client_methods(self) -> None:
        # pygls tags handlers with attributes, which bound methods cannot carry
        self.feature("session/update")(lambda params: self._on_session_update(params))
        self.feature("$/cancel_request")(lambda params: self._on_cancel_request(params))

        async def request_permission(params: JsonObject) -> JsonObject:
            return await self._on_request_permission(params)

        self.feature("session/request_permission")(request_permission)
        served: dict[str, tuple[Any, Callable[[JsonObject], Any]]] = {
            "fs/read_text_file": (schema.ReadTextFileRequest, self.files.read),
            "fs/write_text_file": (schema.WriteTextFileRequest, self.files.write),
            "terminal/create": (schema.CreateTerminalRequest, self.terminals.create),
            "terminal/output": (schema.TerminalOutputRequest, self.terminals.output),
            "terminal/wait_for_exit": (
                schema.WaitForTerminalExitRequest,
                self.terminals.wait_for_exit,
            ),
            "terminal/kill": (schema.KillTerminalRequest, self.terminals.kill),
            "terminal/release": (schema.ReleaseTerminalRequest, self.terminals.release),
            "elicitation/create": (schema.CreateElicitationRequest, self._on_elicitation),
        }
        for method, (model, serve) in served.items():
            self.feature(method)(self._guarded(method, model, serve))

    def _on_session_update(self, params: JsonObject) -> None:
        update = params.get("update")
        kind = update.get("sessionUpdate") if isinstance(update, dict) else None
        if kind in _OPT_IN_UPDATES:  # newer than acp.schema: the official schema checks them
            session_caps = (self.advertised or {}).get("session") or {}
            if not isinstance(session_caps.get(_OPT_IN_UPDATES[kind]), dict):
                self._violation(f"{kind} sent, but session.{_OPT_IN_UPDATES[kind]} not advertised")
                return
        elif kind in _OPT_IN_TOP_UPDATES:
            if not isinstance((self.advertised or {}).get(_OPT_IN_TOP_UPDATES[kind]), dict):
                self._violation(f"{kind} sent, but {_OPT_IN_TOP_UPDATES[kind]} not advertised")
                return
        elif problem := _validation_problem(
            schema.SessionNotification, params, "session/update params"
        ):
            self._violation(problem)
            return
        self._updates.append((params["sessionId"], params["update"]))

    def _on_cancel_request(self, params: JsonObject) -> None:
        self.cancel_requests_received.append(params)
        request_id = params.get("requestId")
        task = self._incoming.get(request_id)
        if task is not None:
            task.cancel()  # pygls answers the cancelled request with -32800
        else:  # its handler has not started yet (both lines came in one read)
            self._cancel_on_start.add(request_id)

    def _track_incoming(self) -> Any:
        """Called first by every request handler: lets `$/cancel_request` reach it."""
        msg_id = self.protocol.msg_id
        if msg_id in self._cancel_on_start:
            self._cancel_on_start.discard(msg_id)
            raise asyncio.CancelledError
        task = asyncio.current_task()
        if task is not None:
            self._incoming[msg_id] = task
        return msg_id

    def _guarded(
        self,
        method: str,
        model: Any,
        serve: Callable[[JsonObject], Awaitable[JsonObject] | JsonObject],
    ) -> Callable[[JsonObject], Awaitable[Any]]:
        """A handler that checks the capability and the params of `method`, then serves."""

        async def handler(params: JsonObject) -> Any:
            msg_id = self._track_incoming()
            try:
                self._check_capability(method)
                if problem := _validation_problem(model, params, f"{method} params"):
                    self._violation(problem)
                    raise JsonRpcInvalidParams(problem)
                result = serve(params)
                return await result if inspect.isawaitable(result) else result
            finally:
                self._incoming.pop(msg_id, None)

        return handler

    def _check_capability(self, method: str) -> None:
        caps = self.advertised or {}
        if not _CAPABILITY_OF[method](caps):
            self._violation(f"the agent called {method}, which the client did not advertise")
            raise JsonRpcMethodNotFound.of(method)

    async def _on_request_permission(self, params: JsonObject) -> JsonObject:
        msg_id = self._track_incoming()
        if problem := _validation_problem(
            schema.RequestPermissionRequest, params, "permission params"
        ):
            self._violation(problem)
            raise JsonRpcInvalidParams(problem)
        request = PermissionRequest(params=params, opened=next(self._events))
        self.permission_requests.append(request)
        self.max_open_permissions = max(self.max_open_permissions, self.open_permissions)
        try:
            if self.permission_policy == "queue":
                self._permission_queue.append(request)
                self._check_waiters()
            else:
                answer = self.permission_policy(params)
                request.answer(await answer if inspect.isawaitable(answer) else answer)
            request.outcome = await request._future
            meta = {"_meta": request.meta} if request.meta is not None else {}
            return {"outcome": request.outcome, **meta}
        finally:
            request.closed = next(self._events)
            self._incoming.pop(msg_id, None)

    async def _on_elicitation(self, params: JsonObject) -> JsonObject:
        self.elicitations.append(params)
        if self.elicitation_policy is None:
            raise JsonRpcMethodNotFound.of("elicitation/create")
        answer = self.elicitation_policy(params)
        return await answer if inspect.isawaitable(answer) else answer

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls reports handler errors here; they were answered as JSON-RPC errors."""
        if not isinstance(error, JsonRpcException):
            logger.warning("client-side handler failed: %r", error)
