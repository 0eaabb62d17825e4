"""`adk-acp`: start the agent on stdio.

Start-up order matters to editors, which wait on `initialize`:
1. parse flags, set up logging (stderr or --log-file) and the optional trace;
2. start reading stdin on a thread and import pygls + the server modules on
   another;
3. answer the first `initialize` straight away (stdlib only: `acp_server.stdio`);
4. warm ADK and genai up in the background (imports plus one scripted turn),
   so a first prompt sent a second later does not pay for them;
5. serve everything else through pygls until stdin closes, then close every
   session (killing their commands) and exit within a second.
Nothing but ACP messages is written to stdout: the protocol writes to a private
duplicate of fd 1, and fd 1 and `sys.stdout` point at stderr, so a stray print, a
library writing from C or a child process cannot corrupt the stream.
"""

from __future__ import annotations

import os
import sys
import threading

from acp_server import __version__
from acp_server.headless_options import add_headless_options, wants_headless
from acp_server.stdio import Output, StdinReader, Trace, answer_initialize
from acp_server.warm.client import serve_warm

TYPE_CHECKING = False  # argparse, logging and typing load after the first answer
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import IO, Any, NoReturn

TRACE_ENV = "ADK_ACP_TRACE_FILE"
WARM_HELP = (
    "serve cold: neither use nor start the warm per-user server (or ADK_ACP_NO_WARM=1); "
    "`adk-acp warm status` / `adk-acp warm stop` show or stop this user's servers"
)
EXIT_GRACE_S = 0.8


COMMANDS_HELP = """commands:
  adk-acp [options]          the stdio agent an editor starts (Zed, VS Code, acpx)
  adk-acp -p TEXT [options]  one prompt in a terminal, as Gemini CLI's -p (also --demo)
  adk-acp --login            save a Gemini API key for the agent
  adk-acp serve [options]    serve the agent over WebSocket and HTTP (serve --help)
  adk-acp connect URL        bridge a stdio editor to a served agent (connect --help)
  adk-acp warm status|stop   the warm per-user server: is one running, stop it
"""


def build_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="adk-acp",
        description="A coding agent for editors: speaks the Agent Client Protocol (ACP) on stdio "
        "and runs Gemini models on Google ADK with Gemini CLI's services.",
        epilog=COMMANDS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_agent_options(parser)
    _add_log_options(parser)
    add_headless_options(parser)
    parser.add_argument("--no-warm", action="store_true", help=WARM_HELP)
    parser.add_argument("--experimental-acp", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--version", action="version", version=f"adk-acp {__version__}")
    return parser


def _add_agent_options(parser: argparse.ArgumentParser) -> None:
    """The model, the sessions folder, the approval mode and the limits."""
    from pathlib import Path

    from runtime.tools.policy.modes import MODES

    parser.add_argument(
        "-m",
        "--model",
        help="model id or 'auto', or another provider's: openai/NAME, ollama/NAME "
        "(else GEMINI_MODEL, else model.name in .gemini/settings.json, else gemini-2.5-pro)",
    )
    parser.add_argument(
        "--fake-responses",
        type=Path,
        metavar="FILE",
        help="answer from a scripted JSONL file (Gemini CLI's format) instead of a real model",
    )
    parser.add_argument(
        "--record-responses",
        type=Path,
        metavar="FILE",
        help="append every model response to FILE in the --fake-responses format",
    )
    parser.add_argument(
        "--sessions-dir",
        type=Path,
        metavar="DIR",
        help="where sessions are recorded (else general.sessionsDir in ~/.gemini/settings.json, "
        "else $XDG_STATE_HOME/adk-acp/sessions, by default ~/.local/state/adk-acp/sessions)",
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        help="keep sessions in a PostgreSQL database (postgresql://user@host/db; else "
        "$ADK_ACP_STORE, else general.sessionStore in ~/.gemini/settings.json), shared by "
        "every adk-acp using it, instead of the JSONL files (needs adk-acp[postgres])",
    )
    parser.add_argument(
        "--approval-mode",
        choices=[mode.id for mode in MODES],
        help="initial approval mode of new sessions (default: default)",
    )
    parser.add_argument(
        "--sandbox",
        nargs="?",
        const="workspace-write",
        choices=["workspace-write", "read-only", "off"],
        metavar="MODE",
        help="run commands in a sandbox (bubblewrap; seatbelt on macOS): workspace-write "
        "(the default MODE: writes only in the workspace, no network), read-only, or off "
        "(else $ADK_ACP_SANDBOX, else tools.sandbox in settings; README: Sandbox)",
    )
    parser.add_argument(
        "--max-turns", type=int, metavar="N", help="stop a prompt after N model turns"
    )
    parser.add_argument("--max-tokens", type=int, metavar="N", help="stop a prompt after N tokens")
    parser.add_argument(
        "--max-time", type=float, metavar="SECONDS", help="stop a prompt after SECONDS"
    )


def _add_log_options(parser: argparse.ArgumentParser) -> None:
    """Logs, the protocol trace, and the terminal login."""
    from pathlib import Path

    parser.add_argument(
        "--log-file", type=Path, metavar="FILE", help="write logs to FILE instead of stderr"
    )
    parser.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log level (default INFO; WARNING with -p and --demo)",
    )
    parser.add_argument(
        "--trace-file",
        type=Path,
        metavar="FILE",
        help="append a JSONL trace of all protocol traffic, API keys redacted "
        f"(or set {TRACE_ENV})",
    )
    parser.add_argument(
        "--login",
        action="store_true",
        help="ask for a Gemini API key in the terminal and save it for later sessions, then exit",
    )


