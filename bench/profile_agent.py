"""Profile one warm path of `adk-acp` with cProfile, in the agent process itself.

    .venv/bin/python bench/profile_agent.py
        [--path prompt|first_chunk|stream|session_new|first_session_new]
        [--count N] [--after N] [--api] [--sort tottime|cumulative] [--top 30] [--out FILE]

The agent runs under this file (`--agent-side`): cProfile is armed on SIGUSR1 and
dumped on SIGUSR2, so only the window between the two is profiled: after the
background warm-up has settled and after one cold prompt, the driver sends SIGUSR1,
runs `--count` prompts (or 200-chunk streams, or `session/new`s), sends SIGUSR2 and
prints the top functions; `first_session_new` profiles just the first `session/new`.
`first_chunk` profiles only what a warm prompt does before its first chunk: the window
opens (SIGUSR1) before each prompt is sent and closes as the agent writes that prompt's
first `agent_message_chunk`, and the prompt → first chunk times are printed too.
`--after N` first runs N unprofiled prompts (no pause), to see a long session's turns.
`--api` runs the agent in API-key mode against the fake Gemini server instead of
`--fake-responses`. cProfile sees the main thread, where the event loop and every
handler run; the idle time between requests shows up under `epoll.poll`. (The agent
ends with `os._exit`, so `python -m cProfile` on it never writes a file.)
"""

from __future__ import annotations

import argparse
import os
import pstats
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.client import AgentProcess  # noqa: E402
from bench.common import (  # noqa: E402
    SETTLE_MAX_S,
    SETTLE_MIN_S,
    WARM_PAUSE_S,
    Sandbox,
    sandbox,
)
from bench.script import STREAM_CHUNKS  # noqa: E402


def agent_side(out: str, argv: list[str]) -> int:
    """Run `adk-acp` with a cProfile window opened by SIGUSR1 and dumped by SIGUSR2
    (with `ADK_ACP_PROFILE_UNTIL_CHUNK=1`, also closed by the next first chunk written)."""
    import cProfile

    profiler = cProfile.Profile()
    if os.environ.get("ADK_ACP_PROFILE_UNTIL_CHUNK") == "1":
        _close_on_first_chunk(profiler)

    def start(*_: object) -> None:
        profiler.enable()

    def stop(*_: object) -> None:
        profiler.disable()
        profiler.dump_stats(out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    from acp_server.cli import main

    return main(argv)


def _close_on_first_chunk(profiler: Any) -> None:
    """Disable `profiler` as the agent writes a message chunk (on the loop's thread, the
    one the window was opened on)."""
    import threading

    from acp_server.stdio import Output

    write = Output.write
    main_thread = threading.get_ident()

    def write_and_close(self: Output, data: bytes) -> None:
        if b'"agent_message_chunk"' in data and threading.get_ident() == main_thread:
            profiler.disable()
        write(self, data)

    Output.write = write_and_close  # type: ignore[method-assign]


@contextmanager
def model_source(
    box: Sandbox, path: str, count: int, api: bool, after: int = 0
) -> Iterator[tuple[list[str], dict[str, str]]]:
    """Agent flags and env: a `--fake-responses` script, or API-key mode on the fake server."""
    if not api:
        short, streams = (1 + after, count) if path == "stream" else (count + 1 + after, count)
        script = box.script("profile.jsonl", short_turns=short, stream_turns=streams)
        yield ["--fake-responses", str(script)], box.env()
        return
    from tests.fakes.gemini_server import FakeGeminiServer, text_response

    reply = (
        text_response([f"w{i} " for i in range(STREAM_CHUNKS)])
        if path == "stream"
        else text_response(["Hello", " there."])
    )
    with FakeGeminiServer(default=reply) as server:
        yield [], box.env(GEMINI_API_KEY="x", GOOGLE_GEMINI_BASE_URL=server.base_url)


def drive(path: str, count: int, out: Path, api: bool = False, after: int = 0) -> None:
    """Start the profiled agent, settle, run `count` rounds of `path` inside the window."""
    with sandbox() as box, model_source(box, path, count, api, after) as (flags, env):
        argv = [sys.executable, __file__, "--agent-side", str(out), "--", *flags]
        if path == "first_chunk":
            env = {**env, "ADK_ACP_PROFILE_UNTIL_CHUNK": "1"}
        with AgentProcess.spawn(argv, env=env, cwd=box.workspace) as agent:
            agent.initialize().result  # noqa: B018
            agent.wait_idle(at_least=SETTLE_MIN_S, at_most=SETTLE_MAX_S)
            out.unlink(missing_ok=True)
            if path == "first_session_new":
                os.kill(agent.pid, signal.SIGUSR1)
                agent.drain(0.05)
            session_id = agent.new_session(box.workspace).result["sessionId"]
            if path != "first_session_new":
                agent.prompt(session_id, "hello")
                for i in range(after):
                    agent.prompt(session_id, f"prompt {i}")
                agent.drain(WARM_PAUSE_S)
                firsts: list[float] = []
                for i in range(count):
                    if i == 0 or path == "first_chunk":
                        os.kill(agent.pid, signal.SIGUSR1)
                        agent.drain(0.05)
                    if path == "session_new":
                        agent.new_session(box.workspace)
                    else:
                        firsts.append(agent.prompt(session_id, "again").to_first_chunk)
                    agent.drain(WARM_PAUSE_S)
                if path == "first_chunk":
                    ms = sorted(f * 1000 for f in firsts)
                    median = ms[len(ms) // 2]
                    sys.stdout.write(f"prompt → 1st chunk under the profiler: {median:.1f} ms\n")
            os.kill(agent.pid, signal.SIGUSR2)
            deadline = time.perf_counter() + 10
            while not out.exists() and time.perf_counter() < deadline:
                agent.drain(0.05)
            agent.drain(0.2)  # let the dump finish writing
            agent.close()


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["--agent-side"]:
        rest = args_in[2:]
        return agent_side(args_in[1], rest[1:] if rest[:1] == ["--"] else rest)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--path",
        choices=["prompt", "first_chunk", "stream", "session_new", "first_session_new"],
        default="prompt",
        help=f"what to profile: short prompts, a warm prompt up to its first chunk, "
        f"{STREAM_CHUNKS}-chunk streams, "
        "repeated session/new, or the first session/new of a warmed-up "
        "process (default prompt)",
    )
    parser.add_argument("--count", type=int, default=10, help="rounds inside the window")
    parser.add_argument("--after", type=int, default=0, help="unprofiled prompts before the window")
    parser.add_argument(
        "--api",
        action="store_true",
        help="API-key mode against the fake Gemini server instead of --fake-responses",
    )
    parser.add_argument("--sort", default="tottime", help="pstats sort key (default tottime)")
    parser.add_argument("--top", type=int, default=30, help="functions to print")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("/tmp/adk-acp-profile.prof"),
        help="where the agent dumps its stats",
    )
    args = parser.parse_args(args_in)
    drive(args.path, args.count, args.out, api=args.api, after=args.after)
    stats = pstats.Stats(str(args.out), stream=sys.stdout)
    stats.strip_dirs().sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
