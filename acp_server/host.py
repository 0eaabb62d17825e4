"""The runtime's Host interface, implemented with client requests.

One `AcpHost` per session. It calls only what the client advertised in
`initialize` (`fs.readTextFile`, `fs.writeTextFile`, `terminal`, `elicitation`).
Contract for file reads: a client answering -32002 (resource not found) or an
error whose message says the file does not exist raises FileNotFoundError.

The `editReview` extension (issue 36): a client declaring
`clientCapabilities._meta.adkAcp.editReview` is told, in an edit's question
(`_meta.adkAcp.editReview.path`), which proposed file the user may change; an allowing
answer may carry the user's version in `_meta.adkAcp.editReview` (`path`, `content`).
Other clients get and give exactly what they did before.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException

from acp_server.errors import RESOURCE_NOT_FOUND
from acp_server.fallback import ask_fallback
from acp_server.updates import META_KEY, permission_params
from runtime.errors import HostRequestError
from runtime.host import (
    TERMINAL_STOP_WAIT_S,
    FallbackChoice,
    FallbackIntent,
    Host,
    HostCapabilities,
    PermissionOutcome,
    PermissionRequest,
    TerminalExit,
    TerminalHandle,
    TerminalOutput,
    TerminalRequest,
    stop_terminal,
    wait_through_cancel,
)

if TYPE_CHECKING:
    from acp_server.transport import ClientLink

logger = logging.getLogger(__name__)

ABANDONED_TERMINAL_WAIT_S = 5.0
"""How long a cancelled call waits for the editor's terminal id, to stop that terminal."""

_NOT_FOUND_WORDS = ("not found", "no such file", "does not exist", "enoent")


EDIT_REVIEW = "editReview"
"""The extension's key under `_meta.adkAcp` (capabilities, question, answer)."""


def _ours(meta: Any) -> dict[str, Any]:
    """`_meta.adkAcp` of a message (empty when absent or not an object)."""
    ours = meta.get(META_KEY) if isinstance(meta, dict) else None
    return ours if isinstance(ours, dict) else {}


def capabilities_from(client_caps: dict[str, Any] | None) -> HostCapabilities:
    caps = client_caps or {}
    fs_caps = caps.get("fs")
    fs: dict[str, Any] = fs_caps if isinstance(fs_caps, dict) else {}
    return HostCapabilities(
        read_text_file=bool(fs.get("readTextFile")),
        write_text_file=bool(fs.get("writeTextFile")),
        terminal=bool(caps.get("terminal")),
        elicitation=bool(caps.get("elicitation")),
        edit_review=_ours(caps.get("_meta")).get(EDIT_REVIEW) is True,
    )


def users_version(request: PermissionRequest, result: dict[str, Any]) -> str | None:
    """The user's version of the proposed file in an allowing answer (`editReview`), or
    None. A version for another file, or not text, is an error of the editor
    (HostRequestError): nothing is written rather than the wrong thing."""
    review = _ours(result.get("_meta")).get(EDIT_REVIEW)
    if review is None:
        return None
    content = review.get("content") if isinstance(review, dict) else None
    if not isinstance(content, str):
        raise HostRequestError(
            "the editor's answer carries _meta.adkAcp.editReview without a text `content`"
        )
    if review.get("path") != request.modifiable:
        raise HostRequestError(
            f"the editor's answer carries the user's version of {review.get('path')!r}, "
            f"but the proposed file is {request.modifiable!r}"
        )
    return content


class AcpTerminal(TerminalHandle):
    def __init__(self, host: AcpHost, terminal_id: str) -> None:
        self._host = host
        self.terminal_id = terminal_id

    def _params(self) -> dict[str, Any]:
        return {"sessionId": self._host.session_id, "terminalId": self.terminal_id}

    async def wait_for_exit(self) -> TerminalExit:
        result = await self._host.conn.request("terminal/wait_for_exit", self._params()) or {}
        return TerminalExit(exit_code=result.get("exitCode"), signal=result.get("signal"))

    async def output(self) -> TerminalOutput:
        result = await self._host.conn.request("terminal/output", self._params()) or {}
        status = result.get("exitStatus")
        exit_ = (
            TerminalExit(exit_code=status.get("exitCode"), signal=status.get("signal"))
            if status
            else None
        )
        return TerminalOutput(
            output=result.get("output", ""), truncated=bool(result.get("truncated")), exit=exit_
        )

    async def kill(self) -> None:
        await self._host.conn.request("terminal/kill", self._params())

    async def release(self) -> None:
        await self._host.conn.request("terminal/release", self._params())