def _setup_logging(args: argparse.Namespace) -> None:
    import logging

    handler: logging.Handler
    if args.log_file:
        args.log_file.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(args.log_file, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    from runtime.services.secrets import RedactingFilter

    handler.addFilter(RedactingFilter())  # no key, token or private key reaches a log
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    headless = args.prompt is not None or args.demo
    level = args.log_level or ("WARNING" if headless else "INFO")
    for name in ("acp_server", "runtime"):
        logging.getLogger(name).setLevel(level)
    # pygls logs every handler error with a traceback; ours are logged where they arise.
    logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)
    # ADK logs a traceback for every failed model call; the engine reports it once itself.
    logging.getLogger("google_adk.google.adk.workflow._node_runner").setLevel(logging.CRITICAL)
    logging.getLogger("google_adk.google.adk.runners").addFilter(
        lambda record: not record.getMessage().startswith("Root node ")
    )
    logging.getLogger("google_adk.google.adk.telemetry._metrics").setLevel(logging.ERROR)
    if args.log_level == "DEBUG":
        root.setLevel(logging.DEBUG)
        logging.getLogger("pygls").setLevel(logging.INFO)
    if (warm := sys.modules.get("acp_server.warm.client")) is not None:
        warm.log_how_served()  # warm child, or cold and why


FIRST_REQUEST_WAIT_S = 0.1
"""How long after `initialize` the loader and the warm-up wait for the editor's first
request, so an early answer (`_answer_early`) has the interpreter to itself."""


def _use_httpx_for_genai() -> None:
    from runtime.adk.compat import use_httpx_for_genai

    use_httpx_for_genai()


def _load_server_modules(foreground: threading.Event) -> None:
    if "acp_server.server" not in sys.modules:  # a warm server's child has it
        foreground.wait()
    import acp_server.server  # noqa: F401 - pygls, handlers


def _warm_up(flags: Any, foreground: threading.Event) -> None:
    foreground.wait()
    try:
        from runtime.warmup import warm_up

        warm_up(dict(os.environ), flags.fake_responses, flags.record_responses, flags.model)
        from runtime.processes import start_watchdog

        start_watchdog()  # up before the first command (which waits for it otherwise)
    except Exception:  # noqa: BLE001 - warm-up is an optimisation; a failure must not stop the agent
        import logging

        logging.getLogger("acp_server").exception("background warm-up failed")


