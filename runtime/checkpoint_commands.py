"""The checkpoint side of the slash commands (design: slash commands outside the
protocol layer; Gemini CLI's `/restore` and its checkpointing).

`/restore` lists the workspace's checkpoints, `/restore <name>` brings back the files
as they were before that edit and, when the checkpoint is this session's, the
conversation as it was before the prompt whose turn made the edit (the record cannot
end on a call without its answer, so the prompt goes too; Gemini CLI keeps the
history up to the call and proposes the call again). `/rewind` asks the user, as the
editor's other questions, whether the files edited in the rewound exchanges go back
too (`offer_file_restore`).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from runtime.errors import RuntimeAgentError
from runtime.host import PermissionOption, PermissionRequest
from runtime.protocol import DisplayText, ToolLocation
from runtime.services.checkpoints import Checkpoint, CheckpointError
from runtime.services.record import is_typed_prompt

if TYPE_CHECKING:
    from runtime.services.recording import Message
    from runtime.session import AgentSession

NOT_ENABLED = (
    "Checkpointing is not enabled. Enable it in your settings "
    '(`"general": {"checkpointing": {"enabled": true}}`) to use /restore.'
)
RESTORE_FILES = "restore_files"
KEEP_FILES = "keep_files"


async def restore(session: AgentSession, args: str) -> str:
    """`/restore [name]` (or `/restore list`): the answer to show."""
    checkpoints = session.checkpoints
    if checkpoints is None:
        return NOT_ENABLED
    if args.strip() in ("", "list"):  # Gemini CLI's `/restore list` too
        names = checkpoints.names()
        if not names:
            return "No checkpoints yet: one is made before each approved file edit."
        listed = "\n".join(f"- `{name}`" for name in names)
        return f"Checkpoints (restore one with `/restore <name>`):\n{listed}"
    try:
        checkpoint = checkpoints.load(args)
        undo = await checkpoints.restore_files(checkpoint)
    except CheckpointError as exc:
        return f"Nothing was restored: {exc}."
    lines = [
        f"Restored the workspace's files to before `{checkpoint.tool_name}` "
        f"on `{checkpoint.file_path}`."
    ]
    lines.append(await _conversation(session, checkpoint))
    lines.append(f"The files as they were before this restore are checkpoint `{undo}`.")
    return "\n".join(lines)


async def _conversation(session: AgentSession, checkpoint: Checkpoint) -> str:
    if checkpoint.session_id != session.id or checkpoint.message_id is None:
        return "The conversation is unchanged (the checkpoint is from another session)."
    try:
        removed = await session.rewind_to(checkpoint.message_id)
    except RuntimeAgentError as exc:
        return f"The conversation is unchanged: {exc}."
    if not removed:
        return "The conversation is unchanged (it was already before that point)."
    prompts = sum(1 for m in removed if is_typed_prompt(m))
    return f"The conversation went back to before that prompt ({prompts} exchange(s) removed)."


async def offer_file_restore(session: AgentSession, removed: list[Message]) -> str:
    """After `/rewind` dropped `removed`: when checkpoints were made in those
    exchanges, the user is asked whether the files go back too. The sentence to add
    to the answer ("" when there was nothing to offer)."""
    checkpoints = session.checkpoints
    if checkpoints is None:
        return ""
    prompts = {str(m["id"]) for m in removed if is_typed_prompt(m)}
    made: list[Checkpoint] = []
    for name in checkpoints.names():
        try:
            checkpoint = checkpoints.load(name)
        except CheckpointError:
            continue
        if checkpoint.session_id == session.id and checkpoint.message_id in prompts:
            made.append(checkpoint)
    if not made:
        return ""
    first = made[0]  # the oldest: the files before the rewound exchanges' first edit
    edited = sorted({c.file_path for c in made if c.file_path})
    request = PermissionRequest(
        tool_call_id=f"rewind-{uuid.uuid4().hex[:8]}",
        title="Restore the files edited in the rewound exchanges too?",
        kind="edit",
        options=(
            PermissionOption(RESTORE_FILES, "Restore the files", "allow_once"),
            PermissionOption(KEEP_FILES, "Keep the files as they are", "reject_once"),
        ),
        locations=tuple(ToolLocation(path=str(session.config.workspace / p)) for p in edited),
        raw_input={"checkpoint": first.name},
        content=(DisplayText(text="Edited: " + ", ".join(edited)),),
    )
    outcome = await session.host.request_permission(request)
    if outcome.option_id != RESTORE_FILES:
        return "The files were kept as they are."
    try:
        undo = await checkpoints.restore_files(first)
    except CheckpointError as exc:
        return f"The files could not be restored: {exc}."
    return (
        f"The files were restored to before checkpoint `{first.name}` "
        f"(the state before this restore is checkpoint `{undo}`)."
    )
