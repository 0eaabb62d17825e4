"""web_fetch against a local aiohttp server on 127.0.0.1 (never the internet)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web

from runtime.tools.builtin.html_text import html_to_text
from runtime.tools.builtin.web_fetch import WebFetchTool, extract_urls
from tests.unit.runtime.tools.fakes import make_env

PAGE = """<!doctype html><html><head><title>Docs  page</title>
<style>body { color: red }</style><script>var secret = 1;</script></head>
<body><h1>Install</h1><p>Run <code>pip install x</code>
now.</p><ul><li>one</li><li>two</li></ul><pre>a  b
c</pre></body></html>"""


def _static(
    response_factory: Callable[[], web.StreamResponse],
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handler(request: web.Request) -> web.StreamResponse:
        return response_factory()

    return handler


RELEASE = web.AppKey("release", asyncio.Event)


async def _slow(request: web.Request) -> web.Response:
    await request.app[RELEASE].wait()  # until the test ends
    return web.Response(text="late")


async def _redirect(request: web.Request) -> web.Response:
    raise web.HTTPFound("/plain")


@pytest.fixture
async def server() -> AsyncIterator[str]:
    app = web.Application()
    app[RELEASE] = asyncio.Event()
    app.router.add_get("/page", _static(lambda: web.Response(text=PAGE, content_type="text/html")))
    app.router.add_get("/plain", _static(lambda: web.Response(text="just text")))
    app.router.add_get("/big", _static(lambda: web.Response(text="y" * 50_000)))
    app.router.add_get(
        "/image", _static(lambda: web.Response(body=b"\x89PNG", content_type="image/png"))
    )
    app.router.add_get("/redirect", _redirect)
    app.router.add_get("/slow", _slow)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        app[RELEASE].set()
        await runner.cleanup()


async def test_fetches_pages_as_text(server: str, tmp_path: Path) -> None:
    prompt = f"Summarize {server}/page and {server}/redirect."
    result = await WebFetchTool().execute({"prompt": prompt}, make_env(tmp_path / "ws"))
    assert not result.is_error
    text = result.llm_content
    assert text.startswith(
        f"Request: {prompt}\n\n--- {server}/page ---\nDocs page\n\nInstall\nRun pip install x now."
    )
    assert "- one\n- two" in text and "a  b\nc" in text
    assert "secret" not in text and "color" not in text
    assert f"--- {server}/redirect ---\njust text" in text


async def test_errors_per_url(server: str, tmp_path: Path) -> None:
    tool = WebFetchTool(timeout_s=0.5, max_chars=1000)
    prompt = f"{server}/missing {server}/image {server}/slow {server}/big {server}/plain"
    result = await tool.execute({"prompt": prompt}, make_env(tmp_path / "ws"))
    assert not result.is_error  # some URLs worked
    text = result.llm_content
    assert f"--- {server}/missing ---\nError: HTTP 404 Not Found" in text
    assert "Error: the page is not text (Content-Type: image/png)" in text
    assert "Error: timed out after 0.5 s" in text
    assert "y" * 1000 + "\n[The page is longer" in text
    assert result.raw_output is not None
    assert [u["ok"] for u in result.raw_output["urls"]] == [False, False, False, True, True]


async def test_all_failing_is_an_error(tmp_path: Path) -> None:
    # Port 9 on 127.0.0.1 is closed: the connection is refused at once.
    result = await WebFetchTool(timeout_s=2).execute(
        {"prompt": "read http://127.0.0.1:9/x"}, make_env(tmp_path / "ws")
    )
    assert (
        result.is_error and result.error_type == "fetch_failed" and "Error:" in result.llm_content
    )


async def test_size_cap_on_bytes(server: str, tmp_path: Path) -> None:
    result = await WebFetchTool(max_bytes=100).execute(
        {"prompt": f"{server}/big"}, make_env(tmp_path / "ws")
    )
    assert "y" * 100 + "\n[The page is longer" in result.llm_content
    assert "y" * 101 not in result.llm_content


async def test_invalid_prompts(tmp_path: Path) -> None:
    tool = WebFetchTool()
    assert tool.validate({"prompt": "no links here"}) is not None
    assert "http" in (tool.validate({"prompt": "get ftp://example.com/file"}) or "")
    many = " ".join(f"https://example.com/{n}" for n in range(21))
    assert "At most 20" in (tool.validate({"prompt": many}) or "")
    result = await tool.execute({"prompt": "nothing"}, make_env(tmp_path / "ws"))
    assert result.is_error and result.error_type == "invalid_arguments"


def test_url_extraction_and_display(tmp_path: Path) -> None:
    assert extract_urls("see https://a.dev/x, and (https://b.dev/y). https://a.dev/x") == [
        "https://a.dev/x",
        "https://b.dev/y",
    ]
    env = make_env(tmp_path / "ws")
    display = WebFetchTool().display({"prompt": "read https://a.dev/x and https://b.dev"}, env)
    assert (display.title, display.kind) == ("Fetch https://a.dev/x and 1 more", "fetch")


def test_html_to_text_without_title() -> None:
    assert html_to_text("<div>a<br>b</div><p>c &amp; d</p>") == "a\nb\nc & d"
