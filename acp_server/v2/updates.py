"""ACP v2's session updates and permission requests, made from the v1 ones the agent's
sessions send (`acp_server.updates`): one `V2Updates` per v2 connection.

- message chunks carry a `messageId`: one per run of chunks of a kind (a tool call or
  another message between two runs starts a new message); `user_message` and
  `state_update` are v2's own (`user_message`, `state`) and pass as they are;
- a v1 `tool_call` (create) and `tool_call_update` are both a v2 `tool_call_update`
  upsert; a v1 diff (`path`, `oldText`, `newText`) is a v2 diff: its change (`add` or
  `modify`) and a git patch with absolute paths;
- a v1 `plan` is a v2 `plan_update` (items) of the plan v1 names in its `_meta`: the
  todo list `todos`, Plan mode's plan file `plan:<file>` (its checklist);
- `available_commands_update` entries are typed `command`; config options name their
  id `configId`; `current_mode_update` is not sent (v2 has no modes: the mode is a
  config option);
- a notice (v1: agent text marked `_meta.adkAcp.notice`) is v2's `notice`;
- a compression is v1's `compaction_update` (the connection opts in to it), whose shape
  is v2's: its id, `completed` and the summary; so is a subagent's `subagent_update`
  (the child session's id, title, task as its description, `running` or `idle` with
  the stop reason), its own updates under the child's id;
- `session/request_permission` carries a `title` and its tool call as a `subject`.
"""

from __future__ import annotations

import difflib
import uuid
from typing import Any

PLAN_ID = "todos"
"""The id of the plan a v1 `plan` update (the todo list) is in v2."""

PASSED = frozenset(
    {
        "session_info_update",
        "usage_update",
        "notice",
        "user_message",
        "state_update",
        "compaction_update",
        "subagent_update",
    }
)
"""Update kinds whose v1 shape is v2's (or that only v2 sends)."""

_CHUNK_KINDS = {
    "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought",
    "user_message_chunk": "user",
}


def new_message_id() -> str:
    return uuid.uuid4().hex


def config_options_v2(options: Any) -> Any:
    """v1 config options (`id`) as v2's (`configId`)."""
    if not isinstance(options, list):
        return options
    return [
        {("configId" if k == "id" else k): v for k, v in o.items()} if isinstance(o, dict) else o
        for o in options
    ]


def commands_v2(commands: Any) -> Any:
    """v1 commands typed `command`, their input typed `text`."""
    if not isinstance(commands, list):
        return commands
    return [_command(c) if isinstance(c, dict) else c for c in commands]


def _command(command: dict[str, Any]) -> dict[str, Any]:
    shown = {"type": "command", **command}
    if isinstance(command.get("input"), dict):
        shown["input"] = {"type": "text", **command["input"]}
    return shown


def git_patch(path: str, old: str | None, new: str) -> str:
    """A `diff --git` section (absolute paths, no `a/`/`b/` prefixes) from `old` to `new`."""
    before = "/dev/null" if old is None else path
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=before,
        tofile=path,
    )
    head = f"diff --git {path} {path}\n" + ("new file mode 100644\n" if old is None else "")
    body = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    return head + body


def content_v2(item: Any) -> Any:
    """One v1 tool-call content item in v2's shape (diffs change; the rest is the same)."""
    if not isinstance(item, dict) or item.get("type") != "diff":
        return item
    path, old, new = item.get("path", ""), item.get("oldText"), item.get("newText", "")
    diff: dict[str, Any] = {
        "type": "diff",
        "changes": [{"operation": "add" if old is None else "modify", "path": path}],
        "patch": {"format": "git_patch", "text": git_patch(path, old, new)},
    }
    if item.get("_meta") is not None:
        diff["_meta"] = item["_meta"]
    return diff


