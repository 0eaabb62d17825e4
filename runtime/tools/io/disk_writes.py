"""Local writes that keep what a file was (the local half of `FileAccess` writing),
and one writer per path across the process.

`write_bytes_keeping` replaces a file atomically (temp file, then `os.replace`)
keeping its mode and, where allowed, its owner; it rewrites in place when the
directory is read-only, and refuses a read-only file. `writer_lock` serializes an
edit's read-to-write span per resolved path for every session of the process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat as stat_module
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

from runtime.errors import ToolError
from runtime.services.atomic_write import write_atomically

logger = logging.getLogger(__name__)


class ReadOnlyFileError(ToolError):
    """The file is read-only for the user: an edit does not rewrite it."""

    error_type = "read_only"


def _default_file_mode() -> int:
    """0o666 minus the umask, read without changing it (os.umask is process-wide)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except OSError as exc:
        logger.debug("cannot read the umask from /proc: %s", exc)
    return 0o644


def atomic_write_text(path: Path, content: str) -> None:
    """Write `content` as UTF-8 to `path` with `write_bytes_keeping`."""
    write_bytes_keeping(path, content.encode("utf-8"))  # fails before anything is written


def check_writable(target: Path) -> None:
    """Raises ReadOnlyFileError when `target` exists without a write bit or write access."""
    try:
        st = target.stat()
    except FileNotFoundError:
        return
    mode = stat_module.S_IMODE(st.st_mode)
    if mode & 0o222 == 0 or not os.access(target, os.W_OK):
        raise ReadOnlyFileError(
            f"{target} is read-only (mode {mode:04o}), so it was not changed. "
            "Ask the user to make it writable if it should change."
        )


def _dir_writable(directory: Path) -> bool:
    try:
        mode = stat_module.S_IMODE(directory.stat().st_mode)
    except OSError:
        return False
    return mode & 0o222 != 0 and os.access(directory, os.W_OK | os.X_OK)


def write_bytes_keeping(path: Path, data: bytes) -> None:
    """Write `data` to `path` on the local disk, keeping what the file was.

    A symlink is written through (its target changes, the link stays). A read-only
    file raises ReadOnlyFileError. An existing file keeps its permission bits (and,
    where allowed, its owner); it is replaced atomically (a temp file in the same
    directory, then `os.replace`), or rewritten in place when its directory is
    read-only. A new file gets 0o666 minus the umask, parents created.
    """
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        st: os.stat_result | None = target.stat()
    except FileNotFoundError:
        st = None
    if st is not None and stat_module.S_ISREG(st.st_mode):
        check_writable(target)
        if not _dir_writable(target.parent):
            _write_in_place(target, data)
            return
    _replace_atomically(target, data, st)


def _write_in_place(target: Path, data: bytes) -> None:
    with open(target, "r+b") as handle:
        handle.truncate(0)
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _replace_atomically(target: Path, data: bytes, st: os.stat_result | None) -> None:
    mode = stat_module.S_IMODE(st.st_mode) if st is not None else _default_file_mode()
    owner = (st.st_uid, st.st_gid) if st is not None else None
    write_atomically(target, data, mode=mode, owner=owner)


# ------------------------------------------------------------ one writer per path


class _WriterLocks:
    """Process-wide: one asyncio lock per resolved path, dropped when nobody holds or waits."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, path: Path) -> AsyncIterator[None]:
        key = os.path.realpath(path)
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


_WRITERS = _WriterLocks()


def writer_lock(path: Path) -> AbstractAsyncContextManager[None]:
    """Held from an edit's read to its write, so writers of one file (any session of this
    process) take turns and each sees the one before."""
    return _WRITERS.hold(path)
