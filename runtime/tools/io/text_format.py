"""How a text file's bytes become text and back (the byte-preservation seam of `FileAccess`).

An edit must keep every byte it does not change, so the decoding used for an edit
is a bijection on the file it reads:

- a byte-order mark names the encoding (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE), and
  is written back; bytes after it that do not decode strictly are refused;
- no BOM and valid UTF-8: UTF-8;
- no BOM, not UTF-8: a legacy 8-bit file, decoded as cp1252 when every byte is
  defined there, else as latin-1 (both map each byte to one character, so the
  bytes outside an edit come back exactly); a file that is mostly UTF-8 with a few
  stray bytes is refused instead of being shown as mojibake.

Line endings and the final newline are facts of the text (they apply through the
editor's fs too): new text takes the line ending of the place it goes, and an
edit keeps whether the file ends with a line break.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from runtime.errors import ToolError


class UnsupportedEncodingError(ToolError):
    """The file's bytes cannot be decoded and encoded back unchanged: it is not edited."""

    error_type = "unsupported_encoding"


class UnencodableTextError(ToolError):
    """The new text has characters the file's encoding cannot hold."""

    error_type = "unencodable_text"


@dataclass(frozen=True)
class TextFormat:
    """How a file's text is stored: the codec (a Python codec name), its BOM, a label."""

    codec: str
    bom: bytes = b""
    label: str = "UTF-8"


UTF8 = TextFormat("utf-8")
"""New files, and files without a BOM that are valid UTF-8."""

_BOM_FORMATS: tuple[TextFormat, ...] = (
    TextFormat("utf-8", b"\xef\xbb\xbf", "UTF-8 with BOM"),
    TextFormat("utf-32-le", b"\xff\xfe\x00\x00", "UTF-32 LE"),
    TextFormat("utf-32-be", b"\x00\x00\xfe\xff", "UTF-32 BE"),
    TextFormat("utf-16-le", b"\xff\xfe", "UTF-16 LE"),
    TextFormat("utf-16-be", b"\xfe\xff", "UTF-16 BE"),
)
_CP1252 = TextFormat("cp1252", label="cp1252 (Windows-1252)")
_LATIN1 = TextFormat("latin-1", label="latin-1 (ISO-8859-1)")


def bom_format(head: bytes) -> TextFormat | None:
    """The format a byte-order mark at the start of `head` names, if any."""
    for fmt in _BOM_FORMATS:
        if head.startswith(fmt.bom):
            return fmt
    return None


def decode_exact(data: bytes) -> tuple[str, TextFormat]:
    """The text and format of a file, such that `encode(text, format) == data`.

    Raises UnsupportedEncodingError (message without the path) when no such
    decoding is known."""
    fmt = bom_format(data[:4])
    if fmt is not None:
        body = data[len(fmt.bom) :]
        try:
            return body.decode(fmt.codec), fmt
        except UnicodeDecodeError as exc:
            at = exc.start + len(fmt.bom)
            raise UnsupportedEncodingError(
                f"it starts with a {fmt.label} byte-order mark, but byte {at} "
                f"is not valid {fmt.label}"
            ) from None
    try:
        return data.decode("utf-8"), UTF8
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    if _mostly_utf8(data):
        raise UnsupportedEncodingError(
            f"it is UTF-8 with bytes that are not UTF-8 (the first at byte {first_bad}), "
            "so no encoding reads it and writes it back unchanged"
        )
    try:
        return data.decode(_CP1252.codec), _CP1252
    except UnicodeDecodeError:
        return data.decode(_LATIN1.codec), _LATIN1


_ASCII = bytes(range(0x80))
_BELOW_LEAD = bytes(range(0xC0))


def _mostly_utf8(data: bytes) -> bool:
    """True when well-formed UTF-8 multi-byte characters are at least as many as the
    stray bytes (a UTF-8 file with a few bad bytes, not a legacy 8-bit one)."""
    well_formed = data.decode("utf-8", errors="ignore").encode("utf-8")
    stray = len(data.translate(None, _ASCII)) - len(well_formed.translate(None, _ASCII))
    wide = len(well_formed.translate(None, _BELOW_LEAD))  # one lead byte per character
    return wide >= stray


def decode_lenient(data: bytes) -> str:
    """Text for reading: the exact decoding when there is one, else UTF-8 (or the BOM's
    codec) with undecodable bytes replaced."""
    try:
        return decode_exact(data)[0]
    except UnsupportedEncodingError:
        fmt = bom_format(data[:4]) or UTF8
        return data[len(fmt.bom) :].decode(fmt.codec, errors="replace")


def encode(text: str, fmt: TextFormat) -> bytes:
    """The bytes of `text` in `fmt` (BOM included); UnencodableTextError names the first
    character the encoding cannot hold (message without the path)."""
    try:
        return fmt.bom + text.encode(fmt.codec)
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start]
        line = exc.object.count("\n", 0, exc.start) + 1
        raise UnencodableTextError(
            f"it is encoded as {fmt.label}, which cannot hold the character {bad!r} "
            f"(U+{ord(bad):04X}, line {line} of the new text); use characters {fmt.label} "
            "can hold, or ask the user to convert the file"
        ) from None


# ------------------------------------------------------------ line endings

_BREAK = re.compile(r"\r\n|\r|\n")


def dominant_ending(text: str) -> str | None:
    """The most frequent line break of `text` ("\\n" wins ties), None without any."""
    crlf = text.count("\r\n")
    lone_cr = text.count("\r") - crlf
    lone_lf = text.count("\n") - crlf
    if crlf == lone_cr == lone_lf == 0:
        return None
    counts = ((lone_lf, "\n"), (crlf, "\r\n"), (lone_cr, "\r"))
    return max(counts, key=lambda pair: pair[0])[1]


def with_ending(text: str, ending: str | None) -> str:
    """`text` with every line break written as `ending` (unchanged when None)."""
    return text if ending is None else _BREAK.sub(ending, text)


def ends_with_break(text: str) -> bool:
    return text.endswith(("\n", "\r"))


def keep_final_newline(text: str, had: bool, ending: str | None) -> str:
    """`text` ending with a line break exactly when the file it replaces did (`had`).

    Empty text stays empty."""
    if not text:
        return text
    if had and not ends_with_break(text):
        return text + (ending or "\n")
    if not had and ends_with_break(text):
        return text.rstrip("\r\n")
    return text


def conform(new_text: str, previous: str | None, ending: str | None = None) -> str:
    """New text for a file whose text was `previous` (None: a new file): its line breaks
    written as `ending` (default: `previous`'s dominant one), and its final line break
    as `previous` had it. A new or empty file takes the text as given."""
    if not previous:
        return new_text
    ending = ending or dominant_ending(previous)
    return keep_final_newline(with_ending(new_text, ending), ends_with_break(previous), ending)
