"""Real web pages against `adk-acp serve` on loopback (issue 38): Debian's Chromium opens
a page of another origin that tries what a hostile page would (a WebSocket to
`ws://127.0.0.1:PORT/acp` that opens a session, a `fetch` POST of `initialize`, both
plain and `no-cors`, the same through a name that resolves to 127.0.0.1), and the agent
never sees a session. The same page with its origin allowed (`--allow-origin`) does open
one, so the page would tell if the agent were reachable."""

from __future__ import annotations

import asyncio
import html
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from tests.debian_packages import ensure_package
from tests.e2e.remote_client import Served, remote, start_serve

# Chromium and a real `adk-acp serve` start in each test (seconds on a busy machine).
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

NO_MODEL = "http://127.0.0.1:9"
REBIND = "rebind.test"
"""A name Chromium resolves to 127.0.0.1 (`--host-resolver-rules`), as DNS rebinding does."""

PAGE = """<!doctype html>
<html><head><title>running</title></head><body><script>
const q = new URLSearchParams(location.search);
const port = q.get("port"), cwd = q.get("cwd");
const results = {};
const hosts = ["127.0.0.1", "localhost", q.get("rebind")];
const init = {jsonrpc: "2.0", id: 1, method: "initialize", params: {protocolVersion: 1}};
const newSession = {jsonrpc: "2.0", id: 2, method: "session/new",
                    params: {cwd: cwd, mcpServers: []}};

function socket(host) {
  return new Promise((resolve) => {
    const seen = [];
    let ws;
    try { ws = new WebSocket(`ws://${host}:${port}/acp`); }
    catch (e) { resolve(["throw " + e]); return; }
    const timer = setTimeout(() => { seen.push("timeout"); ws.close(); resolve(seen); }, 8000);
    ws.onopen = () => { seen.push("open"); ws.send(JSON.stringify(init)); };
    ws.onmessage = (m) => {
      const message = JSON.parse(m.data);
      seen.push("message " + message.id);
      if (message.id === 1) ws.send(JSON.stringify(newSession));
      if (message.id === 2) {
        seen.push(message.result ? "session " + message.result.sessionId : "error");
        clearTimeout(timer); ws.close(); resolve(seen);
      }
    };
    ws.onerror = () => seen.push("error");
    ws.onclose = (e) => { seen.push("close " + e.code); clearTimeout(timer); resolve(seen); };
  });
}

async function post(host, mode) {
  try {
    const answer = await fetch(`http://${host}:${port}/acp`, {
      method: "POST", mode: mode, body: JSON.stringify(init),
      headers: mode === "cors" ? {"content-type": "application/json"}
                               : {"content-type": "text/plain"},
    });
    return `status ${answer.status} ${answer.type}`;
  } catch (e) { return "failed " + e.name; }
}

(async () => {
  for (const host of hosts) {
    results["ws " + host] = await socket(host);
    results["fetch " + host] = await post(host, "cors");
    results["no-cors " + host] = await post(host, "no-cors");
  }
  document.title = JSON.stringify(results);
})();
</script></body></html>
"""


def chromium() -> Path:
    def find() -> Path | None:
        found = shutil.which("chromium") or shutil.which("chromium-browser")
        return Path(found) if found else None

    return ensure_package("chromium", find, "Debian's chromium")


class PageHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def page_server() -> Iterator[int]:
    """Another origin on this machine: http://127.0.0.1:PORT/ serving the page."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), PageHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


async def visit(browser: Path, page_port: int, served: Served, cwd: Path, home: Path) -> dict:
    """What the page saw (its title, once its script has finished), read through
    Chromium's DevTools list of pages; real time, no virtual clock."""
    query = urlencode({"port": served.port, "cwd": str(cwd), "rebind": REBIND})
    home.mkdir()
    process = await asyncio.create_subprocess_exec(
        str(browser), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--no-first-run", "--disable-background-networking", f"--user-data-dir={home}",
        f"--host-resolver-rules=MAP {REBIND} 127.0.0.1", "--remote-debugging-port=0",
        f"http://{REBIND}:{page_port}/page.html?{query}",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        async with asyncio.timeout(150):
            return await _title_results(home / "DevToolsActivePort")
    finally:
        process.kill()
        await process.wait()


async def _title_results(port_file: Path) -> dict:
    while not port_file.exists() or not port_file.read_text().strip():
        await asyncio.sleep(0.1)
    devtools = f"http://127.0.0.1:{port_file.read_text().split()[0]}/json/list"
    async with httpx.AsyncClient() as http:
        while True:
            pages = (await http.get(devtools)).json()
            titles = [p["title"] for p in pages if p.get("type") == "page"]
            done = [t for t in titles if t.startswith("{")]
            if done:
                results = json.loads(html.unescape(done[0]))
                assert isinstance(results, dict)
                return results
            await asyncio.sleep(0.2)


async def listed_sessions(served: Served, cwd: Path) -> list[object]:
    async with remote("ws", served, None) as client:
        listed = await client.request("session/list", {"cwd": str(cwd)})
    return list(listed["sessions"])


async def test_a_page_of_another_origin_never_reaches_the_agent(
    page_server: int, tmp_path: Path
) -> None:
    browser = chromium()
    cwd = (tmp_path / "ws").resolve()
    cwd.mkdir()
    served = await start_serve(tmp_path / "home", NO_MODEL, "--insecure-loopback")
    try:
        results = await visit(browser, page_server, served, cwd, tmp_path / "chromium")
        assert await listed_sessions(served, cwd) == []
    finally:
        assert await served.stop() == 0, served.log()
    for host in ("127.0.0.1", "localhost", REBIND):
        seen = results[f"ws {host}"]
        assert "open" not in seen and not any(s.startswith("session") for s in seen), results
        assert results[f"fetch {host}"].startswith("failed"), results
    log = served.log()
    assert f"refused a browser request from origin 'http://{REBIND}:{page_server}'" in log, log
    assert "session/new" not in log


async def test_the_same_page_with_its_origin_allowed_opens_a_session(
    page_server: int, tmp_path: Path
) -> None:
    """The control: the page does reach an agent that allows its origin and its Host."""
    browser = chromium()
    cwd = (tmp_path / "ws").resolve()
    cwd.mkdir()
    served = await start_serve(
        tmp_path / "home", NO_MODEL, "--insecure-loopback",
        "--allow-origin", f"http://{REBIND}:{page_server}", "--public-host", REBIND,
    )  # fmt: skip
    try:
        results = await visit(browser, page_server, served, cwd, tmp_path / "chromium")
        sessions = await listed_sessions(served, cwd)
    finally:
        assert await served.stop() == 0, served.log()
    for host in ("127.0.0.1", "localhost", REBIND):
        assert any(s.startswith("session ") for s in results[f"ws {host}"]), results
        assert results[f"fetch {host}"] == "status 200 cors", results
    assert len(sessions) == 3, sessions
