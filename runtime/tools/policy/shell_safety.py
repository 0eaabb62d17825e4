"""Shell command heuristics for the policy engine.

A command line is split into its simple commands (at ``&&``, ``||``, ``;``,
``|``, ``|&``, ``&`` and newlines, outside quotes and substitutions); the policy
judges each part on its own. For every part this module answers:

- does it write files by redirection (``>``, ``>>``, ``&>``, ``>|``, ``tee``)?
- is it known to be dangerous (``rm -rf``, ``sudo``, ``dd``, ``git push --force``,
  a download piped into a shell, command substitution, ...)?
- which prefix narrows an "always allow" to it (``git status``, ``npm test``, ``ls``)?

(Which commands auto edit runs unasked is `read_only`'s question, not this module's.)

These are heuristics in the safe direction: when in doubt a part needs approval.
A heredoc body is input, not commands: it is skipped, and the command reading
it counts as fed from elsewhere (so ``bash <<EOF`` is judged like ``curl | bash``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

SHELL_TOOL_NAME = "run_shell_command"

_ALWAYS_DANGEROUS = frozenset({
    "sudo", "su", "doas", "dd", "fdisk", "parted", "mkswap", "shred", "wipefs", "shutdown",
    "reboot", "halt", "poweroff", "eval", "chroot", "killall", "pkill", "crontab",
})  # fmt: skip
_INTERPRETERS = frozenset({
    "sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python3", "perl", "ruby", "node", "php",
})  # fmt: skip
_MULTIPLEXERS = frozenset({
    "git", "npm", "pnpm", "yarn", "npx", "cargo", "go", "docker", "kubectl", "pip", "pip3",
    "uv", "poetry", "gh", "dotnet", "mvn", "gradle",
})  # fmt: skip
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_FIND_ACTIONS = frozenset(
    {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class CommandPart:
    """One simple command of a command line. `piped`: its stdin is the previous part's output."""

    text: str
    piped: bool = False


class _Splitter:
    """A single pass over a command line that knows quotes, escapes and substitutions."""

    def __init__(self, command: str) -> None:
        self.s = command
        self.parts: list[CommandPart] = []
        self.buf: list[str] = []
        self.piped = False
        self.heredocs: list[tuple[str, bool]] = []  # (delimiter, strip leading tabs)

    def flush(self, next_piped: bool) -> None:
        text = "".join(self.buf).strip()
        if text:
            self.parts.append(CommandPart(text=text, piped=self.piped))
        self.buf = []
        self.piped = next_piped

    def heredoc(self, i: int) -> int:
        """Records the heredoc starting at `i` (`<<EOF`, `<<-'EOF'`); returns the length read."""
        s, j = self.s, i + 2
        strip = j < len(s) and s[j] == "-"
        j += strip
        while j < len(s) and s[j] in " \t":
            j += 1
        start = j
        while j < len(s) and not s[j].isspace() and s[j] not in ";|&<>()":
            j += 1
        delimiter = s[start:j].replace("'", "").replace('"', "").replace("\\", "")
        if delimiter:
            self.heredocs.append((delimiter, strip))
            self.piped = True  # the command reads the heredoc body as its input
        self.buf.append(s[i:j])
        return j - i

    def skip_heredoc_bodies(self, pos: int) -> int:
        """The position after the bodies of the pending heredocs, which start at `pos`."""
        s = self.s
        for delimiter, strip in self.heredocs:
            while pos < len(s):
                end = s.find("\n", pos)
                end = len(s) if end < 0 else end
                line = s[pos:end]
                pos = end + 1
                if (line.lstrip("\t") if strip else line) == delimiter:
                    break
        self.heredocs = []
        return min(pos, len(s))

    def run(self) -> tuple[CommandPart, ...]:
        s, n, i = self.s, len(self.s), 0
        quote: str | None = None
        depth = 0
        backtick = False
        while i < n:
            c = s[i]
            nxt = s[i + 1] if i + 1 < n else ""
            if quote == "'":
                quote = None if c == "'" else quote
                self.buf.append(c)
                i += 1
                continue
            if c == "\\" and nxt:
                self.buf.append(c + nxt)
                i += 2
                continue
            if quote == '"' and c == '"':
                quote = None
            elif quote is None and c in "'\"":
                quote = c
            elif c == "`":
                backtick = not backtick
            elif c in "$<>" and nxt == "(":
                depth += 1
                self.buf.append(c + nxt)
                i += 2
                continue
            elif c == "(" and depth:
                depth += 1
            elif c == ")" and depth:
                depth -= 1
            elif quote is None and not depth and not backtick:
                step = self._separator(i, c, nxt)
                if step:
                    i += step
                    continue
            self.buf.append(c)
            i += 1
        self.flush(False)
        return tuple(self.parts)

    def _separator(self, i: int, c: str, nxt: str) -> int:
        """Flushes at a separator (or records a heredoc) and returns its length; 0 otherwise."""
        prev = self.s[i - 1] if i else ""
        if c + nxt in ("&&", "||"):
            self.flush(False)
            return 2
        if c + nxt == "|&":
            self.flush(True)
            return 2
        if c == "|" and prev != ">":
            self.flush(True)
            return 1
        if c == "\n" and self.heredocs:
            end = self.skip_heredoc_bodies(i + 1)
            self.flush(False)
            return end - i
        if self.s.startswith("<<<", i):
            self.buf.append("<<<")  # a here-string: input, but no body to skip
            self.piped = True
            return 3
        if c + nxt == "<<":
            return self.heredoc(i)
        if c in ";\n":
            self.flush(False)
            return 1
        if c == "&" and prev not in ("<", ">") and nxt != ">":
            self.flush(False)
            return 1
        return 0


