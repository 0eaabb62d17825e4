"""A tiny MCP server for tests, written with the `mcp` SDK's MCPServer (FastMCP).

    python tests/fakes/mcp_server.py [--mode MODE] [--transport stdio|http|sse] [--port N]

Modes: `normal` serves the tools below; `exit` writes a line to stderr and exits 3
at once; `hang` never answers (it sleeps before reading anything); `stubborn`
serves, then ignores SIGTERM and the end of its stdin (only SIGKILL stops it);
`gated` loads, then waits (answering nothing) until the file named by `FAKE_MCP_GATE`
exists, then serves as `normal`: a server that hangs at start until the test lets it go;
`resources-only` and `prompts-only` (stdio) are the SDK's low-level server with only
resources (`docs://only/readme`) or only prompts (`greet(who)`): their `initialize`
declares nothing else, and `tools/list` is answered "method not found".
With `FAKE_MCP_PID_FILE` set, the server's pid is written there first.

Tools: `echo(text, times=1)` (read-only), `fail(reason)` (an `isError` result),
`big(size)` (that many characters), `picture()` (text and an image), `crash()`
(the process exits mid-call), `env_value(name)` (an environment variable),
`cwd()` (its working directory), `header(name)` (a request header, over HTTP),
`grow()` (adds the tool `extra()` and sends `notifications/tools/list_changed`),
`steps(count)` (reports `notifications/progress` after each step).
Prompt: `review(file, focus="bugs")`. Resource: `notes://team/guidelines` (text).
"""

import argparse
import base64
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

SCRIPT = os.path.abspath(__file__)


def _write_pid() -> None:
    path = os.environ.get("FAKE_MCP_PID_FILE")
    if path:
        with open(path, "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))


def build_server(name: str):  # type: ignore[no-untyped-def]
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ImageContent, TextContent, ToolAnnotations

    app = MCPServer(name)

    @app.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str, times: int = 1) -> str:
        """Repeats the text."""
        return text * times

    @app.tool()
    def fail(reason: str) -> str:
        """Always fails with the given reason."""
        raise ToolError(f"failed on purpose: {reason}")

    @app.tool()
    def big(size: int) -> str:
        """Returns `size` characters."""
        return "".join(chr(ord("a") + i % 26) for i in range(size))

    @app.tool()
    def picture() -> list[TextContent | ImageContent]:
        """Returns a caption and a tiny image."""
        data = base64.b64encode(b"\x89PNG fake image bytes").decode("ascii")
        return [
            TextContent(type="text", text="a caption"),
            ImageContent(type="image", data=data, mime_type="image/png"),
        ]

    @app.tool()
    def crash() -> str:
        """Exits the server process in the middle of the call."""
        os._exit(7)

    @app.tool()
    def env_value(name: str) -> str:
        """The value of an environment variable, or <unset>."""
        return os.environ.get(name, "<unset>")

    @app.tool()
    def cwd() -> str:
        """The server's working directory."""
        return os.getcwd()

    @app.tool()
    async def grow(ctx: Context) -> str:
        """Adds the tool `extra` and tells the client its tool list changed."""

        def extra() -> str:
            """A tool added at runtime."""
            return "extra tool here"

        app.add_tool(extra)
        await ctx.session.send_tool_list_changed()
        return "grown"

    @app.tool()
    async def steps(count: int, ctx: Context) -> str:
        """Works in `count` steps, reporting `notifications/progress` after each."""
        for step in range(1, count + 1):
            await ctx.report_progress(step, count, f"step {step} of {count}")
        return f"{count} steps done"

    @app.prompt()
    def review(file: str, focus: str = "bugs") -> str:
        """Review a file."""
        return f"Please review {file}, looking for {focus}."

    @app.resource("notes://team/guidelines", name="guidelines", mime_type="text/plain")
    def guidelines() -> str:
        return "Team guideline: every function has a docstring."

    @app.tool()
    def header(name: str, ctx: Context) -> str:
        """The value of a request header (HTTP transports), or <none>."""
        headers = ctx.headers or {}
        return str(headers.get(name.lower(), "<none>"))

    return app


def run_partial(mode: str) -> None:
    """A stdio server offering only resources or only prompts (see the module docstring)."""
    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    async def list_resources(ctx: object, params: object) -> types.ListResourcesResult:
        readme = types.Resource(uri="docs://only/readme", name="readme", mime_type="text/plain")
        return types.ListResourcesResult(resources=[readme])

    async def read_resource(
        ctx: object, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        text = types.TextResourceContents(
            uri=params.uri, text="Only resources here: the readme.", mime_type="text/plain"
        )
        return types.ReadResourceResult(contents=[text])

    async def list_prompts(ctx: object, params: object) -> types.ListPromptsResult:
        who = types.PromptArgument(name="who", required=True)
        greet = types.Prompt(name="greet", description="Greets someone.", arguments=[who])
        return types.ListPromptsResult(prompts=[greet])

    async def get_prompt(
        ctx: object, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        who = (params.arguments or {}).get("who", "nobody")
        text = types.TextContent(type="text", text=f"Say hello to {who}.")
        return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text)])

    handlers = (
        {"on_list_resources": list_resources, "on_read_resource": read_resource}
        if mode == "resources-only"
        else {"on_list_prompts": list_prompts, "on_get_prompt": get_prompt}
    )
    server = Server(mode, **handlers)  # type: ignore[call-overload]

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_ports(ports: list[int], what: str, timeout: float = 30) -> None:
    """Returns once every 127.0.0.1 port accepts connections (`what` names them)."""
    deadline = time.monotonic() + timeout
    for port in ports:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{what} did not start") from None
                time.sleep(0.05)


@contextlib.contextmanager
def http_servers(*transports: str) -> Iterator[list[int]]:
    """Runs this server once per transport ("http" or "sse") on free 127.0.0.1 ports;
    yields the ports once each accepts connections. URLs: `/mcp` (http), `/sse` (sse)."""
    ports = [free_port() for _ in transports]
    procs = [
        subprocess.Popen(
            [sys.executable, SCRIPT, "--transport", transport, "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for transport, port in zip(transports, ports, strict=True)
    ]
    try:
        wait_for_ports(ports, "the HTTP MCP servers")
        yield ports
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--mode",
        default="normal",
        choices=[
            "normal",
            "exit",
            "exit-leaving-child",
            "hang",
            "stubborn",
            "gated",
            "resources-only",
            "prompts-only",
        ],
    )
    parser.add_argument("--transport", default="stdio", choices=["stdio", "http", "sse"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--name", default="fake")
    options = parser.parse_args()
    _write_pid()
    if options.mode == "exit-leaving-child":  # the child holds stdout and stderr for 120 s
        subprocess.Popen(["sleep", "120"])  # noqa: S607 - a test fake
    if options.mode in ("exit", "exit-leaving-child"):
        sys.stderr.write("fake MCP server: refusing to start\n")
        sys.exit(3)
    if options.mode == "hang":
        time.sleep(300)
        return
    if options.mode in ("resources-only", "prompts-only"):
        run_partial(options.mode)
        return
    if options.mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    app = build_server(options.name)
    if options.mode == "gated":
        gate = os.environ["FAKE_MCP_GATE"]
        while not os.path.exists(gate):
            time.sleep(0.05)
    if options.transport == "stdio":
        app.run()
    elif options.transport == "http":
        app.run("streamable-http", host="127.0.0.1", port=options.port)
    else:
        app.run("sse", host="127.0.0.1", port=options.port)
    if options.mode == "stubborn":
        time.sleep(300)


if __name__ == "__main__":
    main()
