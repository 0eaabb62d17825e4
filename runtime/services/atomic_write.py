"""The one atomic file write: a temp file in the target's directory, then
`os.replace`, so a reader sees the old file or the new one, never a part of it.
Used by the session index, saved credentials, policy rules the user allowed, and
the tools' file writes (which keep the file's mode and owner)."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)


def write_atomically(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    owner: tuple[int, int] | None = None,
    durable: bool = True,
) -> None:
    """Replace `path` with `data` atomically. `mode`: the new file's permission bits
    (set before any byte is written); `owner`: (uid, gid) to keep, where allowed;
    `durable`: fsync before the replace. The temp file is removed on failure."""
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    replaced = False
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if owner is not None and owner != (os.geteuid(), os.getegid()):
            try:
                os.chown(tmp_name, *owner)
            except PermissionError as exc:
                logger.debug("cannot keep the owner of %s: %s", path, exc)
        os.replace(tmp_name, path)
        replaced = True
    finally:
        if not replaced:
            Path(tmp_name).unlink(missing_ok=True)
