"""The read-only classifier: may auto edit run this command line without asking?

A line qualifies only when it is one simple command of a program in
`read_only_programs` (or a wrapper of one: `command`, `env`, `nice`, `timeout`,
`time`) whose every option is known to only read, and nothing else:

- no chaining or pipes (`&&`, `||`, `;`, `&`, `|`, newlines), no subshells,
  no substitution or parameter expansion (`$`, backquotes), no brace or tilde
  expansion; no redirection but output to `/dev/null` and `2>&1`;
- a leading assignment only for harmless variables (`LC_ALL=C`, `GIT_PAGER=cat`);
- every path it reads resolves inside the workspace and does not look like a file
  that may hold secrets (`sensitive`); a glob that could match one counts as one;
- no git command once a file under `.git/` was written in the session (hooks and
  `core.fsmonitor` make git run code).

`read_only_problem` returns why a line is not read-only (None: it is). It reads
nothing but symbolic links (to resolve paths).
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

from runtime.tools.policy.read_only_args import (
    NotReadOnly,
    ShellContext,
    check_path,
    check_program,
    glob_may_match_secret,
    inside_roots,
    parse_options,
)
from runtime.tools.policy.read_only_git import GIT_GLOBAL_FLAGS, GIT_SUBCOMMANDS
from runtime.tools.policy.read_only_programs import (
    FIND_PATH_TESTS,
    FIND_TESTS_NO_ARG,
    FIND_TESTS_ONE_ARG,
    PROGRAMS,
    Program,
)
from runtime.tools.policy.shell_words import Operator, Word, shell_tokens

__all__ = ["ShellContext", "read_only_problem"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HARMLESS_VARIABLES = frozenset({"LANG", "LANGUAGE", "TZ", "NO_COLOR", "COLUMNS", "LINES", "TERM"})
_PAGER_VARIABLES = frozenset({"PAGER", "GIT_PAGER"})
_BRACE_EXPANSION = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_WRAPPERS = frozenset({"command", "env", "nice", "timeout", "time"})


def read_only_problem(command: str, context: ShellContext) -> str | None:
    """Why `command` is not a read-only command auto edit may run unasked; None if it is."""
    try:
        _check_line(command, context)
    except NotReadOnly as ask:
        return str(ask)
    return None


def _check_line(command: str, context: ShellContext) -> None:
    tokens = shell_tokens(command)
    if tokens is None:
        raise NotReadOnly("the command cannot be parsed")
    words: list[Word] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if isinstance(token, Word):
            words.append(token)
            i += 1
            continue
        target = tokens[i + 1] if i + 1 < len(tokens) else None
        i += _harmless_redirection(token, target)
    for word in words:
        if word.expands:
            raise NotReadOnly(f"substitution or expansion in {word.text!r}")
        if word.tilde or (word.braces and _BRACE_EXPANSION.search(word.text)):
            raise NotReadOnly(f"brace or tilde expansion in {word.text!r}")
        if word.globs and glob_may_match_secret(word.text):
            raise NotReadOnly(f"the glob {word.text!r} may match files that hold secrets")
    if not words:
        raise NotReadOnly("no command")
    _check_command([w.text for w in words], context)


def _harmless_redirection(op: Operator, target: Word | Operator | None) -> int:
    """How many tokens a harmless redirection takes (`2>&1`, `>/dev/null`); asks otherwise."""
    text = op.text.lstrip("0123456789")
    if text in (">&", "<&") and isinstance(target, Word) and target.text.isdigit():
        return 2
    if text in (">", ">>", "&>", "&>>") and isinstance(target, Word) and target.text == "/dev/null":
        return 2
    if text in ("&&", "||", ";", "&", "|", "|&", "\n", ";;"):
        raise NotReadOnly(f"chained commands ({op.text.strip() or 'newline'})")
    if text in ("(", ")"):
        raise NotReadOnly("a subshell or group")
    raise NotReadOnly(f"redirection ({op.text})")


def _check_command(argv: list[str], context: ShellContext) -> None:
    while argv and "=" in argv[0] and _NAME.match(argv[0].split("=", 1)[0]):
        _check_assignment(argv.pop(0))
    if not argv:
        raise NotReadOnly("only variable assignments")
    program = argv[0]
    if "/" in program:
        raise NotReadOnly(f"{program} is run by path, not a known program")
    for entry in context.search_path:
        if not os.path.isabs(entry) or inside_roots(os.path.realpath(entry), context):
            raise NotReadOnly(
                f"PATH has {entry or '.'!r}, in the workspace: {program} may be any file"
            )
    if program in _WRAPPERS:
        _check_wrapper(argv, context)
    elif program == "git":
        _check_git(argv[1:], context)
    elif program == "find":
        _check_find(argv[1:], context)
    elif program == "sed":
        _check_sed(argv[1:], context)
    elif program == "awk":
        _check_awk(argv[1:], context)
    elif program == "jq":
        _check_jq(argv[1:], context)
    elif program in PROGRAMS:
        check_program(program, PROGRAMS[program], argv[1:], context)
    else:
        raise NotReadOnly(f"{program} is not a known read-only command")


def _check_assignment(word: str) -> None:
    name, value = word.split("=", 1)
    harmless = name in _HARMLESS_VARIABLES or name.startswith("LC_")
    if not (harmless or (name in _PAGER_VARIABLES and value in ("", "cat"))):
        raise NotReadOnly(f"the variable {name} may change what the command does")


# ---------------------------------------------------------------- programs with rules of their own


def _check_wrapper(argv: list[str], context: ShellContext) -> None:
    name, args = argv[0], argv[1:]
    if name == "command":
        if args[:1] in (["-v"], ["-V"]):
            return  # prints what a name is
        args = args[1:] if args[:1] == ["-p"] else args
    elif name == "env":
        while args and args[0] in ("-i", "-", "--ignore-environment"):
            args = args[1:]
        if not args:
            raise NotReadOnly(
                "env without a command prints the environment, which may hold secrets"
            )
    elif name == "nice":
        if args[:1] == ["-n"] and len(args) > 1 and args[1].lstrip("-").isdigit():
            args = args[2:]
        elif args and args[0].startswith("-") and args[0][1:].lstrip("-").isdigit():
            args = args[1:]
    elif name == "timeout":
        while args and args[0] in ("--preserve-status", "--foreground", "-v", "--verbose"):
            args = args[1:]
        if not args or not re.fullmatch(r"\d+(\.\d+)?[smhd]?", args[0]):
            raise NotReadOnly("timeout with options that are not known to be read-only")
        args = args[1:]
    elif name == "time" and args[:1] == ["-p"]:
        args = args[1:]
    if not args or args[0].startswith("-"):
        raise NotReadOnly(f"{name} with options that are not known to be read-only")
    _check_command(list(args), context)


def _check_git(args: list[str], context: ShellContext) -> None:
    if context.git_written:
        raise NotReadOnly(
            "a file under .git/ was written in this session; git may run code from there"
        )
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C" and i + 1 < len(args):
            check_path(args[i + 1], context)
            cwd = Path(os.path.realpath(os.path.join(context.cwd, args[i + 1])))
            context = dataclasses.replace(context, cwd=cwd)
            i += 2
        elif args[i] in GIT_GLOBAL_FLAGS:
            i += 1
        else:
            raise NotReadOnly(f"the git option {args[i]} is not known to be read-only")
    if i >= len(args) or args[i] not in GIT_SUBCOMMANDS:
        sub = args[i] if i < len(args) else "(none)"
        raise NotReadOnly(f"git {sub} is not a known read-only git command")
    sub, rest = args[i], args[i + 1 :]
    program = GIT_SUBCOMMANDS[sub]
    options, operands = parse_options(program, rest)
    listing = any(o in ("-l", "--list") for o, _ in options)
    if sub == "branch" and operands and not listing:
        raise NotReadOnly("git branch with a name creates a branch")
    for option, value in options:
        if option in program.path_options:
            check_path(value, context)
    if program.operands == "paths":
        for operand in operands:
            check_path(operand, context)
    else:
        for operand in operands:  # revisions and pathspecs: paths only when they look like one
            if operand.startswith("/") or ".." in Path(operand).parts:
                check_path(operand, context)


def _check_find(args: list[str], context: ShellContext) -> None:
    i = 0
    while i < len(args) and args[i] in ("-H", "-L", "-P"):
        i += 1
    while i < len(args) and not (args[i].startswith("-") or args[i] in ("(", "!")):
        check_path(args[i], context)
        i += 1
    while i < len(args):
        primary = args[i]
        if primary in FIND_TESTS_NO_ARG:
            i += 1
        elif primary in FIND_TESTS_ONE_ARG and i + 1 < len(args):
            i += 2
        elif primary in FIND_PATH_TESTS and i + 1 < len(args):
            check_path(args[i + 1], context)
            i += 2
        else:
            raise NotReadOnly(
                f"find {primary} is not known to be read-only (it may run, write or delete)"
            )


_SED_ADDRESS = r"(?:\d+|\$|/(?:[^/\\]|\\.)*/)"
_SED_COMMAND = re.compile(
    rf"\s*(?:{_SED_ADDRESS}(?:\s*,\s*(?:{_SED_ADDRESS}|[+~]\d+))?)?\s*!?\s*"
    r"(?:[pdqQ=nNgGhHxlPDz]|s(?P<d>[^\s\\\n;])(?:(?!(?P=d))[^\\]|\\.)*(?P=d)"
    r"(?:(?!(?P=d))[^\\]|\\.)*(?P=d)[gpiImM0-9]*|y/[^/]*/[^/]*/)\s*"
)


def _sed_script_is_read_only(script: str) -> bool:
    """A script of print, delete, quit and substitution commands only (no `w`, `e`, `r`)."""
    return all(
        not piece.strip() or _SED_COMMAND.fullmatch(piece) for piece in re.split(r"[;\n]", script)
    )


def _check_sed(args: list[str], context: ShellContext) -> None:
    program = Program(
        flags=frozenset({"-n", "-E", "-r", "-s", "-u", "-z", "--quiet", "--silent",
                         "--regexp-extended", "--separate", "--unbuffered", "--null-data",
                         "--posix", "--debug", "--sandbox"}),
        valued=frozenset({"-e", "--expression", "-l", "--line-length"}),
    )  # fmt: skip
    options, operands = parse_options(program, args)
    scripts = [v for o, v in options if o in ("-e", "--expression")]
    if not scripts:
        if not operands:
            raise NotReadOnly("sed without a script")
        scripts, operands = [operands[0]], operands[1:]
    for script in scripts:
        if not _sed_script_is_read_only(script):
            raise NotReadOnly("a sed script that is not only printing and substituting")
    for operand in operands:
        check_path(operand, context)


_AWK_UNSAFE = re.compile(r"system|getline|ENVIRON|\||>|@|close|fflush|PROCINFO")


def _check_awk(args: list[str], context: ShellContext) -> None:
    program = Program(valued=frozenset({"-F", "-v"}), permute=False)
    _, operands = parse_options(program, args)
    if not operands:
        raise NotReadOnly("awk without a program (or with -f)")
    if _AWK_UNSAFE.search(operands[0]):
        raise NotReadOnly(
            "an awk program that may run commands, write files or read the environment"
        )
    for operand in operands[1:]:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", operand):
            check_path(operand, context)


_JQ_UNSAFE = re.compile(r"\benv\b|\$ENV|\binput_filename\b|\bimport\b|\binclude\b|\$__loc__")


def _check_jq(args: list[str], context: ShellContext) -> None:
    program = Program(
        flags=frozenset({"-r", "-j", "-c", "-n", "-s", "-e", "-S", "-C", "-M", "-a", "-R",
                         "--raw-output", "--join-output", "--compact-output", "--null-input",
                         "--slurp", "--exit-status", "--sort-keys", "--color-output",
                         "--monochrome-output", "--ascii-output", "--raw-input", "--tab",
                         "--seq", "--stream", "--raw-output0"}),
        valued=frozenset({"--indent"}),
    )  # fmt: skip
    rest = list(args)
    for two in ("--arg", "--argjson"):  # `--arg name value`: two words
        while two in rest:
            k = rest.index(two)
            del rest[k : k + 3]
    options, operands = parse_options(program, rest)
    if not operands:
        raise NotReadOnly("jq without a filter")
    if _JQ_UNSAFE.search(operands[0]):
        raise NotReadOnly("a jq filter that reads the environment or other files")
    for operand in operands[1:]:
        check_path(operand, context)
