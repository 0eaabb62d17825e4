"""Issue #14 end to end: the package as users install it, the terminal login the ACP
registry asks for, and a stdout that carries nothing but ACP whatever else writes.

The install test builds the sdist and the wheel (`python -m build`), installs the
wheel (never editable) into a fresh virtual environment and runs `adk-acp` from
there: `--version`, an `initialize` round trip and `--demo`.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

from acp_server import __version__
from tests.e2e.spine import MakeAgent, dirs, start_agent
from tests.fakes.gemini_server import FakeGeminiServer, text_response

pytestmark = [pytest.mark.e2e, pytest.mark.cold]  # an installed copy, its own environment

ROOT = Path(__file__).parents[2]
INITIALIZE = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
KEY = "AIzaSyDtestkeyforthelogintest0123456789"


@pytest.mark.timeout(1500)  # a build and a pip install: minutes on a busy machine
def test_the_wheel_installs_into_a_fresh_venv_and_runs(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    (wheel,) = out.glob(f"adk_acp-{__version__}-*.whl")
    (sdist,) = out.glob(f"adk_acp-{__version__}.tar.gz")
    assert sdist.stat().st_size > 0
    env_dir = tmp_path / "fresh"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)],
        check=True,
        capture_output=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
    # Bytecode compiled at install, so a first start does not compile it.
    (site,) = env_dir.glob("lib/python3*/site-packages")
    for package in ("acp_server", "runtime", "runtime/adk"):
        assert list((site / package / "__pycache__").glob("*.pyc")), package
    agent = env_dir / "bin" / "adk-acp"
    # no warm per-user server either (tests/conftest.py): this environment is built anew
    clean = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "ADK_ACP_NO_WARM": "1"}
    version = subprocess.run(
        [str(agent), "--version"], capture_output=True, text=True, env=clean, timeout=60, check=True
    )
    assert version.stdout.strip() == f"adk-acp {__version__}"
    # run from outside the checkout, so nothing comes from the source tree
    answer = subprocess.run(
        [str(agent)],
        input=INITIALIZE,
        capture_output=True,
        env=clean,
        cwd=tmp_path,
        timeout=60,
        check=True,
    )
    (line,) = answer.stdout.splitlines()
    result = json.loads(line)["result"]
    assert result["agentInfo"]["version"] == __version__
    assert result["authMethods"]
    # the README's first command ends with the demo: no key, no network, from the wheel
    demo = subprocess.run(
        [str(agent), "--demo"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=clean,
        cwd=tmp_path,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr
    assert "✓ Edit hello.py" in demo.stderr and "Hello, Ada!" in demo.stdout


async def test_login_saves_the_key_owner_only_and_later_sessions_use_it(
    make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    d = dirs(tmp_path)
    config = d.home / ".config"
    env = {**os.environ, "HOME": str(d.home), "XDG_CONFIG_HOME": str(config)}
    env.pop("GEMINI_API_KEY", None)
    done = subprocess.run(
        [sys.executable, "-m", "acp_server.cli", "--login"],
        input=f"{KEY}\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout + done.stderr
    saved = config / "adk-acp" / "credentials.json"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert stat.S_IMODE(saved.parent.stat().st_mode) == 0o700
    assert json.loads(saved.read_text()) == {"geminiApiKey": KEY}

    log = tmp_path / "agent.log"
    fake_gemini.add(text_response("signed in"))
    client = await start_agent(
        make_agent,
        d,
        fake_gemini,
        api_key=None,
        args=["--log-file", str(log), "--log-level", "DEBUG"],
        initialize=False,
    )
    init = await client.initialize({"auth": {"terminal": True}})
    login = [m for m in init["authMethods"] if m.get("type") == "terminal"]
    assert [(m["id"], m["args"]) for m in login] == [("login", ["--login"])]
    session = await client.new_session(d.workspace)
    assert await client.prompt(session["sessionId"], "hello") == {"stopReason": "end_turn"}
    assert client.text_of(session["sessionId"]) == "signed in"
    assert fake_gemini.generate_requests[-1].headers.get("x-goog-api-key") == KEY
    await client.close()
    assert KEY not in log.read_text()


def test_nothing_but_acp_reaches_stdout(tmp_path: Path) -> None:
    noise = tmp_path / "noise"
    noise.mkdir()
    (noise / "sitecustomize.py").write_text(
        "import ctypes, sys, threading\n"
        "class Noisy:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'pygls':\n"
        "            print('a library printing on import')\n"
        "            ctypes.CDLL(None).write(1, b'C-level write to fd 1\\n', 22)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Noisy())\n"
        "def later():\n"
        "    print('a stray print later')\n"
        "    ctypes.CDLL(None).write(1, b'another C-level write\\n', 22)\n"
        "threading.Timer(1.0, later).start()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(noise), str(ROOT)])}
    script = tmp_path / "model.jsonl"
    script.write_text("")
    new = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(tmp_path), "mcpServers": []},
        }
    ).encode()
    log = tmp_path / "stderr.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "acp_server.cli", "--fake-responses", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
        assert process.stdin is not None
        process.stdin.write(INITIALIZE + new + b"\n")
        process.stdin.flush()
        # pygls loads on a thread after `initialize`: wait for its import and the later
        # writes (however slow the machine), then end the session.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seen = log.read_bytes()
            if b"C-level write to fd 1" in seen and b"another C-level write" in seen:
                break
            time.sleep(0.1)
        out, _ = process.communicate(timeout=30)
    err = log.read_bytes()
    lines = out.splitlines()
    assert lines, err
    for line in lines:
        assert json.loads(line)["jsonrpc"] == "2.0", line
    assert b"a library printing on import" in err and b"C-level write to fd 1" in err
    assert b"another C-level write" in err
