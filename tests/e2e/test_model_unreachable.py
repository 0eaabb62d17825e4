"""An unreachable or failing model says so (issue 34.5), through the real process.

Every retry is told (with `-p` a line on stderr naming the endpoint, what failed,
attempt n of m and the next try; in the editor a notice), the attempts are Gemini
CLI's (10), and the end is one clear message without a traceback unless
`--log-level DEBUG`. The pauses are scaled down (`ADK_ACP_RETRY_DELAY_SCALE`).
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from tests.e2e.acp_client import AcpError
from tests.e2e.headless_harness import run_cli
from tests.e2e.spine import dirs
from tests.e2e.tools_harness import EDITOR, MakeAgent, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, error_response, text_response

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

SCALE = {"ADK_ACP_RETRY_DELAY_SCALE": "0.001"}
RETRY = re.compile(
    r"The model call failed \((?P<where>[^ ]+ at [^ ]+): (?P<what>.+?)\); "
    r"attempt (?P<n>\d+) of (?P<m>\d+), next try in [\d.]+ (?:s|min)"
)


def closed_port_url() -> str:
    """A loopback URL where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_p_with_the_api_unreachable_tells_each_retry_and_ends_in_one_line(
    tmp_path: Path,
) -> None:
    d = dirs(tmp_path)
    url = closed_port_url()
    env = {**SCALE, "GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "x"}
    done = run_cli(d, ["-p", "hello"], env=env)
    assert done.code == 1, done.stderr
    assert done.stdout == ""
    retries = [m.groupdict() for m in RETRY.finditer(done.stderr)]
    assert [int(r["n"]) for r in retries] == list(range(1, 10))
    assert {r["m"] for r in retries} == {"10"}
    assert {r["where"] for r in retries} == {f"gemini-2.5-pro at {url}"}
    assert {r["what"] for r in retries} == {"connection refused"}
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("[ERROR] The model could not be reached")
    assert url in last and "gave up after 10 attempts" in last
    assert "Traceback" not in done.stderr


def test_with_log_level_debug_the_traceback_is_there(tmp_path: Path) -> None:
    d = dirs(tmp_path)
    env = {**SCALE, "GOOGLE_GEMINI_BASE_URL": closed_port_url(), "GEMINI_API_KEY": "x"}
    done = run_cli(d, ["-p", "hello", "--log-level", "DEBUG"], env=env)
    assert done.code == 1
    assert "Traceback" in done.stderr and "gave up after 10 attempts" in done.stderr


def test_p_tells_server_errors_then_the_answer(
    tmp_path: Path, fake_gemini_thread: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    fake_gemini_thread.add(
        error_response(503, "UNAVAILABLE", "The model is overloaded."),
        error_response(500, "INTERNAL", "Internal error."),
        text_response("fine now"),
    )
    done = run_cli(d, ["-p", "hello"], fake_gemini_thread, env=SCALE)
    assert done.code == 0, done.stderr
    assert done.stdout.strip() == "fine now"
    retries = [m.groupdict() for m in RETRY.finditer(done.stderr)]
    assert retries, done.stderr
    assert [(r["n"], r["what"].split(":")[0]) for r in retries] == [
        ("1", "HTTP 503 (unavailable)"),
        ("2", "HTTP 500 (server error)"),
    ]
    assert fake_gemini_thread.base_url in retries[0]["where"]


async def test_the_editor_gets_a_notice_per_retry_and_one_error(
    make_agent: MakeAgent, fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    url = closed_port_url()
    env = {**SCALE, "GOOGLE_GEMINI_BASE_URL": url}
    agent = await start_agent(make_agent, tmp_path, fake_gemini, EDITOR, env_extra=env)
    with pytest.raises(AcpError) as failed:
        await agent.prompt("hello", timeout=120)
    text = agent.text()
    assert [int(m["n"]) for m in RETRY.finditer(text)] == list(range(1, 10))
    assert "gave up after 10 attempts" in str(failed.value)
    assert url in str(failed.value)


def test_p_with_ollama_unreachable_says_the_same_for_its_endpoint(tmp_path: Path) -> None:
    d = dirs(tmp_path)
    host = closed_port_url()
    env = {**SCALE, "OLLAMA_HOST": host}
    done = run_cli(d, ["-p", "hello", "--model", "ollama/qwen2.5-coder"], api_key=None, env=env)
    assert done.code == 1, done.stderr
    retries = [m.groupdict() for m in RETRY.finditer(done.stderr)]
    assert [int(r["n"]) for r in retries] == list(range(1, 10))
    assert {r["where"] for r in retries} == {f"ollama/qwen2.5-coder at {host}/v1"}
    assert {r["what"] for r in retries} == {"connection refused"}
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("[ERROR] The model could not be reached (ollama/qwen2.5-coder")
    assert "Traceback" not in done.stderr