def split_commands(command: str) -> tuple[CommandPart, ...]:
    """The simple commands of `command`, in order (empty parts dropped)."""
    return _Splitter(command).run()


def _tokens(text: str) -> list[str]:
    try:
        return shlex.split(text, posix=True)
    except ValueError:
        return text.split()


def _command_words(text: str) -> list[str]:
    """Tokens of a part without leading variable assignments and grouping characters."""
    words = _tokens(text.strip().lstrip("({").rstrip(")}").strip())
    while words and _ASSIGNMENT.match(words[0]):
        words.pop(0)
    return words


def root_command(text: str) -> str | None:
    """The command a part runs (`git` for `FOO=1 git status`), or None for an empty part."""
    words = _command_words(text)
    return words[0] if words else None


def _subcommand(words: list[str]) -> str | None:
    """The first non-option word after the root (skipping `git -C dir` style options)."""
    i = 1
    while i < len(words):
        word = words[i]
        if word in ("-C", "-c") and words[0] == "git":
            i += 2
            continue
        if not word.startswith("-"):
            return word
        i += 1
    return None


def narrowing_prefix(text: str) -> str | None:
    """The prefix an "always allow" for this part is narrowed to.

    The root command; for tools such as git or npm, up to and including the
    subcommand (so allowing `git status` does not allow `git push`, and
    `npm --version` stays exactly that). Leading assignments are kept, as
    written, so the prefix matches the command it came from.
    """
    raw = text.strip().split()
    count = 0
    while count < len(raw) and _ASSIGNMENT.match(raw[count]):
        count += 1
    if count >= len(raw):
        return None
    root = raw[count]
    end = count + 1
    if root in _MULTIPLEXERS:
        # up to and including the subcommand (git -C dir log); all words when there is none
        while end < len(raw) and raw[end].startswith("-"):
            end += 2 if root == "git" and raw[end] in ("-C", "-c") else 1
        end = min(end + 1, len(raw))
    return " ".join(raw[:end])


def command_prefixes(command: str) -> tuple[str, ...]:
    """The distinct narrowing prefixes of every part of `command`, in order."""
    seen: list[str] = []
    for part in split_commands(command):
        prefix = narrowing_prefix(part.text)
        if prefix and prefix not in seen:
            seen.append(prefix)
    return tuple(seen)


def matches_prefix(command: str, prefix: str) -> bool:
    """True when `command` is `prefix` or starts with `prefix` followed by a space."""
    command = command.strip()
    return command == prefix or command.startswith(prefix + " ")


