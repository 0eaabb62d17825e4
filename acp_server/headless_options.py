"""The headless options of `adk-acp` (`-p`, `--output-format`, `--demo`), as Gemini CLI's
non-interactive mode takes them, and the check `acp_server/cli.py` makes before any ACP
start-up. Standard library only: it is imported before the first `initialize` answer."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def add_headless_options(parser: argparse.ArgumentParser) -> None:
    """`-p`, `--output-format` and `--demo`: a run in the terminal instead of an editor."""
    headless = parser.add_argument_group("headless (in a terminal, instead of serving an editor)")
    headless.add_argument(
        "-p",
        "--prompt",
        metavar="TEXT",
        help="run one prompt in the current directory, print the answer and exit "
        "(text piped on stdin comes first); calls that need approval are asked on the "
        "terminal, or denied when stdin is not one",
    )
    headless.add_argument(
        "-o",
        "--output-format",
        choices=["text", "json", "stream-json"],
        help="with -p: the answer as text (default), one JSON object, or JSON lines as it happens",
    )
    headless.add_argument(
        "--demo",
        action="store_true",
        help="watch the agent work with no key and no network: a scripted model reads a file, "
        "proposes an edit (diff), asks, and edits it in a temporary workspace",
    )


_HEADLESS_LONG = ("--prompt", "--demo", "--output-format")


def wants_headless(argv: list[str]) -> bool:
    """`-p`, `--prompt`, `--demo` or `--output-format` (or an abbreviation) before `--`."""
    for arg in argv:
        if arg == "--":
            return False
        name = arg.split("=", 1)[0]
        if arg.startswith("-p") or arg.startswith("-o"):
            return True
        if len(name) > 2 and any(option.startswith(name) for option in _HEADLESS_LONG):
            return True
    return False
