"""acp_server/convert.py: prompt content blocks → runtime content parts, by plain calls
with a host that offers nothing (files are read from disk)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from acp_server import schema
from acp_server.convert import prompt_to_parts, uri_to_path
from acp_server.errors import INVALID_PARAMS, AcpError
from runtime.host import HeadlessHost
from runtime.protocol import MediaPart, ReferencePart, TextPart

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()


async def convert(blocks: list[object], root: Path) -> tuple[object, ...]:
    return await prompt_to_parts(list(blocks), (root,), HeadlessHost())


async def test_text_and_images_pass_through(tmp_path: Path) -> None:
    parts = await convert(
        [
            schema.TextContentBlock(type="text", text="hi"),
            schema.ImageContentBlock(type="image", data=PNG, mime_type="image/png"),
        ],
        tmp_path,
    )
    assert parts == (TextPart(text="hi"), MediaPart(data=PNG, mime_type="image/png"))


async def test_bad_base64_and_audio_and_an_empty_prompt_are_invalid_params(
    tmp_path: Path,
) -> None:
    for blocks in (
        [schema.ImageContentBlock(type="image", data="not base64!", mime_type="image/png")],
        [schema.AudioContentBlock(type="audio", data=PNG, mime_type="audio/wav")],
        [],
    ):
        with pytest.raises(AcpError) as caught:
            await convert(blocks, tmp_path)
        assert caught.value.code == INVALID_PARAMS


async def test_a_mentioned_file_is_read_into_the_context(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("remember this\n", encoding="utf-8")
    link = schema.ResourceContentBlock(
        type="resource_link", name="notes.md", uri=(tmp_path / "notes.md").as_uri()
    )
    [part] = await convert([link], tmp_path)
    assert part == ReferencePart(
        text="remember this\n", uri=str(tmp_path / "notes.md"), mime_type="text/plain"
    )


async def test_a_mention_outside_the_workspace_or_missing_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.txt").write_text("x", encoding="utf-8")
    for name in ("secret.txt", "ws/missing.txt"):
        link = schema.ResourceContentBlock(
            type="resource_link", name=name, uri=(tmp_path / name).as_uri()
        )
        with pytest.raises(AcpError) as caught:
            await convert([link], tmp_path / "ws")
        assert caught.value.code == INVALID_PARAMS


async def test_a_non_file_link_is_named_not_read(tmp_path: Path) -> None:
    link = schema.ResourceContentBlock(
        type="resource_link", name="page", uri="https://example.com/page"
    )
    [part] = await convert([link], tmp_path)
    assert isinstance(part, TextPart) and "not a local file" in part.text


async def test_an_embedded_resource_brings_its_own_text(tmp_path: Path) -> None:
    block = schema.EmbeddedResourceContentBlock(
        type="resource",
        resource=schema.TextResourceContents(uri="file:///w/a.py", text="print(1)"),
    )
    [part] = await convert([block], tmp_path)
    assert part == ReferencePart(text="print(1)", uri="file:///w/a.py", mime_type="text/plain")


def test_uri_to_path() -> None:
    assert uri_to_path("file:///w/a%20b.py") == Path("/w/a b.py")
    assert uri_to_path("/w/c.py") == Path("/w/c.py")
    assert uri_to_path("https://example.com") is None
