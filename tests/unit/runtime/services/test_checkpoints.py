"""Checkpoints: the shadow repository and the checkpoint files (Gemini CLI's
checkpointing), on a real git in a temp folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.services.checkpoints import (
    CheckpointError,
    Checkpoints,
    checkpointing_enabled,
    checkpoints_for,
)


def test_the_setting_as_gemini_cli_reads_it() -> None:
    assert checkpointing_enabled({"general": {"checkpointing": {"enabled": True}}})
    assert checkpointing_enabled({"checkpointing": {"enabled": True}})  # the older place
    assert not checkpointing_enabled({"general": {"checkpointing": {"enabled": False}}})
    assert not checkpointing_enabled({"general": {"checkpointing": {"enabled": "yes"}}})
    assert not checkpointing_enabled({})
    on = {"general": {"checkpointing": {"enabled": True}}}
    assert checkpoints_for(on, None, Path("/w"), {}) is None  # not recorded: none
    assert checkpoints_for({}, Path("/s"), Path("/w"), {}) is None


async def test_snapshot_and_restore_are_byte_exact_and_leave_the_users_git(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "HEAD").write_bytes(b"ref: refs/heads/mine\n")
    (ws / ".gitattributes").write_text("* text=auto eol=lf\n")
    (ws / "a.txt").write_bytes(b"one\r\ntwo\r\n")
    (ws / "run.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(ws / "run.sh", 0o755)
    checkpoints = Checkpoints(tmp_path / "store", ws, dict(os.environ))
    name = await checkpoints.save("write_file", {"file_path": "a.txt"}, "s1", "m1")
    assert name.endswith("-a.txt-write_file")
    (ws / "a.txt").write_bytes(b"changed\n")
    (ws / "later.txt").write_text("later\n")
    (ws / "run.sh").unlink()

    checkpoint = checkpoints.load(name)
    assert (checkpoint.session_id, checkpoint.message_id) == ("s1", "m1")
    undo = await checkpoints.restore_files(checkpoint)
    assert (ws / "a.txt").read_bytes() == b"one\r\ntwo\r\n"
    assert not (ws / "later.txt").exists()
    assert os.stat(ws / "run.sh").st_mode & 0o777 == 0o755
    assert (ws / ".git" / "HEAD").read_bytes() == b"ref: refs/heads/mine\n"
    assert sorted(os.listdir(ws / ".git")) == ["HEAD"]
    assert checkpoints.names() == sorted([name, undo])

    await checkpoints.restore_files(checkpoints.load(undo))  # the restore undone
    assert (ws / "later.txt").read_text() == "later\n"
    assert (ws / "a.txt").read_bytes() == b"changed\n"


def test_bad_names_and_broken_files_are_errors(tmp_path: Path) -> None:
    checkpoints = Checkpoints(tmp_path / "store", tmp_path, {})
    for bad in ("../x", "a/b", "", "nope"):
        with pytest.raises(CheckpointError):
            checkpoints.load(bad)
    checkpoints.folder.mkdir(parents=True)
    (checkpoints.folder / "broken.json").write_text("{not json")
    (checkpoints.folder / "wrong.json").write_text('{"toolCall": {}, "commitHash": "--help"}')
    for name in ("broken", "wrong"):
        with pytest.raises(CheckpointError):
            checkpoints.load(name)
