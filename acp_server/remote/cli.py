"""The `serve` and `connect` subcommands (`acp_server.cli.main` hands them here).

`CliParts` carries the agent's own option and logging helpers from `acp_server.cli`
(passed in, so this module does not import the entry point back)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CliParts:
    add_agent_options: Callable[[argparse.ArgumentParser], None]
    setup_logging: Callable[[argparse.Namespace], None]
    flags: Callable[[argparse.Namespace], Any]


def serve_parser(parts: CliParts) -> argparse.ArgumentParser:
    from acp_server.remote.server import add_serve_options

    parser = argparse.ArgumentParser(
        prog="adk-acp serve",
        description="Serve the agent over ACP on WebSocket and Streamable HTTP (one /acp "
        "endpoint) to many clients; sessions outlive connections. Needs a token unless "
        "bound to loopback with --insecure-loopback.",
    )
    add_serve_options(parser)
    parts.add_agent_options(parser)
    from pathlib import Path

    parser.add_argument("--log-file", type=Path, metavar="FILE", help="logs here, not stderr")
    parser.add_argument(
        "--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="default INFO"
    )
    parser.set_defaults(prompt=None, demo=False)
    return parser


def main(argv: list[str], parts: CliParts) -> int:
    """`argv[0]` is `serve` or `connect`."""
    command, rest = argv[0], argv[1:]
    if command == "connect":
        from acp_server.remote.connect import main as connect_main

        return connect_main(rest)
    args = serve_parser(parts).parse_args(rest)
    parts.setup_logging(args)
    from acp_server.remote.server import run

    return run(args, parts.flags(args))
