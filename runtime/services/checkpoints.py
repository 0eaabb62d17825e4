"""Checkpoints (Gemini CLI's checkpointing: its GitService and checkpoint files).

With `general.checkpointing.enabled` (or the older top-level `checkpointing.enabled`)
set in the settings, the workspace is snapshotted before each approved edit
(`write_file`, `replace`) runs: a commit in a shadow git repository that is not the
user's (its git folder is ours, its work tree the workspace; the user's `.git` is
never read nor written, its global and system git configuration never used), and a
JSON file beside it with the tool call, the commit and the conversation position
(the session and the record id of the turn's prompt). Both live in the session
store's folder of the workspace (`<sessions dir>/<project>/history/` and
`.../checkpoints/`), where Gemini CLI uses `~/.gemini/history/<project>` and its
project temp dir. Files are stored byte for byte (`$GIT_DIR/info/attributes` turns
every text conversion and filter off, over any `.gitattributes` of the workspace).
Restoring first snapshots the current state (itself a checkpoint, so a restore can
be undone), then brings back the snapshot's files and removes the files it did not
have (ignored files are never touched).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runtime.child_pipes import run_child
from runtime.services.atomic_write import write_atomically

logger = logging.getLogger(__name__)

AUTHOR = ("adk-acp", "adk-acp@localhost")
GIT_TIMEOUT_S = 300.0
_NAME = re.compile(r"^[\w.\-]+$")
_COMMIT = re.compile(r"^[0-9a-f]{7,64}$")
_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding -diff\n"
_LOCKS: dict[Path, asyncio.Lock] = {}  # one git command at a time per shadow repository


def checkpointing_enabled(settings: dict[str, Any]) -> bool:
    """`general.checkpointing.enabled`, or the older `checkpointing.enabled`."""
    general = settings.get("general")
    for section in (general if isinstance(general, dict) else {}, settings):
        checkpointing = section.get("checkpointing")
        if isinstance(checkpointing, dict) and "enabled" in checkpointing:
            return checkpointing.get("enabled") is True
    return False


class CheckpointError(Exception):
    """A checkpoint could not be made, read or restored (its message says why)."""


@dataclass(frozen=True)
class Checkpoint:
    """One saved checkpoint: its name (the file's, without `.json`) and its data."""

    name: str
    tool_name: str
    args: dict[str, Any]
    commit: str
    session_id: str | None
    message_id: str | None

    @property
    def file_path(self) -> str:
        value = self.args.get("file_path")
        return value if isinstance(value, str) else ""


class ShadowGit:
    """The shadow repository: git folder `repo`, work tree `workspace`."""

    def __init__(self, repo: Path, workspace: Path, env: dict[str, str]) -> None:
        self.repo = repo
        self.workspace = workspace
        self._env = {k: v for k, v in env.items() if not k.startswith("GIT_")} | {
            "GIT_DIR": str(repo / ".git"),
            "GIT_WORK_TREE": str(workspace),
            "GIT_CONFIG_GLOBAL": str(repo / ".gitconfig"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": AUTHOR[0],
            "GIT_AUTHOR_EMAIL": AUTHOR[1],
            "GIT_COMMITTER_NAME": AUTHOR[0],
            "GIT_COMMITTER_EMAIL": AUTHOR[1],
        }

    async def _git(self, *args: str) -> str:
        try:
            done = await run_child(
                ("git", *args), cwd=self.workspace, env=self._env, timeout_s=GIT_TIMEOUT_S
            )
        except TimeoutError as exc:  # before OSError, its base class
            raise CheckpointError(f"git {args[0]} took over {GIT_TIMEOUT_S:.0f} s") from exc
        except OSError as exc:
            raise CheckpointError(f"git could not be started ({exc}); is git installed?") from exc
        if done.returncode != 0:
            detail = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
            raise CheckpointError(f"git {args[0]} failed: {detail}")
        out = done.stdout
        return out.decode(errors="replace").strip()

    async def _ensure(self) -> None:
        if (self.repo / ".git" / "HEAD").is_file():
            return
        self.repo.mkdir(parents=True, exist_ok=True, mode=0o700)
        config = "[commit]\n\tgpgsign = false\n[core]\n\tautocrlf = false\n"
        (self.repo / ".gitconfig").write_text(config, encoding="utf-8")
        await self._git("init", "--quiet", "--template=", "--initial-branch=main")
        info = self.repo / ".git" / "info"
        info.mkdir(exist_ok=True)
        (info / "attributes").write_text(_ATTRIBUTES, encoding="utf-8")
        await self._git("commit", "--quiet", "--allow-empty", "--no-verify", "-m", "Initial")

    async def snapshot(self, message: str) -> str:
        """Commits the workspace as it is; the commit's hash (HEAD when nothing changed)."""
        async with _LOCKS.setdefault(self.repo, asyncio.Lock()):
            await self._ensure()
            await self._git("add", "--all", ".")
            if await self._git("status", "--porcelain"):
                await self._git("commit", "--quiet", "--no-verify", "-m", message)
            return await self._git("rev-parse", "HEAD")

    async def restore(self, commit: str) -> None:
        """The work tree as in `commit` (run after a snapshot: nothing unsaved is lost)."""
        async with _LOCKS.setdefault(self.repo, asyncio.Lock()):
            await self._git("cat-file", "-e", f"{commit}^{{tree}}")
            await self._git("restore", "--source", commit, "--worktree", "--staged", ".")
            await self._git("clean", "--quiet", "-f", "-d")


class Checkpoints:
    """A workspace's checkpoints: the shadow repository and the checkpoint files, in
    `folder` (the session store's folder of the workspace)."""

    def __init__(self, folder: Path, workspace: Path, env: dict[str, str]) -> None:
        self.folder = folder / "checkpoints"
        self.git = ShadowGit(folder / "history", workspace, env)

    async def save(
        self, tool_name: str, args: dict[str, Any], session_id: str, message_id: str | None
    ) -> str:
        """Snapshots the workspace before `tool_name` runs; the checkpoint's name."""
        commit = await self.git.snapshot(f"Snapshot for {tool_name}")
        now = datetime.now(UTC)
        stamp = now.strftime("%Y-%m-%dT%H-%M-%S_") + f"{now.microsecond // 1000:03d}Z"
        base = Path(str(args.get("file_path") or "workspace")).name or "workspace"
        stem = re.sub(r"[^\w.\-]", "_", f"{stamp}-{base}-{tool_name}")
        name, n = stem, 1
        while (self.folder / f"{name}.json").exists():
            n += 1
            name = f"{stem}-{n}"
        data = {
            "toolCall": {"name": tool_name, "args": args},
            "commitHash": commit,
            "messageId": message_id,
            "sessionId": session_id,
        }
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
        await asyncio.to_thread(
            write_atomically, self.folder / f"{name}.json", text.encode(), durable=False
        )
        return name

    def names(self) -> list[str]:
        """Every checkpoint's name, oldest first."""
        if not self.folder.is_dir():
            return []
        return sorted(p.name.removesuffix(".json") for p in self.folder.glob("*.json"))

    def load(self, name: str) -> Checkpoint:
        name = name.strip().removesuffix(".json")
        if not _NAME.match(name) or name in (".", ".."):
            raise CheckpointError(f"`{name}` is not a checkpoint name")
        path = self.folder / f"{name}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise CheckpointError(f"no checkpoint named `{name}`") from exc
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"the checkpoint `{name}` cannot be read: {exc}") from exc
        call = data.get("toolCall") if isinstance(data, dict) else None
        commit = data.get("commitHash") if isinstance(data, dict) else None
        if not isinstance(call, dict) or not isinstance(commit, str) or not _COMMIT.match(commit):
            raise CheckpointError(f"the checkpoint `{name}` is invalid or corrupted")
        args = call.get("args")
        return Checkpoint(
            name=name,
            tool_name=str(call.get("name") or ""),
            args=args if isinstance(args, dict) else {},
            commit=commit,
            session_id=_str(data.get("sessionId")),
            message_id=_str(data.get("messageId")),
        )

    async def restore_files(self, checkpoint: Checkpoint) -> str:
        """The workspace's files as `checkpoint` saw them; returns the name of the
        checkpoint made of the state before the restore (to undo it)."""
        undo = await self.save("restore", {"file_path": "before-restore"}, "", None)
        await self.git.restore(checkpoint.commit)
        return undo


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def checkpoints_for(
    settings: dict[str, Any], store_folder: Path | None, workspace: Path, env: dict[str, str]
) -> Checkpoints | None:
    """The session's checkpoints when enabled and the session is recorded, else None."""
    if not checkpointing_enabled(settings):
        return None
    if store_folder is None:
        logger.info("checkpointing is enabled but the session is not recorded: no checkpoints")
        return None
    return Checkpoints(store_folder, workspace, dict(env or os.environ))