def _flags(args: argparse.Namespace) -> Any:
    from runtime.config import AgentFlags

    return AgentFlags(
        model=args.model,
        fake_responses=args.fake_responses.resolve() if args.fake_responses else None,
        record_responses=args.record_responses.resolve() if args.record_responses else None,
        approval_mode=args.approval_mode,
        max_turns=args.max_turns,
        max_tokens=args.max_tokens,
        max_time_s=args.max_time,
        sessions_dir=args.sessions_dir.resolve() if args.sessions_dir else None,
        store=args.store,
        sandbox=args.sandbox,
    )


_EXITING_FLAGS = ("-h", "--help", "--version")
exit_hooks: list[Callable[[int], object]] = []  # called with the code (a warm child's report)


def _exit_now(code: int) -> NoReturn:
    """Exit at once. Once stdin is being read, a normal interpreter shutdown aborts
    (SIGABRT: the reader thread holds stdin's lock), so flush and `os._exit`."""
    import logging

    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stderr.flush()
    for hook in exit_hooks:
        hook(code)
    if (warm := sys.modules.get("acp_server.warm.client")) is not None:
        warm.start_pending()  # a cold spawn that never answered a prompt: for the next
    os._exit(code)


def _claim_stdout() -> IO[bytes]:
    """Keep the real stdout for protocol messages only.

    The protocol gets a private duplicate of file descriptor 1; fd 1 itself (what a
    library writing from C, or a child process, sees) and `sys.stdout` point at
    stderr from here on, so nothing but ACP can ever reach the client."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)  # not inherited by child processes
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(protocol_fd, "wb")


def _headless(argv: list[str]) -> NoReturn:
    """`-p` / `--demo`: one run in the terminal (`runtime.headless`), then exit with its code."""
    import io

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.demo and args.prompt is not None:
        parser.error("--demo runs its own prompt; leave out -p")
    if args.prompt is None and not args.demo:
        parser.error("--output-format goes with -p/--prompt")
    _setup_logging(args)
    from runtime.headless import main as run_headless

    stdout = io.TextIOWrapper(_claim_stdout(), encoding="utf-8", write_through=True)
    code = run_headless(
        prompt=args.prompt,
        demo=args.demo,
        output_format=args.output_format or "text",
        flags=_flags(args),
        stdout=stdout,
    )
    stdout.flush()
    _exit_now(code)


def _v1_client(init_params: dict[str, Any] | None) -> bool:
    """Initialized in ACP v1, whose `session/new`, `load` and `resume` may be answered
    early (a v2 client's are the v2 dialect's)."""
    from acp_server.capabilities import PROTOCOL_VERSION, negotiated_version

    return init_params is not None and negotiated_version(init_params) == PROTOCOL_VERSION


def _answer_early(line: bytes, output: Output, flags: Any, init_params: dict[str, Any]) -> Any:
    """A plain `session/new` (`early.py`), `load` or `resume` (`early_reopen.py`)
    answered; None leaves `line` to the server."""
    from acp_server.early import answer_session_new

    env = dict(os.environ)
    early = answer_session_new(line, output, flags, env)
    if early is not None or not (b'"session/load"' in line or b'"session/resume"' in line):
        return early
    from acp_server.early_reopen import answer_session_reopen

    return answer_session_reopen(line, output, flags, env, init_params)


def _while_loading(
    reader: StdinReader,
    output: Output,
    loader: threading.Thread,
    flags: Any,
    init_params: dict[str, Any] | None,
    foreground: threading.Event,
) -> Any:
    """Until the server modules are loaded and the first request after `initialize` is
    seen: answer a plain `session/new`, `load` or `resume` early (only after a good v1
    `initialize`, `init_params`), and exit if the editor goes away first. `foreground`
    is set (the loader and the warm-up go on) once the first request is answered or left
    to the server, or `FIRST_REQUEST_WAIT_S` passed. A warm server's child, loaded
    already, answers its first request early too: the engine is built behind it."""
    import logging
    import time

    early = None
    looked = init_params is None
    deadline = time.monotonic() + FIRST_REQUEST_WAIT_S
    try:
        while loader.is_alive() or not foreground.is_set():  # a warm child: loaded at once
            if not looked and (line := reader.pending_first()) is not None:
                looked = True
                early = _answer_early(line, output, flags, init_params or {})
                if early is not None:
                    reader.drop_first()
                    early = None if early.refused else early
            if looked or time.monotonic() >= deadline:
                foreground.set()
            if reader.only_eof_left(0.02, wake_on_line=not looked):
                # the editor went away before anything else: no session to close
                logging.getLogger("acp_server").info("stdin closed; shutting down")
                _exit_now(0)
    finally:
        foreground.set()
    return early


def _login() -> int:
    from acp_server.login import login

    return login()


def _remote(argv: list[str]) -> int:
    """`adk-acp serve` and `adk-acp connect`: ACP over the network (`acp_server/remote/`)."""
    from acp_server.remote.cli import CliParts
    from acp_server.remote.cli import main as remote_main

    return remote_main(argv, CliParts(_add_agent_options, _setup_logging, _flags))


def main(argv: list[str] | None = None, *, warm: bool = True) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["serve"], ["connect"]):
        return _remote(argv)
    if argv[:1] == ["warm"]:  # see or stop this user's warm servers
        from acp_server.warm.manage import main as warm_main

        return warm_main(argv[1:])
    if "--login" in argv:
        return _login()
    if any(flag in argv for flag in _EXITING_FLAGS):
        build_parser().parse_args(argv)  # prints and exits
    if wants_headless(argv):
        _use_httpx_for_genai()
        _headless(argv)
    if warm and (code := serve_warm(argv)) is not None:  # served by a warm server's child
        return code
    output = Output(_claim_stdout())
    stdin = sys.stdin.buffer

    reader = StdinReader(stdin)
    reader.start()
    foreground = threading.Event()  # see _while_loading
    loader = threading.Thread(
        target=_load_server_modules, args=(foreground,), name="acp-load", daemon=True
    )
    loader.start()

    init_params: dict[str, Any] | None = None
    first = reader.first()
    if first is not None:
        handled, init_params = answer_initialize(first, output)
        if handled:
            reader.drop_first()
    _use_httpx_for_genai()  # after the answer (typing, importlib); genai loads later still

    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # a bad flag, reported by argparse on stderr
        _exit_now(exc.code if isinstance(exc.code, int) else 2)
    _setup_logging(args)
    trace_path = args.trace_file or os.environ.get(TRACE_ENV)
    trace = Trace(str(trace_path)) if trace_path else None
    if trace is not None:
        reader.attach_trace(trace)
        output.attach_trace(trace)
    import logging

    if args.fake_responses and not args.fake_responses.is_file():
        # the agent keeps serving: each prompt fails with a message naming the file
        logging.getLogger("acp_server").error(
            "--fake-responses file not found: %s", args.fake_responses
        )
    flags = _flags(args)
    threading.Thread(
        target=_warm_up, args=(flags, foreground), name="adk-warmup", daemon=True
    ).start()
    early = _while_loading(
        reader, output, loader, flags, init_params if _v1_client(init_params) else None, foreground
    )

    from acp_server.serve import serve

    code = serve(reader, output, init_params, flags, early)
    from acp_server.tracing import flush

    flush()  # spans still buffered (a no-op unless OTEL_* asked for export)
    if trace is not None:
        trace.close()
    _exit_now(code)  # logs flushed


if __name__ == "__main__":
    sys.exit(main())
