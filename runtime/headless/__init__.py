"""Headless runs: `adk-acp -p "…"` and `adk-acp --demo` (Gemini CLI's non-interactive mode).

A client of the runtime like the ACP face, beside it: it never imports `acp_server`,
`acp` or pygls. `main` is the whole entry: it reads what was piped on stdin, picks
the Host (the terminal's questions when stdin is a terminal, else the policy alone),
runs one prompt (`run.run_prompt`) and returns the exit code. The output formats are
in `output`, the statistics in `stats`, the terminal Host in `terminal`, the
scripted demo in `demo`.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import IO, TextIO

from runtime.config import AgentFlags
from runtime.headless.output import FORMATS, OutputFormat
from runtime.headless.run import EXIT_CANCELLED, HeadlessRun, prompt_with_stdin, read_piped_stdin

__all__ = ["FORMATS", "OutputFormat", "main"]


def main(
    *,
    prompt: str | None,
    demo: bool,
    output_format: OutputFormat,
    flags: AgentFlags,
    stdout: IO[str],
    stderr: IO[str] | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run `-p PROMPT` (or the demo) in the current directory; returns the exit code."""
    from runtime.headless.terminal import TerminalHost, TtyAnswers
    from runtime.host import HeadlessHost, Host

    stderr = stderr or sys.stderr
    stdin = stdin or sys.stdin
    tty = stdin.isatty()
    try:
        if demo:
            from runtime.headless.demo import run_demo

            return asyncio.run(run_demo(stdout=stdout, stderr=stderr, stdin=stdin, tty=tty))
        text = prompt or ""
        if not tty:
            text = prompt_with_stdin(text, read_piped_stdin(stdin.buffer, wait_first=bool(text)))
        workspace = Path.cwd().resolve()
        host: Host = (
            TerminalHost(TtyAnswers(stdin), stderr, workspace=workspace) if tty else HeadlessHost()
        )
        run = HeadlessRun(
            prompt=text,
            output_format=output_format,
            workspace=workspace,
            flags=flags,
            env=dict(os.environ),
        )
        from runtime.headless.run import run_prompt

        return asyncio.run(run_prompt(run, host=host, stdout=stdout, stderr=stderr))
    except KeyboardInterrupt:  # Ctrl+C before the run could take it
        stderr.write("[ERROR] Operation cancelled.\n")
        return EXIT_CANCELLED
