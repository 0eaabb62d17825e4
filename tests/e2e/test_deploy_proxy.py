"""The deployment of `deploy/` on loopback (issue 24.7): Debian's nginx with the very
configuration compose uses (`deploy/nginx/adk-acp.conf.template`, rendered with loopback
addresses and a throwaway certificate), in front of two `adk-acp serve` started with the
image's entry command and compose's options, sharing one real PostgreSQL. Official
clients go through the proxy: WebSocket (wss) and Streamable HTTP + SSE (https).

The image itself is not built here (no Docker engine): `tests/unit/test_deploy_files.py`
checks the Dockerfile and the compose file. The stack is started once for the module.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.debian_packages import ensure_package
from tests.deploy_files import agent_services, render_nginx, serve_command
from tests.e2e.acp_client import AGENT_COMMAND
from tests.e2e.node_clients import client_script, node_clients
from tests.e2e.remote_client import READY, RemoteAcp, serve_env
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    HangPoint,
    function_call_response,
    text_response,
)
from tests.pg_cluster import Cluster
from tests.pg_cluster import _free_port as free_port

# The stack (PostgreSQL, two serves, nginx) starts once; its tests drive turns through it.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[2]
TOKENS = [f"deploy-test-token-{n:02d}-0123456789abcdef" for n in range(16)]
"""The token file's tokens (the clients use the first two); many, to see both instances used."""
PUBLIC_HOST = "acp.test"
"""compose's ACP_PUBLIC_HOST: the name the clients use, forwarded by nginx as Host."""