def _unquoted(text: str) -> str:
    """`text` with quoted spans blanked out, so operators inside quotes are not seen."""
    out: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(text):
        c = text[i]
        if quote is None and c == "\\" and i + 1 < len(text):
            out.append("  ")
            i += 2
            continue
        if quote is None and c in "'\"":
            quote = c
            out.append(" ")
        elif quote is not None:
            if c == quote:
                quote = None
            out.append(" ")
        else:
            out.append(c)
        i += 1
    return "".join(out)


_REDIRECT = re.compile(r"(&>>?|\d*>&|\d*>>?\|?)")


def redirection_reason(text: str) -> str | None:
    """Why this part writes files by redirection, or None."""
    plain = _unquoted(text)
    for match in _REDIRECT.finditer(plain):
        op = match.group(1)
        rest = text[match.end() :].lstrip()
        if rest.startswith("("):
            continue  # process substitution, judged as a substitution
        target = _tokens(rest)[0] if _tokens(rest) else ""
        if op.endswith(">&") and (target[:1].isdigit() or target.startswith("-")):
            continue  # duplicates a descriptor (2>&1)
        if target in _HARMLESS_TARGETS:
            continue
        return f"output redirection ({op.strip()} {target})".rstrip()
    words = _command_words(text)
    if words and words[0] == "tee":
        files = [w for w in words[1:] if not w.startswith("-") and w not in _HARMLESS_TARGETS]
        if files:
            return f"writes files with tee ({' '.join(files)})"
    return None


def _has_substitution(text: str) -> bool:
    plain = re.sub(r"'[^']*'", "''", text)
    return "$(" in plain or "`" in plain or "<(" in plain or ">(" in plain


def _flag_has(words: list[str], letters: str, longs: tuple[str, ...]) -> bool:
    for word in words[1:]:
        if word in longs:
            return True
        if (
            word.startswith("-")
            and not word.startswith("--")
            and any(ch in word[1:] for ch in letters)
        ):
            return True
    return False


def _git_danger(words: list[str]) -> str | None:
    sub = _subcommand(words)
    args = words[words.index(sub) + 1 :] if sub in words else []
    if sub == "push" and (
        _flag_has(["git", *args], "f", ("--force", "--force-with-lease", "--mirror", "--delete"))
        or any(a.startswith(("+", ":")) for a in args)
    ):
        return "git push that rewrites or deletes remote history"
    if sub == "reset" and "--hard" in args:
        return "git reset --hard discards changes"
    if sub == "clean" and _flag_has(["git", *args], "f", ("--force",)):
        return "git clean deletes untracked files"
    if sub == "branch" and _flag_has(["git", *args], "dDf", ("--delete", "--force")):
        return "git branch deletion"
    if sub in ("filter-branch", "filter-repo"):
        return "git history rewrite"
    if sub == "stash" and args[:1] in (["drop"], ["clear"]):
        return "git stash drop discards changes"
    return None


def danger_reason(part: CommandPart) -> str | None:
    """Why this part is known to be dangerous, or None."""
    words = _command_words(part.text)
    if not words:
        return None
    root = words[0].rsplit("/", 1)[-1]
    if _has_substitution(part.text):
        return "command substitution"
    if root in _ALWAYS_DANGEROUS or root.startswith("mkfs"):
        return f"{root} is a dangerous command"
    if part.piped and root in _INTERPRETERS:
        return f"output piped into {root}"
    if root == "rm" and _flag_has(words, "rRf", ("--recursive", "--force", "--no-preserve-root")):
        return "recursive or forced rm"
    if root in ("chmod", "chown", "chgrp") and _flag_has(words, "R", ("--recursive",)):
        return f"recursive {root}"
    if root == "git":
        return _git_danger(words)
    if root == "find" and any(w in _FIND_ACTIONS for w in words):
        return "find that deletes, writes or runs commands"
    if root == "sort" and any(w == "-o" or w.startswith(("--output", "-o")) for w in words[1:]):
        return "sort writing to a file"
    if root == "xargs" and any(
        w.rsplit("/", 1)[-1] in _INTERPRETERS | {"rm", "sudo"} for w in words[1:]
    ):
        return "xargs running a dangerous command"
    return None


def approval_reason(part: CommandPart) -> str | None:
    """Why this part must be approved even when a rule allows it, or None."""
    return danger_reason(part) or redirection_reason(part.text)
