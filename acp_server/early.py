"""`session/new` answered before the server has loaded (the cold path of an editor that
opens a thread right after `initialize`, as Zed and `acpx exec` do).

While the loader thread imports pygls and ADK (~2 s on a small machine),
a well-formed `session/new` that follows `initialize` is answered from here with
only the standard library and the light parts of `runtime`: the workspace is checked,
credentials and settings resolved, a session id chosen, and the modes and config
options returned as the engine will have them. The engine session behind that id is
built as soon as the server is up (`handlers.sessions.open_early`), before any later line is
handled, so a prompt simply waits for it. Anything unusual (MCP entries of a shape not
checked here, bad settings) is left to the full handler, which answers with the proper
error; missing credentials are answered here with the auth-required error (-32000), as
the server would (registry probes and editors without a key get it at once).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from acp_server.stdio import Output


@dataclass(frozen=True)
class EarlySession:
    """A `session/new` already answered: the id given out and the request's params."""

    session_id: str
    params: dict[str, Any]
    refused: bool = False
    """Answered with the auth-required error: there is no session to build."""
    method: str = "session/new"
    """Or `session/load`, `session/resume` (`early_reopen.py`): the engine is opened
    from the record."""


def _directory(raw: Any) -> Path | None:
    """The workspace check of every `session/new` (`runtime.workspace`); None: the
    server answers with the error."""
    from runtime.workspace import WorkspaceError, workspace_dir

    if not isinstance(raw, str):
        return None
    try:
        return workspace_dir(raw)
    except WorkspaceError:
        return None


def _plain_servers(entries: Any) -> bool:
    """MCP entries of the plain shapes (stdio with command, or http/sse with url)."""
    if not isinstance(entries, list):
        return False
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            return False
        if entry.get("type") in ("http", "sse"):
            if not isinstance(entry.get("url"), str) or not isinstance(entry.get("headers"), list):
                return False
        elif not (
            isinstance(entry.get("command"), str)
            and isinstance(entry.get("args"), list)
            and isinstance(entry.get("env"), list)
        ):
            return False
    return True


def plain_request(
    line: bytes, methods: tuple[str, ...], keys: frozenset[str] = frozenset()
) -> tuple[str | int, str, dict[str, Any], Path] | None:
    """(id, method, params, checked cwd) of a well-formed request of one of `methods`
    whose params are `cwd`, plain `mcpServers`, existing `additionalDirectories`,
    `_meta` and `keys`; None for anything else (left to the server)."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("method") not in methods:
        return None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return None
    params = message.get("params")
    if message.get("jsonrpc") != "2.0" or not isinstance(params, dict):
        return None
    if set(params) - {"cwd", "mcpServers", "additionalDirectories", "_meta"} - keys:
        return None
    cwd = _directory(params.get("cwd"))
    extra = params.get("additionalDirectories")
    if cwd is None or not _plain_servers(params.get("mcpServers")):
        return None
    if extra is not None and (
        not isinstance(extra, list) or any(_directory(d) is None for d in extra)
    ):
        return None
    return request_id, message["method"], params, cwd


def answer_session_new(
    line: bytes, output: Output, flags: Any, env: dict[str, str]
) -> EarlySession | None:
    """Answer `line` if it is a plain `session/new`; None leaves it to the server."""
    plain = plain_request(line, ("session/new",))
    if plain is None:
        return None
    request_id, _, params, cwd = plain
    from acp_server.config_options import ConfigOptions
    from acp_server.errors import from_runtime
    from runtime.config import resolve_auth, resolve_config
    from runtime.errors import AuthRequiredError, RuntimeAgentError

    try:
        config = resolve_config(cwd, flags, env=env)
    except RuntimeAgentError:
        config = None
    try:  # another provider's model needs no Google credentials
        model = config.model if config is not None else None
        resolve_auth(env, fake_responses=flags.fake_responses, model=model)
    except AuthRequiredError as exc:  # what the server would answer, without waiting for it
        error = from_runtime(exc).to_dict()
        output.send({"jsonrpc": "2.0", "id": request_id, "error": error})
        return EarlySession(session_id="", params=params, refused=True)
    if config is None:
        return None
    view = SimpleNamespace(mode=config.approval_mode, model_choice=config.model)
    options = ConfigOptions()
    session_id = uuid.uuid4().hex
    result = {
        "sessionId": session_id,
        "modes": options.modes(view),  # type: ignore[arg-type]
        "configOptions": options.options(view),  # type: ignore[arg-type]
    }
    output.send({"jsonrpc": "2.0", "id": request_id, "result": result})
    return EarlySession(session_id=session_id, params=params)