class AcpHost(Host):
    """Host for one session, speaking to the editor through the connection `conn`."""

    def __init__(
        self, conn: ClientLink, session_id: str, client_caps: dict[str, Any] | None
    ) -> None:
        self.conn = conn
        self.session_id = session_id
        self.capabilities = capabilities_from(client_caps)
        self._client_caps = client_caps
        self._cleanups: set[asyncio.Task[None]] = set()

    async def request_permission(self, request: PermissionRequest) -> PermissionOutcome:
        """The editor's choice. An error answer raises HostRequestError: the scheduler
        then ends the call `failed` (the question was never answered)."""
        params = permission_params(self.session_id, request)
        reviewable = self.capabilities.edit_review and request.modifiable is not None
        if reviewable:
            params["_meta"] = {META_KEY: {EDIT_REVIEW: {"path": request.modifiable}}}
        try:
            result = await self.conn.request("session/request_permission", params)
        except JsonRpcException as exc:
            raise HostRequestError(
                f"the editor answered the permission request with error {exc.code}: "
                f"{exc.message or 'no message'}"
            ) from exc
        outcome = (result or {}).get("outcome") or {}
        if outcome.get("outcome") == "selected" and isinstance(outcome.get("optionId"), str):
            chosen = next((o for o in request.options if o.option_id == outcome["optionId"]), None)
            if chosen is not None:
                allowed = chosen.kind.startswith("allow")
                modified = users_version(request, result or {}) if reviewable and allowed else None
                return PermissionOutcome(option_id=chosen.option_id, modified=modified)
            reject = next((o.option_id for o in request.options if o.kind == "reject_once"), None)
            logger.warning(
                "client chose an unknown option %r; treating it as a rejection", outcome["optionId"]
            )
            return PermissionOutcome(option_id=reject)
        return PermissionOutcome(option_id=None)

    async def read_text_file(
        self, path: Path, line: int | None = None, limit: int | None = None
    ) -> str:
        if not self.capabilities.read_text_file:
            return await super().read_text_file(path, line, limit)
        params: dict[str, Any] = {"sessionId": self.session_id, "path": str(path)}
        if line is not None:
            params["line"] = line
        if limit is not None:
            params["limit"] = limit
        try:
            result = await self.conn.request("fs/read_text_file", params)
        except JsonRpcException as exc:
            if exc.code == RESOURCE_NOT_FOUND or any(
                w in (exc.message or "").lower() for w in _NOT_FOUND_WORDS
            ):
                raise FileNotFoundError(str(path)) from exc
            raise OSError(f"the editor could not read {path}: {exc.message}") from exc
        return str((result or {}).get("content", ""))

    async def write_text_file(self, path: Path, content: str) -> None:
        if not self.capabilities.write_text_file:
            return await super().write_text_file(path, content)
        try:
            await self.conn.request(
                "fs/write_text_file",
                {"sessionId": self.session_id, "path": str(path), "content": content},
            )
        except JsonRpcException as exc:
            raise OSError(f"the editor could not write {path}: {exc.message}") from exc

    async def create_terminal(self, request: TerminalRequest) -> TerminalHandle:
        if not self.capabilities.terminal:
            return await super().create_terminal(request)
        params: dict[str, Any] = {
            "sessionId": self.session_id,
            "command": request.command,
            "args": list(request.args),
            "env": [{"name": k, "value": v} for k, v in request.env.items()],
        }
        if request.cwd is not None:
            params["cwd"] = str(request.cwd)
        if request.output_byte_limit is not None:
            params["outputByteLimit"] = request.output_byte_limit
        created = asyncio.ensure_future(self.conn.request("terminal/create", params))
        try:
            result = await asyncio.shield(created)
        except asyncio.CancelledError:
            # Its own task, so a second cancel of this call cannot stop the cleanup;
            # waited for (through such a cancel, boundedly), so the turn answers
            # `cancelled` after the terminal was released.
            cleanup = asyncio.get_running_loop().create_task(self._discard_abandoned(created))
            self._cleanups.add(cleanup)
            cleanup.add_done_callback(self._cleanups.discard)
            await wait_through_cancel(cleanup, ABANDONED_TERMINAL_WAIT_S + TERMINAL_STOP_WAIT_S)
            raise
        return AcpTerminal(self, str((result or {})["terminalId"]))

    async def _discard_abandoned(self, created: asyncio.Future[Any]) -> None:
        """A cancel came while the editor was creating a terminal: once it answers, kill
        and release that terminal, so no command runs on that nobody waits for."""
        try:
            result = await asyncio.wait_for(asyncio.shield(created), ABANDONED_TERMINAL_WAIT_S)
        except TimeoutError:
            logger.info("terminal/create still unanswered after a cancel; it is left to the editor")
            return
        except (JsonRpcException, OSError) as exc:
            logger.info("terminal/create failed after a cancel: %s", exc)
            return
        await stop_terminal(AcpTerminal(self, str((result or {})["terminalId"])), kill=True)

    async def choose_fallback(self, choice: FallbackChoice) -> FallbackIntent:
        return await ask_fallback(self, choice)

    def for_subagent(self, session_id: str) -> Host:
        """A client that follows subagents (`clientCapabilities.subagents`) is asked in
        the subagent's own session; another in this one."""
        if isinstance((self._client_caps or {}).get("subagents"), dict):
            return AcpHost(self.conn, session_id, self._client_caps)
        return self
