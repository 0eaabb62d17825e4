"""What the read-only classifier (`read_only`) checks in one program's arguments: each
option against the program's table (`read_only_programs`), and every path it reads:
inside the workspace, not a file that may hold secrets (`sensitive`), no glob that
could match one. A check that fails raises `NotReadOnly` with the reason.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime.tools.policy.read_only_programs import Program
from runtime.tools.policy.sensitive import is_sensitive_file

_SECRET_DIRS = frozenset({".ssh", ".aws", ".gnupg", ".kube", ".docker", ".password-store"})
# Names a glob is tried against: a glob that could match one of them may read secrets.
_SECRET_SAMPLES = (
    ".env", ".env.local", "prod.env", "id_rsa", "id_ed25519", "server.pem", "server.key",
    "store.p12", ".netrc", ".git-credentials", ".ssh", ".aws",
)  # fmt: skip


@dataclass(frozen=True)
class ShellContext:
    """Where a command runs: the workspace roots, its directory, whether a file under
    `.git/` was written in this workspace, and the PATH its program is looked up in."""

    roots: tuple[Path, ...]
    cwd: Path
    git_written: bool = False
    search_path: tuple[str, ...] = ()  # the PATH programs are found in


class NotReadOnly(Exception):
    """Raised with the reason a command is not read-only (auto edit asks the user)."""


def parse_options(program: Program, args: Sequence[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """(option, value) pairs and operands of `args` by `program`'s table; asks at an
    unknown option. Flags get the value ''."""
    options: list[tuple[str, str]] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg == "-" or not arg.startswith("-") or (operands and not program.permute):
            operands.append(arg)
            continue
        if program.operands == "strings" and not program.permute and arg not in program.flags:
            operands.append(arg)  # `echo -x` prints "-x"
            continue
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in program.valued or name in program.path_options:
                if not eq:
                    if i >= len(args):
                        raise NotReadOnly(f"{name} without its value")
                    value, i = args[i], i + 1
                options.append((name, value))
            elif name in program.optional or (name in program.flags and not eq):
                options.append((name, value))
            else:
                raise NotReadOnly(f"the option {name} is not known to be read-only")
            continue
        if program.numeric and arg[1:].isdigit():
            options.append(("-n", arg[1:]))
            continue
        i = _short_cluster(program, arg, args, i, options)
    if program.max_operands is not None and len(operands) > program.max_operands:
        raise NotReadOnly(f"more operands than a read-only use takes ({' '.join(operands)})")
    return options, operands


def _short_cluster(
    program: Program, arg: str, args: Sequence[str], i: int, options: list[tuple[str, str]]
) -> int:
    for k in range(1, len(arg)):
        flag = "-" + arg[k]
        rest = arg[k + 1 :]
        if flag in program.valued or flag in program.path_options:
            if rest:
                options.append((flag, rest))
                return i
            if i >= len(args):
                raise NotReadOnly(f"{flag} without its value")
            options.append((flag, args[i]))
            return i + 1
        if flag in program.optional:
            options.append((flag, rest))
            return i
        if flag not in program.flags:
            raise NotReadOnly(f"the option {flag} is not known to be read-only")
        options.append((flag, ""))
    return i


def check_path(path: str, context: ShellContext) -> None:
    """Asks when `path` leaves the workspace or names a file that may hold secrets."""
    if not path or path == "-":
        return
    full = os.path.realpath(os.path.join(context.cwd, path))
    if not inside_roots(full, context):
        raise NotReadOnly(f"{path} is outside the workspace")
    parts = Path(path).parts + Path(full).parts
    if is_sensitive_file(path) or is_sensitive_file(full) or _SECRET_DIRS.intersection(parts):
        raise NotReadOnly(f"{path} may hold secrets")


def inside_roots(full: str, context: ShellContext) -> bool:
    return any(full == str(root) or full.startswith(str(root) + os.sep) for root in context.roots)


def glob_may_match_secret(pattern: str) -> bool:
    for component in pattern.split("/"):
        if not any(c in component for c in "*?["):
            continue
        for sample in _SECRET_SAMPLES:
            if sample.startswith(".") and not component.startswith("."):
                continue  # bash globs do not match a leading dot
            if fnmatch.fnmatchcase(sample, component):
                return True
    return False


def check_program(name: str, program: Program, args: Sequence[str], context: ShellContext) -> None:
    options, operands = parse_options(program, args)
    for option, value in options:
        if option in program.path_options:
            check_path(value, context)
    if name == "date" and any(not op.startswith("+") for op in operands):
        raise NotReadOnly("date with an operand that sets the clock")
    if program.operands == "strings":
        return
    if program.operands == "pattern_then_paths" and not any(
        o in ("-e", "--regexp", "-f", "--file") for o, _ in options
    ):
        operands = operands[1:]
    for operand in operands:
        check_path(operand, context)