def tool_call_v2(update: dict[str, Any]) -> dict[str, Any]:
    """A v1 tool call (create or update) as a v2 `tool_call_update` upsert (no `sessionUpdate`)."""
    call = {k: v for k, v in update.items() if k != "sessionUpdate"}
    if isinstance(call.get("content"), list):
        call["content"] = [content_v2(c) for c in call["content"]]
    return call


class V2Updates:
    """The v2 form of one connection's updates (message ids are per session)."""

    def __init__(self) -> None:
        self._runs: dict[str, tuple[str, str]] = {}
        """Per session: the kind of the last chunk run and its message id."""

    def start_turn(self, session_id: str) -> None:
        """A new prompt: the agent's next chunk starts a new message."""
        self._runs.pop(session_id, None)

    def update(self, session_id: str, update: dict[str, Any]) -> dict[str, Any] | None:
        """The v2 update for a v1 one; None when v2 has no such update."""
        kind = update.get("sessionUpdate")
        if kind in PASSED:
            if kind == "user_message":
                self._runs.pop(session_id, None)
            return update
        if kind == "agent_message_chunk" and (notice := _notice(update)) is not None:
            return notice
        if kind in _CHUNK_KINDS:
            return {**update, "messageId": self._message_id(session_id, _CHUNK_KINDS[kind])}
        self._runs.pop(session_id, None)
        if kind in ("tool_call", "tool_call_update"):
            return {"sessionUpdate": "tool_call_update", **tool_call_v2(update)}
        if kind == "plan":
            plan = {
                "type": "items",
                "planId": _plan_id(update),
                "entries": update.get("entries", []),
            }
            return {"sessionUpdate": "plan_update", "plan": plan}
        if kind == "available_commands_update":
            return {**update, "availableCommands": commands_v2(update.get("availableCommands"))}
        if kind == "config_option_update":
            return {**update, "configOptions": config_options_v2(update.get("configOptions"))}
        return None  # current_mode_update, and v1's opt-in kinds v2 does not have

    def _message_id(self, session_id: str, kind: str) -> str:
        run = self._runs.get(session_id)
        if run is None or run[0] != kind:
            run = (kind, new_message_id())
            self._runs[session_id] = run
        return run[1]


def _plan_id(update: dict[str, Any]) -> str:
    """The id v1 gives a plain plan (`_meta.adkAcp.planId`), else the todo list's."""
    meta = update.get("_meta")
    ours = meta.get("adkAcp") if isinstance(meta, dict) else None
    plan_id = ours.get("planId") if isinstance(ours, dict) else None
    return plan_id if isinstance(plan_id, str) and plan_id else PLAN_ID


def _notice(update: dict[str, Any]) -> dict[str, Any] | None:
    """A notice v1 sends as marked agent text (`updates.notice_meta`) as v2's `notice`: its
    first line the title; the whole text stays in `_meta`."""
    meta = update.get("_meta")
    ours = meta.get("adkAcp") if isinstance(meta, dict) else None
    notice = ours.get("notice") if isinstance(ours, dict) else None
    if not isinstance(notice, dict) or not str(notice.get("text", "")).strip():
        return None
    title = str(notice["text"]).strip().partition("\n")[0].strip()
    severity = (
        notice.get("level") if notice.get("level") in ("info", "warning", "error") else "info"
    )
    return {"sessionUpdate": "notice", "severity": severity, "title": title, "_meta": meta}


def permission_request_v2(params: dict[str, Any]) -> dict[str, Any]:
    """A v1 `session/request_permission` in v2's shape: a title and a tool-call subject."""
    tool_call = params.get("toolCall")
    call = tool_call_v2(tool_call) if isinstance(tool_call, dict) else {}
    asked: dict[str, Any] = {
        "sessionId": params.get("sessionId"),
        "title": call.get("title") or "Allow this action?",
        "options": params.get("options", []),
    }
    if call.get("toolCallId") is not None:
        asked["subject"] = {"type": "tool_call", "toolCall": call}
    if params.get("_meta") is not None:
        asked["_meta"] = params["_meta"]
    return asked
