"""A bash command line as words and operators, for the read-only classifier (`read_only`).

Quotes and escapes are removed as bash would, and each word remembers what bash
would still do to it: expand a parameter or run a substitution (`$`, backquotes),
expand a glob (an unquoted `*`, `?` or `[`) or a brace (`{`), or a tilde at its
start. Operators (`|`, `&`, `;`, `<`, `>`, parentheses, newline) are tokens of
their own; digits right before `<` or `>` belong to the redirection (`2>`). Text
that cannot be read (an unclosed quote) gives `None`: the caller asks.
"""

from __future__ import annotations

from dataclasses import dataclass

_OPERATOR_CHARS = "|&;<>()\n"
_GLOB_CHARS = "*?["


@dataclass(frozen=True)
class Word:
    """One word after quote removal; the flags say what bash would still expand in it."""

    text: str
    expands: bool = False  # `$...` or a backquote outside single quotes
    globs: bool = False  # an unquoted `*`, `?` or `[`
    braces: bool = False  # an unquoted `{`
    tilde: bool = False  # an unquoted `~` at the start


@dataclass(frozen=True)
class Operator:
    """A control or redirection operator (`&&`, `|`, `;`, `2>`, `>>`, `<`, `(`, ...)."""

    text: str


Token = Word | Operator


class _Reader:
    def __init__(self, line: str) -> None:
        self.s = line
        self.tokens: list[Token] = []
        self.buf: list[str] = []
        self.started = False  # a word is being read (it may be empty: '')
        self.expands = self.globs = self.braces = self.tilde = False

    def end_word(self) -> None:
        if self.started:
            word = Word("".join(self.buf), self.expands, self.globs, self.braces, self.tilde)
            self.tokens.append(word)
        self.buf = []
        self.started = False
        self.expands = self.globs = self.braces = self.tilde = False

    def add(self, text: str) -> None:
        self.buf.append(text)
        self.started = True

    def operator(self, i: int) -> int:
        """Reads the operator at `i`; returns its length."""
        s = self.s
        fd = "".join(self.buf)
        if s[i] in "<>" and self.started and fd.isdigit() and not self.expands:
            self.buf, self.started = [], False  # `2>`: the digits belong to the redirection
        else:
            self.end_word()
            fd = ""
        for op in ("&&", "||", "|&", ";;", "&>>", "&>", ">>", ">&", ">|", "<<<", "<<", "<&", "<>"):
            if s.startswith(op, i):
                self.tokens.append(Operator(fd + op))
                return len(op)
        self.tokens.append(Operator(fd + s[i]))
        return 1

    def run(self) -> list[Token] | None:
        s, i, n = self.s, 0, len(self.s)
        while i < n:
            c = s[i]
            if c in " \t":
                self.end_word()
                i += 1
            elif c == "#" and not self.started:
                end = s.find("\n", i)
                i = n if end < 0 else end
            elif c in _OPERATOR_CHARS:
                i += self.operator(i)
            elif c == "\\":
                if i + 1 < n and s[i + 1] != "\n":
                    self.add(s[i + 1])
                else:
                    self.started = self.started or i + 1 >= n
                i += 2
            elif c == "'":
                end = s.find("'", i + 1)
                if end < 0:
                    return None
                self.add(s[i + 1 : end])
                i = end + 1
            elif c == '"':
                i = self._double_quoted(i + 1)
                if i < 0:
                    return None
            else:
                self._plain(c)
                i += 1
        self.end_word()
        return self.tokens

    def _plain(self, c: str) -> None:
        if c in "$`":
            self.expands = True
        elif c in _GLOB_CHARS:
            self.globs = True
        elif c == "{":
            self.braces = True
        elif c == "~" and not self.started:
            self.tilde = True
        self.add(c)

    def _double_quoted(self, i: int) -> int:
        """Reads up to the closing quote; returns the index after it, or -1 if unclosed."""
        s, n = self.s, len(self.s)
        self.started = True
        while i < n:
            c = s[i]
            if c == '"':
                return i + 1
            if c == "\\" and i + 1 < n and s[i + 1] in '$`"\\\n':
                self.add(s[i + 1])
                i += 2
                continue
            if c in "$`":
                self.expands = True
            self.add(c)
            i += 1
        return -1


def shell_tokens(line: str) -> list[Token] | None:
    """The words and operators of `line`, or None when it cannot be read (unclosed quote)."""
    return _Reader(line).run()
