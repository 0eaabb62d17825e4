"""`web_fetch`: fetch the URLs named in a prompt and return their text.

Gemini CLI hands the pages to a model together with the prompt; here the text of
each page goes back to the calling model, with the prompt repeated, and the model
does the extraction itself. Pages are fetched with httpx, with a timeout and a
size cap; HTML is reduced to its visible text.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Any

import httpx

from runtime.protocol import ToolDisplay
from runtime.tools.base import GcliTool, ToolEnv, ToolResult
from runtime.tools.builtin.args import ArgError, parse_error, required_str
from runtime.tools.builtin.env import short_title_arg
from runtime.tools.builtin.html_text import html_to_text
from runtime.tools.builtin.results import error_result

logger = logging.getLogger(__name__)

MAX_URLS = 20
_URL = re.compile(r"""\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s<>"'`]+""")
_GITHUB_BLOB = re.compile(r"^https://github\.com/([^/]+)/([^/]+)/blob/(.+)$")
_TEXT_TYPES = (
    "text/",
    "application/json",
    "application/xml",
    "application/javascript",
    "+json",
    "+xml",
)


def extract_urls(prompt: str) -> list[str]:
    """URLs in the order they appear, without trailing punctuation, without repeats."""
    seen: dict[str, None] = {}
    for match in _URL.finditer(prompt):
        url = match.group(0).rstrip(".,;:!?)]}")
        seen.setdefault(url, None)
    return list(seen)


def _raw_github(url: str) -> str:
    match = _GITHUB_BLOB.match(url)
    if not match:
        return url
    owner, repo, rest = match.groups()
    return f"https://raw.githubusercontent.com/{owner}/{repo}/{rest}"


def _parse(args: dict[str, Any]) -> list[str]:
    prompt = required_str(args, "prompt")
    urls = extract_urls(prompt)
    if not urls:
        raise ArgError(
            "The prompt must contain at least one URL starting with http:// or https://."
        )
    bad = [u for u in urls if not u.lower().startswith(("http://", "https://"))]
    if bad:
        raise ArgError(f"Only http:// and https:// URLs can be fetched, not: {', '.join(bad)}")
    if len(urls) > MAX_URLS:
        raise ArgError(f"At most {MAX_URLS} URLs per call; the prompt has {len(urls)}.")
    return urls


@dataclass(frozen=True)
class FetchedPage:
    """One URL's outcome: its text, or the error that stopped it."""

    url: str
    text: str | None = None
    error: str | None = None
    truncated: bool = False


class WebFetchTool(GcliTool):
    """`web_fetch`: the text of up to 20 web pages named in a prompt."""

    name = "web_fetch"
    kind = "fetch"
    description = (
        f"Fetches up to {MAX_URLS} http(s) URLs found in the prompt and returns the text of "
        "each page (HTML reduced to its visible text), together with the prompt, so you can "
        "answer it from the pages. GitHub 'blob' links are fetched as raw files."
    )

    def __init__(
        self, *, timeout_s: float = 20.0, max_bytes: int = 2_000_000, max_chars: int = 100_000
    ) -> None:
        self._timeout_s = timeout_s
        self._max_bytes = max_bytes
        self._max_chars = max_chars

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "prompt": {
                    "type": "string",
                    "description": (
                        f"The request, containing the URL(s) to fetch (up to {MAX_URLS}) and what "
                        f"to look for."
                    ),
                }
            },
            "required": ["prompt"],
        }

    def validate(self, args: dict[str, Any]) -> str | None:
        return parse_error(_parse, args)

    def display(self, args: dict[str, Any], env: ToolEnv) -> ToolDisplay:
        prompt = args.get("prompt") if isinstance(args.get("prompt"), str) else ""
        urls = extract_urls(str(prompt))
        if not urls:
            title = f"Fetch: {short_title_arg(str(prompt))}"
        elif len(urls) == 1:
            title = f"Fetch {urls[0]}"
        else:
            title = f"Fetch {urls[0]} and {len(urls) - 1} more"
        return ToolDisplay(title=title, kind="fetch")

    def notification_details(self, args: dict[str, Any]) -> dict[str, Any]:
        prompt = str(args.get("prompt", ""))
        return {"prompt": prompt, "urls": extract_urls(prompt)}

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolResult:
        try:
            urls = _parse(args)
        except ArgError as exc:
            return error_result(str(exc), "invalid_arguments")
        prompt = str(args["prompt"])
        headers = {"User-Agent": "adk-acp web_fetch", "Accept": "text/html,text/plain,*/*;q=0.8"}
        async with httpx.AsyncClient(
            timeout=self._timeout_s, headers=headers, follow_redirects=True, max_redirects=5
        ) as client:
            pages = await asyncio.gather(*(self._fetch(client, url) for url in urls))
        parts = [f"Request: {prompt}", ""]
        for page in pages:
            parts.append(f"--- {page.url} ---")
            if page.error is not None:
                parts.append(f"Error: {page.error}")
            else:
                note = (
                    "\n[The page is longer; only its beginning is shown.]" if page.truncated else ""
                )
                parts.append((page.text or "(empty page)") + note)
            parts.append("")
        failed = all(p.error is not None for p in pages)
        return ToolResult(
            llm_content="\n".join(parts).rstrip() + "\n",
            is_error=failed,
            error_type="fetch_failed" if failed else None,
            raw_output={
                "urls": [{"url": p.url, "ok": p.error is None, "error": p.error} for p in pages]
            },
        )

    async def _fetch(self, client: httpx.AsyncClient, url: str) -> FetchedPage:
        target = _raw_github(url)
        try:
            async with asyncio.timeout(self._timeout_s), client.stream("GET", target) as response:
                if response.status_code >= 400:
                    return FetchedPage(
                        url,
                        error=f"HTTP {response.status_code} {response.reason_phrase or ''}".strip(),
                    )
                data, cut = await _read_capped(response, self._max_bytes)
                content_type = response.headers.get("Content-Type", "").lower()
                charset = response.charset_encoding or "utf-8"
        except (httpx.HTTPError, TimeoutError, UnicodeError, ValueError) as exc:
            message = (
                f"timed out after {self._timeout_s:g} s"
                if isinstance(exc, TimeoutError | httpx.TimeoutException)
                else str(exc)
            )
            logger.info("web_fetch %s failed: %s", url, message)
            return FetchedPage(url, error=message or type(exc).__name__)
        if (
            content_type
            and not any(t in content_type for t in _TEXT_TYPES)
            and "html" not in content_type
        ):
            return FetchedPage(url, error=f"the page is not text (Content-Type: {content_type})")
        try:
            text = data.decode(charset, errors="replace")
        except LookupError:
            text = data.decode("utf-8", errors="replace")
        if "html" in content_type or (not content_type and "<html" in text[:1000].lower()):
            text = html_to_text(text)
        truncated = cut or len(text) > self._max_chars
        return FetchedPage(url, text=text[: self._max_chars], truncated=truncated)


async def _read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    """At most `max_bytes` of the body; True when there was more."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return b"".join(chunks)[:max_bytes], True
    return b"".join(chunks), False