@dataclass
class Process:
    """A started server whose stderr is collected (`log`) until it exits."""

    popen: subprocess.Popen[bytes]
    output: bytearray = field(default_factory=bytearray)
    drained: threading.Event = field(default_factory=threading.Event)
    terminated: bool = False

    @classmethod
    def start(cls, argv: list[str], env: dict[str, str], cwd: Path) -> Process:
        popen = subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        started = cls(popen)
        threading.Thread(target=started._drain, daemon=True).start()
        return started

    def _drain(self) -> None:
        assert self.popen.stderr is not None
        with self.popen.stderr:
            while chunk := self.popen.stderr.read1(65536):
                self.output.extend(chunk)
        self.drained.set()

    def log(self) -> str:
        return self.output.decode("utf-8", "replace")

    def wait_for(self, ready: Callable[[], bool], what: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if self.popen.poll() is not None:
                raise AssertionError(f"{what} exited {self.popen.returncode}: {self.log()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} did not start: {self.log()}")
            time.sleep(0.05)

    def stop(self) -> int:
        """SIGTERM (once: a second one would not wait for the sessions to close), then its
        exit code."""
        if self.popen.poll() is None and not self.terminated:
            self.popen.send_signal(signal.SIGTERM)
        self.terminated = True
        try:
            code = self.popen.wait(30)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            code = self.popen.wait()
        self.drained.wait(10)
        return code


def start_instance(home: Path, base_url: str, tokens: Path, store: str) -> Process:
    """One agent container's command on loopback: the image's entry point with compose's
    options, its address and token file replaced, its store from $ADK_ACP_STORE."""
    (service, *_) = agent_services().values()
    argv = serve_command(service)
    assert argv[:2] == ["adk-acp", "serve"], argv
    places = {"--host": "127.0.0.1", "--port": "0", "--token-file": str(tokens)}
    argv = [
        places.get(argv[i - 1], arg) if i else arg for i, arg in enumerate(argv)
    ]  # the value after each replaced option
    home.mkdir(parents=True)
    env = serve_env(home, base_url, ADK_ACP_STORE=store, ADK_ACP_PUBLIC_HOST=PUBLIC_HOST)
    return Process.start([*AGENT_COMMAND, *argv[1:]], env, home)


def port_of(instance: Process) -> int:
    """Once `instance` says where it listens: its port."""
    instance.wait_for(lambda: READY.search(instance.output) is not None, "adk-acp serve")
    match = READY.search(instance.output)
    assert match is not None
    return int(match.group(2))


def nginx_binary() -> Path:
    def find() -> Path | None:
        found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
        return Path(found) if found else None

    return ensure_package("nginx", find, "Debian's nginx")


def certificate(folder: Path) -> Path:
    """A self-signed certificate for 127.0.0.1 in `folder/tls` (fullchain.pem, privkey.pem),
    where the template finds them; returns the certificate for the clients to trust."""
    tls = folder / "tls"
    tls.mkdir()
    openssl = ensure_package("openssl", lambda: shutil.which("openssl"), "the openssl command")
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "2", "-subj", "/CN=adk-acp test proxy",
         "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(tls / "privkey.pem"), "-out", str(tls / "fullchain.pem")],
        check=True, capture_output=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return tls / "fullchain.pem"


def start_nginx(folder: Path, upstreams: list[int]) -> tuple[Process, int]:
    """nginx in the foreground with the compose template in an http block of its own
    (test-only: paths under `folder`, an access log naming the upstream of each request)."""
    port = free_port()
    site = render_nginx(
        {
            "ACP_LISTEN": f"127.0.0.1:{port}",
            "ACP_UPSTREAM_1": f"127.0.0.1:{upstreams[0]}",
            "ACP_UPSTREAM_2": f"127.0.0.1:{upstreams[1]}",
        }
    )
    (folder / "adk-acp.conf").write_text(site)
    (folder / "temp").mkdir()
    temp = "\n".join(
        f"  {kind}_temp_path {folder / 'temp' / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (folder / "nginx.conf").write_text(
        f"daemon off;\nworker_processes 1;\npid {folder / 'nginx.pid'};\n"
        "events { worker_connections 512; }\n"
        "http {\n"
        "  log_format upstream\n"
        "    '$request_method $uri $status $upstream_addr \"$http_authorization\"';\n"
        f"  access_log {folder / 'access.log'} upstream;\n{temp}\n"
        f"  include {folder / 'adk-acp.conf'};\n}}\n"
    )
    nginx = nginx_binary()
    conf = folder / "nginx.conf"
    check = subprocess.run(
        [str(nginx), "-t", "-p", str(folder), "-e", str(folder / "error.log"), "-c", str(conf)],
        capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr
    process = Process.start(
        [str(nginx), "-p", str(folder), "-e", str(folder / "error.log"), "-c", str(conf)],
        dict(os.environ), folder,
    )  # fmt: skip
    process.wait_for(lambda: _listening(port), "nginx")
    return process, port


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Stack:
    folder: Path
    fake: FakeGeminiServer
    cert: Path
    port: int
    workspace: Path
    upstreams: list[int]

    @property
    def wss(self) -> str:
        return f"wss://127.0.0.1:{self.port}/acp"

    @property
    def https(self) -> str:
        return f"https://127.0.0.1:{self.port}/acp"

    def upstream_log(self) -> list[tuple[str, str, str, str, str]]:
        lines = (self.folder / "access.log").read_text().splitlines()
        return [tuple(shlex.split(line)) for line in lines]  # type: ignore[misc]


@pytest.fixture(scope="module")
def stack(postgres_cluster: Cluster) -> Iterator[Stack]:
    database = postgres_cluster.create_database()
    # nginx's workers (not root) must reach the folder: in /tmp itself, readable
    folder = Path(tempfile.mkdtemp(prefix="adk-acp-nginx-", dir="/tmp"))
    folder.chmod(0o755)
    instances: list[Process] = []
    try:
        with FakeGeminiServer() as fake:
            tokens = folder / "tokens"
            tokens.write_text("".join(f"{token}\n" for token in TOKENS))
            workspace = (folder / "workspaces" / "team").resolve()
            workspace.mkdir(parents=True)
            store = postgres_cluster.url(database)
            for n in (1, 2):
                instances.append(start_instance(folder / f"home-{n}", fake.base_url, tokens, store))
            cert = certificate(folder)
            ports = [port_of(instance) for instance in instances]
            proxy, port = start_nginx(folder, ports)
            instances.append(proxy)
            yield Stack(folder, fake, cert, port, workspace, ports)
    finally:
        for process in instances:  # all at once, then each waited for
            process.popen.send_signal(signal.SIGTERM)
            process.terminated = True
        codes = [process.stop() for process in instances]
        assert codes == [0] * len(instances), [process.log() for process in instances]
        postgres_cluster.drop_database(database)
        shutil.rmtree(folder, ignore_errors=True)


def _allow(asked: dict[str, object]) -> dict[str, object]:
    options = asked["params"]["options"]  # type: ignore[index]
    option = next(o for o in options if o["kind"] == "allow_once")
    return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}


async def test_official_clients_through_the_proxy_stream_and_resume(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(stack.cert))  # wss:// trusts the test proxy
    ws, fake, token = stack.workspace, stack.fake, TOKENS[0]

    # affinity: one token, one instance; the tokens spread over both instances
    import httpx

    async with httpx.AsyncClient(verify=ssl.create_default_context(cafile=stack.cert)) as http:
        for _ in range(2):
            for each in TOKENS:
                health = await http.get(
                    f"https://127.0.0.1:{stack.port}/healthz",
                    headers={"Authorization": f"Bearer {each}"},
                )
                assert health.status_code == 200
    by_token: dict[str, set[str]] = {}
    for _, uri, _, upstream, authorization in stack.upstream_log():
        if uri == "/healthz":
            by_token.setdefault(authorization, set()).add(upstream)
    assert all(len(upstreams) == 1 for upstreams in by_token.values()), by_token
    assert {u for each in by_token.values() for u in each} == {
        f"127.0.0.1:{port}" for port in stack.upstreams
    }

    # WebSocket: a streamed answer, then the connection dropped mid-turn and the session
    # resumed over Streamable HTTP, its question asked and answered on the SSE stream
    streaming, hang, sse = HangPoint(), HangPoint(), HangPoint()
    fake.add(
        text_response(["Streamed ", "through ", "nginx"]).hang_after(1, streaming),
        function_call_response(
            "write_file", {"file_path": str(ws / "b.txt"), "content": "two\n"}, text="Writing "
        ).hang_after(0, hang),
        text_response(["Done ", "after the reconnect."]).hang_after(1, sse),
    )
    first = await RemoteAcp.websocket(stack.wss, token)
    await first.initialize()
    session_id = await first.new_session(ws)
    turn = first.start("session/prompt", first.prompt_params(session_id, "hi"))
    # the first chunk reaches the client while the model still holds the rest: unbuffered
    await first.wait_until(lambda: first.text_of(session_id) == "Streamed ")
    streaming.release()
    assert await asyncio.wait_for(turn, 60) == {"stopReason": "end_turn"}
    assert first.text_of(session_id) == "Streamed through nginx"
    first.start("session/prompt", first.prompt_params(session_id, "write b"))
    await hang.wait_reached_async()
    cursor = first.last_cursor()
    await first.close()
    hang.release()
    second = await RemoteAcp.http(stack.https, token)  # back over HTTP + SSE
    try:
        await second.request(
            "session/resume",
            {"sessionId": session_id, "cwd": str(ws), "mcpServers": [],
             "_meta": {"adkAcp": {"replayFrom": cursor}}},
        )  # fmt: skip
        asked = await asyncio.wait_for(second.asked.get(), 60)
        assert "Writing " in second.text_of(session_id)  # missed while no client was there
        await second.answer(asked, _allow(asked))
        # SSE unbuffered too: the first chunk arrives while the model holds the rest
        await second.wait_until(lambda: second.text_of(session_id).endswith("Done "))
        sse.release()
        await second.wait_until(lambda: "Done after the reconnect." in second.text_of(session_id))
    finally:
        await second.close()
    assert not first.violations and not second.violations, first.violations + second.violations
    assert (ws / "b.txt").read_text() == "two\n"

    # Streamable HTTP + SSE: the official TypeScript SDK's client, over https
    clients = node_clients()
    script = client_script(clients, "ts_remote.mjs")
    fake.add(
        text_response(["Hello ", "TypeScript"]),
        function_call_response("write_file", {"file_path": str(ws / "t.txt"), "content": "ts\n"}),
        text_response("Wrote it."),
    )
    report = stack.folder / "ts-report.json"
    process = await asyncio.create_subprocess_exec(
        str(clients.node), str(script), "http", stack.https, token, str(ws), str(report),
        cwd=str(clients.root), env={**os.environ, "NODE_EXTRA_CA_CERTS": str(stack.cert)},
    )  # fmt: skip
    assert await asyncio.wait_for(process.wait(), 120) == 0
    result = json.loads(report.read_text())
    assert "error" not in result, result["error"]
    assert result["stops"] == ["end_turn", "end_turn"]
    assert result["texts"] == ["Hello TypeScript", "Wrote it."]
    assert result["permissions"] == 1
    assert (ws / "t.txt").read_text() == "ts\n"
    # every request of the clients' token went to one instance
    assert len({u for _, uri, _, u, a in stack.upstream_log() if a == f"Bearer {token}"}) == 1


async def test_the_proxy_passes_the_public_name_and_web_pages_are_refused(stack: Stack) -> None:
    """nginx forwards the Host clients used: the public name (compose's ACP_PUBLIC_HOST)
    and the address reach an instance; any other name (a rebinding page's) and any
    browser Origin are refused by the instance, token or not (issue 38)."""
    import httpx

    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": 1}}  # fmt: skip
    token = {"Authorization": f"Bearer {TOKENS[0]}"}
    async with httpx.AsyncClient(verify=ssl.create_default_context(cafile=stack.cert)) as http:

        async def status(**headers: str) -> int:
            answer = await http.post(stack.https, headers={**token, **headers}, json=initialize)
            return answer.status_code

        assert await status() == 200
        assert await status(Host=PUBLIC_HOST) == 200
        assert await status(Host=f"{PUBLIC_HOST}:{stack.port}") == 200
        assert await status(Host="evil.example") == 421
        assert await status(Host=f"evil.example:{stack.port}") == 421
        assert await status(Origin="https://evil.example") == 403
        assert await status(Origin=f"https://{PUBLIC_HOST}") == 403
        upgrade = await http.get(
            stack.https,
            headers={**token, "Origin": "https://evil.example", "Connection": "Upgrade",
                     "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                     "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="},
        )  # fmt: skip
        assert upgrade.status_code == 403


def test_acpx_through_adk_acp_connect(stack: Stack) -> None:
    """acpx starts `adk-acp connect wss://…` as its agent: a prompt answered, a write's
    permission asked (and approved by `--approve-all`), through the proxy."""
    clients = node_clients()
    ws = stack.workspace
    stack.fake.add(
        function_call_response(
            "write_file", {"file_path": str(ws / "todo.txt"), "content": "buy milk\n"}
        ),
        text_response(["All ", "done."]),
    )
    token_file = stack.folder / "client-token"
    token_file.write_text(TOKENS[1] + "\n")
    agent = shlex.join([*AGENT_COMMAND, "connect", stack.wss, "--token-file", str(token_file)])
    env = {
        **os.environ,
        "SSL_CERT_FILE": str(stack.cert),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "PATH": os.pathsep.join([str(clients.node.parent), os.environ.get("PATH", "")]),
    }
    done = subprocess.run(
        [str(clients.node), str(clients.acpx), "--approve-all", "--format", "json",
         "--agent", agent, "exec", "write todo.txt"],
        env=env, cwd=ws, timeout=180, capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    assert (ws / "todo.txt").read_text() == "buy milk\n"
    messages = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    said = "".join(
        m["params"]["update"]["content"].get("text", "")
        for m in messages
        if m.get("method") == "session/update"
        and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
    )
    assert said == "All done."
    (asked,) = [m for m in messages if m.get("method") == "session/request_permission"]
    answers = [m for m in messages if m.get("id") == asked["id"] and "result" in m]
    assert answers and answers[0]["result"]["outcome"]["outcome"] == "selected"
