"""FileAccess: the one way tools read and write files (what `ToolEnv.files` holds).

Routing, decided once per session from the Host's capabilities:

- `host.capabilities.read_text_file` → reads go through `Host.read_text_file`, so
  the model sees the editor's unsaved buffers;
- `host.capabilities.write_text_file` → writes go through `Host.write_text_file`,
  so the editor builds its review from the write;
- otherwise the local disk (`disk_writes`): atomic writes (a temp file in the same
  directory, then `os.replace`) keeping the file's mode and owner, in place when the
  directory is read-only; a read-only file is refused; parents are created.

Edits (`read_for_edit` → `write_edit`) keep every byte they do not change: the
local bytes are decoded exactly and encoded back in the same format
(`text_format`: BOM, UTF-8/16/32, legacy 8-bit); a file with no exact decoding,
or new text its encoding cannot hold, is refused. Through the editor the editor
owns the bytes. `writer_lock` gives one writer per path across the process.

Listing, searching and existence checks always use the local disk: the editor has
no listing API.

Contract for the Host implementer (`acp_server/host.py`):

- Whether a file exists is decided from the local disk before the editor is
  asked: a file missing on disk raises `FileNotFoundError` without a request
  (the official clients answer a missing file with -32603, Zed with empty text),
  and tools treat it as "no such file" (`write_file` / `replace` then create it).
  `read_text_file(path)` may still raise `FileNotFoundError` (the file vanished
  in between); FileAccess lets it through unchanged.
- Any other exception from the host (a `CapabilityNotOffered`, a JSON-RPC error,
  a lost connection) propagates; tools report it to the model as a failed call.
- `write_text_file(path, content)` writes the whole content; FileAccess creates
  missing parent directories on the local disk first.

Paths given to FileAccess must be absolute and already resolved with
`runtime.tools.io.paths.resolve_in_roots`; a relative path is a programming error
(`ValueError`), since the process working directory means nothing here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat as stat_module
from dataclasses import dataclass
from pathlib import Path

from runtime.errors import PathOutsideWorkspaceError, ToolError
from runtime.host import Host
from runtime.tools.io.disk_writes import (
    ReadOnlyFileError,
    atomic_write_text,
    check_writable,
    write_bytes_keeping,
    writer_lock,
)
from runtime.tools.io.text_format import (
    UTF8,
    TextFormat,
    UnencodableTextError,
    UnsupportedEncodingError,
    bom_format,
    decode_exact,
    decode_lenient,
    encode,
)

__all__ = [
    "MAX_FILE_BYTES",
    "BinaryFileError",
    "DirEntry",
    "EditableText",
    "FileAccess",
    "FileTooLargeError",
    "ReadOnlyFileError",
    "atomic_write_text",
    "decode_text",
    "looks_binary",
    "writer_lock",
]

logger = logging.getLogger(__name__)

MAX_FILE_BYTES = 20 * 1024 * 1024
"""Files larger than this are refused by `read_text` (Gemini CLI's 20 MB limit)."""

_SNIFF_BYTES = 4096


class BinaryFileError(ToolError):
    """The file holds binary data, not text."""

    error_type = "binary_file"


class FileTooLargeError(ToolError):
    """The file is larger than the read limit."""

    error_type = "file_too_large"


@dataclass(frozen=True)
class EditableText:
    """A file's text as an edit starts from it. `format` says how the local bytes hold
    it (None when the editor writes: the editor owns the bytes)."""

    text: str
    format: TextFormat | None


@dataclass(frozen=True)
class DirEntry:
    """One entry of a directory listing (symlinks are judged by their target)."""

    name: str
    path: Path
    is_dir: bool
    size: int
    mtime: float


def looks_binary(head: bytes) -> bool:
    """True when a file's first bytes look binary: a NUL byte, or >30% control bytes.

    Text with a UTF-16/32 byte-order mark is not binary.
    """
    if not head or bom_format(head) is not None:
        return False
    if b"\x00" in head:
        return True
    control = sum(1 for b in head if b < 9 or 13 < b < 32)
    return control / len(head) > 0.3


def decode_text(data: bytes) -> str:
    """Decode file bytes for reading: the same decoding edits use (`text_format`), or
    UTF-8 with bad bytes replaced when the file has no exact one."""
    return decode_lenient(data)


def _require_absolute(path: Path) -> Path:
    if not path.is_absolute():
        raise ValueError(f"FileAccess needs an absolute, resolved path, got '{path}'")
    return path


class FileAccess:
    """Reads and writes text files for one session, through the editor when it offers `fs`.

    `read_text` raises `FileNotFoundError` (missing), `IsADirectoryError`,
    `BinaryFileError` and `FileTooLargeError` (both `ToolError`s with a message
    fit for the model). `write_text` raises `OSError` on local failures and lets
    host errors through.
    """

    def __init__(self, host: Host | None = None, *, max_file_bytes: int = MAX_FILE_BYTES) -> None:
        caps = host.capabilities if host is not None else None
        self._host = host
        self._read_via_host = bool(caps and caps.read_text_file)
        self._write_via_host = bool(caps and caps.write_text_file)
        self._max_file_bytes = max_file_bytes

    @property
    def reads_through_editor(self) -> bool:
        return self._read_via_host

    @property
    def writes_through_editor(self) -> bool:
        return self._write_via_host

    # ------------------------------------------------------------ reading

    async def read_text(self, path: Path) -> str:
        """The file's whole text. See the class docstring for the errors."""
        _require_absolute(path)
        local = await asyncio.to_thread(self._local_precheck, path)
        if local is None:
            # Missing is decided from the disk, never from the editor's answer: real
            # clients answer a missing file with -32603 (or, like Zed, empty text).
            raise FileNotFoundError(f"File not found: {path}")
        if self._read_via_host and self._host is not None:
            text = await self._host.read_text_file(path)
            if "\x00" in text[:_SNIFF_BYTES]:
                raise BinaryFileError(f"Cannot read binary file as text: {path}")
            if len(text) > self._max_file_bytes:
                raise FileTooLargeError(self._too_large_message(path, len(text)))
            return text
        return await asyncio.to_thread(self._read_local, path)

    def _local_precheck(self, path: Path) -> os.stat_result | None:
        """Refuse directories, huge and binary files seen on disk; None when absent."""
        try:
            st = path.stat()
        except FileNotFoundError:
            return None
        if stat_module.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"Path is a directory, not a file: {path}")
        if st.st_size > self._max_file_bytes:
            raise FileTooLargeError(self._too_large_message(path, st.st_size))
        if not stat_module.S_ISREG(st.st_mode):
            raise ToolError(f"Not a regular file (a device, socket or pipe): {path}")
        if st.st_nlink > 1:
            # Another name for the same file may lie outside the workspace: treated as outside.
            raise PathOutsideWorkspaceError(
                f"{path} has {st.st_nlink} hard links; a hard-linked file counts as outside "
                "the workspace and is not read"
            )
        with open(path, "rb") as handle:
            if looks_binary(handle.read(_SNIFF_BYTES)):
                raise BinaryFileError(f"Cannot read binary file as text: {path}")
        return st

    def _read_local(self, path: Path) -> str:
        return decode_text(self._read_bytes(path))

    def _too_large_message(self, path: Path, size: int) -> str:
        limit_mb = self._max_file_bytes / (1024 * 1024)
        size_mb = size / (1024 * 1024)
        return f"File is too large to read ({size_mb:.1f} MB, limit {limit_mb:g} MB): {path}"

    # ------------------------------------------------------------ writing

    async def write_text(self, path: Path, content: str) -> None:
        """Write the whole `content` (UTF-8), creating parent directories."""
        await self.write_edit(path, content, None)

    # ------------------------------------------------------------ editing

    async def read_for_edit(self, path: Path) -> EditableText | None:
        """The text an edit starts from (None: no such file), read like `read_text`.

        Locally the bytes are decoded exactly (`text_format.decode_exact`), so writing
        the text back gives the same bytes; a file without such a decoding raises
        UnsupportedEncodingError. Through the editor, the editor's text; its format
        comes from the disk only when writes are local."""
        _require_absolute(path)
        if await asyncio.to_thread(self._local_precheck, path) is None:
            return None
        if self._read_via_host and self._host is not None:
            text = await self.read_text(path)
            if self._write_via_host:
                return EditableText(text, None)
            data = await asyncio.to_thread(self._read_bytes, path)
            return EditableText(text, self._exact(path, data)[1])
        data = await asyncio.to_thread(self._read_bytes, path)
        text, fmt = self._exact(path, data)
        return EditableText(text, fmt)

    @staticmethod
    def _exact(path: Path, data: bytes) -> tuple[str, TextFormat]:
        try:
            return decode_exact(data)
        except UnsupportedEncodingError as exc:
            raise UnsupportedEncodingError(
                f"Cannot edit {path}: {exc}. Editing it would change bytes the edit does "
                "not touch, so it is left as it is."
            ) from None

    def _read_bytes(self, path: Path) -> bytes:
        with open(path, "rb") as handle:
            data = handle.read(self._max_file_bytes + 1)
        if len(data) > self._max_file_bytes:
            raise FileTooLargeError(self._too_large_message(path, len(data)))
        return data

    async def check_writable(self, path: Path) -> None:
        """Raises ReadOnlyFileError when `path` exists and the user cannot (or chose not
        to) write it: no write bit, or no write access."""
        _require_absolute(path)
        await asyncio.to_thread(check_writable, Path(os.path.realpath(path)))

    async def write_edit(self, path: Path, text: str, fmt: TextFormat | None) -> None:
        """Write an edit's whole text: through the editor when it writes (it owns the
        bytes), else locally as `fmt` (UTF-8 for a new file) with `write_bytes_keeping`.
        Raises UnencodableTextError before anything is written."""
        _require_absolute(path)
        if self._write_via_host and self._host is not None:
            await asyncio.to_thread(check_writable, Path(os.path.realpath(path)))
            await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
            await self._host.write_text_file(path, text)
            return
        data = self.encoded(path, text, fmt)
        await asyncio.to_thread(write_bytes_keeping, path, data)

    @staticmethod
    def encoded(path: Path, text: str, fmt: TextFormat | None) -> bytes:
        """`text` as `fmt` (UTF-8 when None); UnencodableTextError names the path."""
        try:
            return encode(text, fmt or UTF8)
        except UnencodableTextError as exc:
            raise UnencodableTextError(
                f"Cannot write {path}: {exc}. Nothing was written."
            ) from None

    # ------------------------------------------------------------ local facts

    async def exists(self, path: Path) -> bool:
        """Whether anything exists at `path` on the local disk."""
        _require_absolute(path)
        return await asyncio.to_thread(os.path.lexists, path)

    async def is_dir(self, path: Path) -> bool:
        _require_absolute(path)
        return await asyncio.to_thread(os.path.isdir, path)

    async def list_dir(self, path: Path) -> list[DirEntry]:
        """The entries of a directory on the local disk (unsorted). Raises OSError."""
        _require_absolute(path)
        return await asyncio.to_thread(_list_dir, path)


def _list_dir(path: Path) -> list[DirEntry]:
    entries: list[DirEntry] = []
    with os.scandir(path) as scan:
        for entry in scan:
            try:
                st = entry.stat(follow_symlinks=True)
            except OSError:
                st = entry.stat(follow_symlinks=False)  # a dangling symlink
            entries.append(
                DirEntry(
                    name=entry.name,
                    path=Path(entry.path),
                    is_dir=stat_module.S_ISDIR(st.st_mode),
                    size=st.st_size,
                    mtime=st.st_mtime,
                )
            )
    return entries
