"""HTML → readable plain text for `web_fetch` (standard library parser, no rendering)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe", "object"})
_BLOCKS = frozenset(
    {"p", "div", "section", "article", "header", "footer", "main", "nav", "aside", "ul", "ol",
     "li", "table", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "br", "hr",
     "dl", "dt", "dd", "figure", "figcaption", "form", "title"}
)  # fmt: skip
_SPACES = re.compile(r"[ \t\f\v\r\n]+")


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip_depth = 0
        self._pre_depth = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIPPED:
            self._skip_depth += 1
        if tag == "pre":
            self._pre_depth += 1
        if tag in _BLOCKS:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")
        elif tag in ("td", "th"):
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIPPED and self._skip_depth:
            self._skip_depth -= 1
        if tag == "pre" and self._pre_depth:
            self._pre_depth -= 1
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if self._skip_depth:
            return
        if self._pre_depth:
            self.parts.append(data.replace("\n", "\x00"))  # kept through whitespace folding
        else:
            self.parts.append(_SPACES.sub(" ", data))


def html_to_text(html: str) -> str:
    """The visible text of a page: scripts and styles dropped, one block per line, title first."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = [line.strip(" ") for line in "".join(parser.parts).split("\n")]
    text = "\n".join(line for line in lines if line)
    title = _SPACES.sub(" ", parser.title).strip()
    text = text.replace("\x00", "\n")
    return f"{title}\n\n{text}" if title else text
