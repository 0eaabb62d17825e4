"""Issue 36 in a real VS Code: the user reviews the agent's edits as a person does.

code-server (VS Code in the browser) with the .vsix built from the sources, driven by
headless Chromium (tests/vscode/browser/review.mjs: clicks and typing only); the agent
is this checkout's `adk-acp` on the fake Gemini server (in this test's process, so the
model's requests are checked). The workspace's `adkAcp.env` holds the key: the agent
starts with a warning whose button moves it to secret storage. Then: a new file changed
before it is created (Allow in the chat card); one of three hunks rejected by its
CodeLens (Allow in the notification); a word changed in a CRLF file's proposed side
(Allow in the diff editor's title bar); a changed edit rejected; Undo Last Agent Edit;
the agent restarted with the key from secret storage and the session loaded again, its
cards saying "Allowed with your changes". One code-server and one browser for the
file; screenshots go to test-artifacts/vscode/review-*.png."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_client import CLEARED_ENV
from tests.e2e.tools_harness import function_responses, response_text
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response
from tests.vscode.harness import (
    BROWSER,
    CHROMIUM,
    REPO,
    browser_tools,
    node24,
    node_env,
    packaged_extension,
)
from tests.vscode.test_extension_browser import USER_SETTINGS, _free_port, _wait_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

ARTIFACTS = REPO / "test-artifacts" / "vscode"
KEY = "key-from-the-settings"
ORIGINAL_LINES = [f"line {n}\n" for n in range(1, 13)]
THREE_ORIGINAL = "".join(ORIGINAL_LINES)
THREE_PROPOSED = (
    THREE_ORIGINAL.replace("line 2\n", "LINE 2\n")
    .replace("line 6\n", "LINE 6\n")
    .replace("line 11\n", "LINE 11\n")
)
GREET = b"def greet():\r\n    return 'hello'\r\n"


def _script() -> list[Any]:
    """The model's replies, one per request, in the order the scenario asks."""

    def replace(path: str, old: str, new: str) -> Any:
        args = {"file_path": path, "instruction": "edit", "old_string": old, "new_string": new}
        return function_call_response("replace", args)

    return [
        function_call_response("write_file", {"file_path": "new.py", "content": "print('new')\n"}),
        text_response("created it"),
        function_call_response("write_file", {"file_path": "three.txt", "content": THREE_PROPOSED}),
        text_response("changed them"),
        replace("greet.py", "return 'hello'", "return 'hello world'"),
        text_response("greeted"),
        replace("keep.txt", "keep = 1", "keep = 2"),
        text_response("left it"),
        text_response("still here"),
    ]


@dataclass
class Review:
    report: dict[str, Any]
    driven: subprocess.CompletedProcess[str]
    workspace: Path
    model: FakeGeminiServer

    def answers(self) -> list[str]:
        """What the model got back from each tool call, in order."""
        return [
            response_text(r)
            for req in self.model.generate_requests
            for r in function_responses(req)
        ]


def _workspace(root: Path, model_url: str) -> Path:
    workspace = (root / "ws").resolve()
    (workspace / ".vscode").mkdir(parents=True)
    (workspace / "three.txt").write_text(THREE_ORIGINAL)
    (workspace / "greet.py").write_bytes(GREET)
    (workspace / "keep.txt").write_text("keep = 1\n")
    settings = {
        "adkAcp.command": sys.executable,
        "adkAcp.args": ["-m", "acp_server.cli"],
        # The key where a new user puts it: the agent starts, with a warning (issue 36.5).
        "adkAcp.env": {
            "PYTHONPATH": str(REPO),
            "GOOGLE_GEMINI_BASE_URL": model_url,
            "GEMINI_API_KEY": KEY,
        },
    }
    (workspace / ".vscode" / "settings.json").write_text(json.dumps(settings))
    return workspace


@pytest.fixture(scope="module")
def review(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Review]:
    tmp_path = tmp_path_factory.mktemp("review")
    node = node24()
    vsix = packaged_extension(node)
    tools = browser_tools(node)
    shutil.copyfile(BROWSER / "review.mjs", tools / "review.mjs")
    code_server = tools / "node_modules" / ".bin" / "code-server"
    model = FakeGeminiServer(_script(), default="(nothing more scripted)")
    model.start_in_thread()
    workspace = _workspace(tmp_path, model.base_url)
    home, shots = tmp_path / "home", tmp_path / "shots"
    user = home / ".local" / "share" / "code-server" / "User"
    for d in (user, shots):
        d.mkdir(parents=True)
    # A trusted folder: this file is about reviewing edits, not about trust.
    user_settings = {**USER_SETTINGS, "security.workspace.trust.enabled": False}
    (user / "settings.json").write_text(json.dumps(user_settings))
    base = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    base |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }
    env = node_env(node, base)
    installed = subprocess.run(
        [str(code_server), "--install-extension", str(vsix)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert "successfully installed" in installed.stdout + installed.stderr, installed.stderr
    port = _free_port()
    log = tmp_path / "code-server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [
                str(code_server),
                *("--bind-addr", f"127.0.0.1:{port}", "--auth", "none"),
                *("--disable-telemetry", "--disable-update-check", str(workspace)),
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    report_path = tmp_path / "report.json"
    try:
        _wait_port(port, server, log, timeout=90)
        config = tmp_path / "review.json"
        config.write_text(
            json.dumps(
                {
                    "url": f"http://127.0.0.1:{port}",
                    "chromium": str(CHROMIUM),
                    "workspace": str(workspace),
                    "shots": str(shots),
                    "report": str(report_path),
                }
            )
        )
        driven = subprocess.run(
            [str(node), str(tools / "review.mjs"), str(config)],
            cwd=tools,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
    finally:
        try:
            os.killpg(server.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        server.wait(timeout=30)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for old in ARTIFACTS.glob("review-*"):
            old.unlink()
        for shot in sorted(shots.glob("*.png")):
            shutil.copyfile(shot, ARTIFACTS / shot.name)
        if report_path.exists():
            shutil.copyfile(report_path, ARTIFACTS / "review-report.json")
        logs = home / ".local" / "share" / "code-server" / "logs"
        for name, found in (("exthost", "exthost*/exthost.log"), ("acp", "exthost*/*/adk-acp.log")):
            for path in sorted(logs.glob(f"*/{found}"))[:1]:
                shutil.copyfile(path, ARTIFACTS / f"review-{name}.log")
    assert report_path.exists(), driven.stdout[-3000:] + driven.stderr[-3000:]
    try:
        yield Review(json.loads(report_path.read_text()), driven, workspace, model)
    finally:
        model.stop()


def _passed(review: Review, step: str) -> dict[str, Any]:
    """The report, once the scenario got past `step` (a failed step fails here too)."""
    report = review.report
    done = [line for line in report["steps"] if line.split("] ", 1)[-1] == f"ok: {step}"]
    assert done, "\n".join(report["errors"] + report["steps"][-5:]) + review.driven.stderr[-2000:]
    return report


def test_a_key_in_settings_starts_the_agent_and_one_click_moves_it(review: Review) -> None:
    report = _passed(
        review, "open the workspace; the chat starts the agent, with the key in adkAcp.env"
    )
    assert "adkAcp.env.GEMINI_API_KEY is a secret in plain-text settings" in report["secretWarning"]
    assert report["settingsProblemToasts"] == 0
    env = report["settingsAfterMove"]["adkAcp.env"]
    assert "GEMINI_API_KEY" not in env and env["GOOGLE_GEMINI_BASE_URL"]
    # the agent restarted later reads it from secret storage: the model still answers it
    later = _passed(
        review,
        "restarted with the key from secret storage: the replayed cards say the user changed "
        "the edits",
    )
    assert later["secretWarningsAfterRestart"] == 0
    headers = {k.lower(): v for k, v in review.model.generate_requests[-1].headers.items()}
    assert headers.get("x-goog-api-key") == KEY


def test_a_new_file_changed_before_it_is_created(review: Review) -> None:
    report = _passed(review, "a new file changed before it is created; Allow in the chat card")
    assert report["newFileBeforeAllow"] is None
    assert report["newFile"] == "# reviewed\nprint('new')\n"
    told = review.answers()[0]
    assert told.startswith("Successfully created and wrote to new file: new.py")
    assert "+# reviewed" in told


def test_one_of_three_hunks_rejected_two_land(review: Review) -> None:
    report = _passed(
        review, "one of three hunks rejected by its CodeLens; Allow in the notification"
    )
    assert (
        report["lensesBefore"] == ["Accept", "Reject"] * 3
    )  # diffEditor.codeLens: the extension's default
    assert report["lensesAfter"] == ["Accept", "Reject"] * 2
    assert report["three"] == THREE_PROPOSED.replace("LINE 6\n", "line 6\n")
    told = review.answers()[1]
    assert "They rejected 1 of the 3 hunks of your change (line 6 of the original)" in told


def test_a_word_changed_then_allowed_is_on_disk_and_in_the_models_next_request(
    review: Review,
) -> None:
    report = _passed(
        review,
        "a word changed in the proposed side of a CRLF file; Allow in the diff editor's title bar",
    )
    assert report["greetBeforeAllow"] == GREET.decode()
    assert report["greet"] == "def greet():\r\n    return 'hello there'\r\n"  # CRLF kept
    assert report["dirtyTabs"] == 0 and report["reviewTabs"] == 0
    told = review.answers()[2]
    assert told.startswith("Successfully modified file: greet.py (1 replacement).")
    assert "-    return 'hello world'\n+    return 'hello there'" in told
    # the model's next request carries it: the one after the request that proposed the edit
    requests = review.model.generate_requests
    (after,) = [
        i
        for i, r in enumerate(requests)
        if any("hello there" in response_text(f) for f in function_responses(r))
    ]
    assert "greet the world" in requests[after - 1].last_user_text


def test_a_rejection_after_changes_keeps_the_file_and_undo_restores_the_original(
    review: Review,
) -> None:
    report = _passed(review, "a changed edit rejected keeps the file")
    assert report["keep"] == "keep = 1\n"
    assert review.answers()[3] == "The user rejected this tool call."
    assert [c.split(" | ", 1)[1] for c in report["cardsLive"]] == [
        "Write new.py | Answer: Allowed with your changes",
        "Write three.txt | Answer: Allowed with your changes",
        "Edit greet.py | Answer: Allowed with your changes",
        "Edit keep.txt | Answer: Reject",
    ]
    undone = _passed(
        review, "Undo Last Agent Edit puts back what was there before the user's version"
    )
    assert undone["greetAfterUndo"] == GREET.decode()


def test_the_replayed_session_shows_the_user_changed_the_edits(review: Review) -> None:
    report = _passed(
        review,
        "restarted with the key from secret storage: the replayed cards say the user changed "
        "the edits",
    )
    replayed = [c for c in report["cardsReplayed"] if c.startswith("replayed | ")]
    assert [c.removeprefix("replayed | ") for c in replayed] == [
        "Write new.py | Answer: Allowed with your changes",
        "Write three.txt | Answer: Allowed with your changes",
        "Edit greet.py | Answer: Allowed with your changes",
        "Edit keep.txt | Answer: Reject",
    ]
