"""The extension in a real VS Code: code-server (VS Code in the browser, from npm)
driven by headless Chromium through playwright-core (tests/vscode/browser/drive.mjs).

The .vsix built from the sources is installed into a throw-away HOME; the workspace's
settings start `adk-acp` with a scripted model (`--fake-responses`). The scenario: the
chat view opens (mode and model pickers from the session's config options, slash-command
completion), an edit and a new file are each shown in VS Code's diff editor before
anything is written and approved from it (its title-bar action, then the notification's
button), the files are on disk and open in the editor, saved; a command runs in a VS Code
terminal; a 200-chunk answer renders; Stop cancels a running command; Stop while a
question waits closes it; the agent is killed and comes back (restarted, the user told,
the session loaded again); a new chat, then the first one again from History; an agent
that dies at start gives one clear message with its last stderr line. Issue 21: a fast
60-chunk first answer and a two-chunk one shown exactly once; the activity-bar click →
usable input time and the first answer's time, printed; the crash notice and the answered
permission cards survive the reload (restart and History) and the chat is never blank
meanwhile; Add to Chat from the explorer and by a drop; the focus keybinding; Undo Last
Agent Edit; a wrong setting named in a message. Issue 21.5: Add to Chat from the
editor's context menu; no agent in an untrusted workspace until it is trusted. Issue
22: the agent's notice (a wrongly typed setting) and `/compress`'s compaction are lines
of their own, live and after each reload.
Screenshots go to test-artifacts/vscode/. The first run installs code-server into the
test cache (minutes); later runs take ~40 s."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_client import CLEARED_ENV
from tests.e2e.model_script import call, text
from tests.vscode.harness import (
    CHROMIUM,
    REPO,
    browser_tools,
    copy_extension,
    extension_modules,
    node24,
    node_env,
    package_extension,
    package_minimal_webview,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

ARTIFACTS = REPO / "test-artifacts" / "vscode"
CRASHING_AGENT = (
    "import sys; sys.stderr.write('ModuleNotFoundError: No module named adk_boom\\n'); sys.exit(3)"
)


def _chunked(pieces: list[str]) -> str:
    """One streamed answer, a chunk per piece (the scripted model sends them back to back)."""
    chunks = []
    for i, piece in enumerate(pieces):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": piece}]}}
        if i == len(pieces) - 1:
            candidate["finishReason"] = "STOP"
        chunks.append({"candidates": [candidate]})
    return json.dumps({"method": "generateContentStream", "response": chunks})


FAST_WORDS = [f"fast{i} " for i in range(60)]
COMPACTION_SUMMARY = "the user asked for a fast answer and one in two chunks"
BAD_SETTING = {"model": {"maxSessionTurns": "x"}}
"""A wrongly typed agent setting in the workspace: the agent says so in a notice."""
TWO_CHUNKS = ["two-", "chunks"]


def _long_answer() -> str:
    chunks: list[dict[str, Any]] = []
    for i in range(200):
        piece = f"word{i} " + ("\n\n" if i % 20 == 19 else "")
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": piece}]}}
        if i == 199:
            candidate = {
                "content": {"role": "model", "parts": [{"text": "**END-OF-ANSWER**"}]},
                "finishReason": "STOP",
            }
        chunks.append({"candidates": [candidate]})
    return json.dumps({"method": "generateContentStream", "response": chunks})


def _script(path: Path) -> None:
    edit = {"file_path": "a.txt", "instruction": "b", "old_string": "alpha", "new_string": "beta"}
    lines = [
        _chunked(FAST_WORDS),  # the first answer: 60 chunks at once (issue 21: doubled text)
        _chunked(TWO_CHUNKS),
        text(COMPACTION_SUMMARY),  # /compress asks the model for the summary
        text(COMPACTION_SUMMARY),  # ... and its verification pass confirms it
        call("replace", edit),
        call("write_file", {"file_path": "b.txt", "content": "a new file\n"}),
        text("edited a.txt"),
        call("run_shell_command", {"command": "echo from-code-server-terminal"}),
        text("ran it"),
        _long_answer(),
        call("run_shell_command", {"command": "sleep 61"}),  # cancelled while it runs
        call("run_shell_command", {"command": "echo never-approved"}),  # cancelled while asked
    ]
    path.write_text("\n".join(lines) + "\n")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"code-server exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"code-server did not listen on {port} in {timeout} s:\n{log.read_text()[-3000:]}")


def _sleepers() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == b"sleep\x0061\x00":
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


USER_SETTINGS: dict[str, Any] = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "security.workspace.trust.enabled": False,
    "telemetry.telemetryLevel": "off",
    "extensions.ignoreRecommendations": True,
    "extensions.autoUpdate": False,
    "extensions.autoCheckUpdates": False,
    "terminal.integrated.gpuAcceleration": "off",
}


def _agent_settings(script: Path) -> dict[str, Any]:
    """The workspace's settings: `adk-acp` from this checkout with a scripted model."""
    return {
        "adkAcp.command": sys.executable,
        "adkAcp.args": ["-m", "acp_server.cli", "--fake-responses", str(script)],
        "adkAcp.env": {"PYTHONPATH": str(REPO)},
    }


@dataclass
class Run:
    """A code-server run: the driver's report, its output, the files it left."""

    report: dict[str, Any]
    driven: subprocess.CompletedProcess[str]
    home: Path
    metrics: Path


def _run_in_code_server(
    tmp_path: Path,
    workspace: Path,
    drive: dict[str, Any],
    trusted: bool = True,
    artifacts: Path = ARTIFACTS,
    baseline: bool = False,
) -> Run:
    """Builds and installs the .vsix into a throw-away HOME, starts code-server on
    `workspace` (workspace trust off, or on with the folder untrusted) and runs
    drive.mjs with `drive` (plus url, chromium, workspace, shots, report); the
    screenshots, report, metrics and logs go to `artifacts`. `baseline`: the minimal
    webview extension (tests/vscode/minimal_webview) is installed too."""
    node = node24()
    modules = extension_modules(node)
    work = copy_extension(tmp_path / "ext", modules)
    vsixes = [package_extension(node, work)]
    if baseline:
        vsixes.append(package_minimal_webview(node, modules, tmp_path / "minimal"))
    tools = browser_tools(node)
    code_server = tools / "node_modules" / ".bin" / "code-server"
    home, shots = tmp_path / "home", tmp_path / "shots"
    user = home / ".local" / "share" / "code-server" / "User"
    for d in (user, shots):
        d.mkdir(parents=True)
    # Untrusted: trust is on and the folder opens in restricted mode without a prompt.
    trust = (
        {}
        if trusted
        else {
            "security.workspace.trust.enabled": True,
            "security.workspace.trust.startupPrompt": "never",
        }
    )
    (user / "settings.json").write_text(json.dumps(USER_SETTINGS | trust))
    metrics = tmp_path / "metrics.jsonl"
    base = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    base |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "ADK_ACP_VSCODE_METRICS": str(metrics),
    }
    env = node_env(node, base)

    for vsix in vsixes:
        installed = subprocess.run(
            [str(code_server), "--install-extension", str(vsix)],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
        assert "successfully installed" in installed.stdout + installed.stderr, (
            installed.stdout + installed.stderr
        )

    port = _free_port()
    log = tmp_path / "code-server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [
                str(code_server),
                "--bind-addr",
                f"127.0.0.1:{port}",
                "--auth",
                "none",
                "--disable-telemetry",
                "--disable-update-check",
                *(["--disable-workspace-trust"] if trusted else []),
                str(workspace),
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
        config = tmp_path / "drive.json"
        config.write_text(
            json.dumps(
                {
                    "url": f"http://127.0.0.1:{port}",
                    "chromium": str(CHROMIUM),
                    "workspace": str(workspace),
                    "shots": str(shots),
                    "report": str(report_path),
                    **drive,
                }
            )
        )
        driven = subprocess.run(
            [str(node), str(tools / "drive.mjs"), str(config)],
            cwd=tools,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
    finally:
        try:
            os.killpg(server.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        server.wait(timeout=30)
        if artifacts.exists():
            shutil.rmtree(artifacts)
        artifacts.mkdir(parents=True)
        for shot in sorted(shots.glob("*.png")):
            shutil.copyfile(shot, artifacts / shot.name)
        acp_logs = sorted(home.glob(".local/share/code-server/logs/*/exthost*/*/adk-acp.log"))
        for extra in (report_path, metrics, log, *acp_logs[:1]):
            if extra.exists():
                shutil.copyfile(extra, artifacts / extra.name)

    assert report_path.exists(), driven.stdout[-3000:] + driven.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert report["errors"] == [], "\n".join(report["errors"]) + "\n" + driven.stderr[-2000:]
    assert driven.returncode == 0, driven.stderr[-3000:]
    return Run(report, driven, home, metrics)


def test_extension_in_code_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = (tmp_path / "ws").resolve()
    (workspace / ".vscode").mkdir(parents=True)
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / ".gemini").mkdir()
    (workspace / ".gemini" / "settings.json").write_text(json.dumps(BAD_SETTING))
    script = tmp_path / "model.jsonl"
    _script(script)
    (workspace / ".vscode" / "settings.json").write_text(json.dumps(_agent_settings(script)))
    run = _run_in_code_server(
        tmp_path,
        workspace,
        {
            "script": str(script),
            "fastWords": FAST_WORDS,
            "twoChunks": TWO_CHUNKS,
            "compactionSummary": COMPACTION_SUMMARY,
            "crashAgent": {"command": sys.executable, "args": ["-c", CRASHING_AGENT]},
        },
    )
    report, home, metrics = run.report, run.home, run.metrics
    acp_logs = sorted(home.glob(".local/share/code-server/logs/*/exthost*/*/adk-acp.log"))

    # The diff was on screen while the files were still untouched; the approvals wrote them
    # through the editor (open, saved, no dirty tab) and the diff tabs closed.
    assert report["diffSeenBeforeWrite"] is True
    assert report["newFileSeenBeforeWrite"] is True
    assert report["diffClosed"] is True
    assert report["dirtyTabs"] == 0
    assert (workspace / "a.txt").read_text() == "beta\n"
    # "Undo Last Agent Edit" took back the newest approved edit: the new b.txt.
    assert not (workspace / "b.txt").exists()
    assert report["undoNotice"], report
    assert any("from-code-server-terminal" in t for t in report["terminalText"]), report
    assert "idle" in report["statusBar"], report["statusBar"]
    assert _sleepers() == []  # the cancelled command's process group was killed
    assert len(report["restartedPids"]) == 1, report["restartedPids"]
    # An agent that dies at start: one clear message naming the cause, no restart loop.
    assert "No module named adk_boom" in report["startFailure"], report["startFailure"]
    assert report["restartNotices"] == 0, report
    assert "stopped" in report["statusAfterFailure"], report["statusAfterFailure"]
    # The output channel's ACP log: the @-mention went as a resource_link, the model
    # picker as session/set_config_option.
    assert acp_logs, "no adk-acp output channel log"
    traffic = acp_logs[0].read_text()
    mention = f'"type":"resource_link","uri":"file://{workspace / "a.txt"}"'
    assert mention in traffic, traffic[-3000:]
    assert '"method":"session/set_config_option"' in traffic

    events = [json.loads(line) for line in metrics.read_text().splitlines()]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_name.setdefault(event["name"], []).append(event)
    stops = [e["stopReason"] for e in by_name["turn_stream_ms"]]
    assert stops == ["end_turn"] * 6 + ["cancelled", "cancelled"], stops
    activation = by_name["activation_ms"][0]["value"]
    diffs = [e["value"] for e in by_name["permission_to_diff_ms"]]
    long_turn = by_name["turn_stream_ms"][5]["value"]
    renders = [e for e in by_name.get("render_ms", []) if e["length"] > 1000]
    assert renders, by_name.get("render_ms")
    render = renders[0]["value"]
    ratio = render / max(long_turn, 1)
    workbench = report["timings"]["workbench_ms"]
    figures = (
        "\nVS Code extension figures (code-server, headless Chromium):\n"
        f"  activation (activate())                         {activation:.1f} ms\n"
        f"  workbench load → adk-acp status bar item        {workbench} ms\n"
        f"  permission request → diff editor shown, cold    {diffs[0]} ms (target ≤ 300 ms: "
        f"{'meets' if diffs[0] <= 300 else 'misses'})\n"
        f"  permission request → diff editor shown, warm    {diffs[1]} ms (target ≤ 300 ms: "
        f"{'meets' if diffs[1] <= 300 else 'misses'})\n"
        f"  prompt → diff content visible in the page       "
        f"{report['timings']['prompt_to_diff_content_ms']} ms\n"
        f"  200-chunk answer: agent stream {long_turn} ms, rendered in the webview {render} ms "
        f"({ratio:.2f}×; target ≤ 1.5×: {'meets' if ratio <= 1.5 else 'misses'}; of which "
        f"{renders[0].get('ipcMs')} ms is the host → webview message hop)\n"
        f"  activity-bar click → view resolved in the host   "
        f"{by_name['view_resolved'][0]['value'] - report['timings']['click_at']} ms, → webview "
        f"script ready {by_name['view_ready'][0]['value'] - report['timings']['click_at']} ms\n"
        f"  activity-bar click → input usable               {report['timings']['open_ms']} ms "
        f"(target ≤ 300 ms after the workbench is up: "
        f"{'meets' if report['timings']['open_ms'] <= 300 else 'misses'}; of which "
        f"{_worker_wait({'marks': report['timings']['open_marks']})} ms waiting for "
        "code-server's webview service worker: the baseline is "
        "test_opening_the_chat_against_a_minimal_webview)\n"
        f"  first prompt → first answer text (cold agent)   "
        f"{report['timings']['first_answer_ms']} ms; the agent's own part: "
        f"{by_name['first_chunk_ms'][0]['value']} ms (session/prompt → first chunk)\n"
        f"  60-chunk answer shown {report['fastShown']}× per word (exactly once: "
        f"{'yes' if report['fastShown'] == 1 else 'NO'})\n"
        f"  screenshots: {ARTIFACTS}"
    )
    _show(capsys, figures)
    # Issue 21: exact transcripts, notices that stay, replays that show everything.
    assert report["fastShown"] == 1 and report["fastText"] == "".join(FAST_WORDS).strip()
    assert report["twoChunkText"] == "".join(TWO_CHUNKS)
    assert report["minItemsDuringRestart"] > 0, report  # never a blank chat while reloading
    assert report["crashNoticeAfterReload"] is True, report
    assert report["permissionsAfterRestart"] == report["permissionsLive"], report
    assert report["permissionsAfterHistory"] == report["permissionsLive"], report
    assert report["mentionFromExplorer"] and report["mentionFromDrop"], report
    assert report["mentionFromEditorMenu"].startswith("@a.txt"), report
    assert report["focusKeybinding"] is True, report
    assert "adkAcp.args must be a list of strings" in report["settingsProblem"], report
    # Issue 22: the agent's notice and the compaction are lines of their own, live and
    # after each reload (restart, History), the compaction with its summary.
    [notice] = report["noticesLive"]
    assert notice.startswith("Some settings were ignored") and "maxSessionTurns" in notice, notice
    assert report["compactionsLive"] == [f"Conversation compacted | {COMPACTION_SUMMARY}"], report
    for when in ("AfterRestart", "AfterHistory"):
        assert report[f"notices{when}"] == report["noticesLive"], report
        assert report[f"compactions{when}"] == report["compactionsLive"], report
    # Loose bounds that catch a regression without failing on a loaded CI machine.
    assert report["timings"]["open_ms"] < 15000, report["timings"]
    # The cold diff is the workbench's very first editor: 0.4-1 s alone, 3.5 s seen with
    # another test worker beside it, so it gets the open time's loose bound; the warm one
    # keeps 3 s (the figures themselves are printed above, targets are the bench's job).
    assert diffs[0] < 15000 and diffs[1] < 3000, diffs
    assert render < long_turn + 2000, (render, long_turn)


def _show(capsys: pytest.CaptureFixture[str], figures: str) -> None:
    """The run's figures, in the test run's output, pass or fail."""
    with capsys.disabled():
        print(figures)  # noqa: T201 - the figures of the run


def _idle_workspace(tmp_path: Path) -> tuple[Path, Path]:
    """An empty workspace whose agent has a one-answer script (it is never asked)."""
    workspace = (tmp_path / "ws").resolve()
    (workspace / ".vscode").mkdir(parents=True)
    script = tmp_path / "model.jsonl"
    script.write_text(text("never asked") + "\n")
    (workspace / ".vscode" / "settings.json").write_text(json.dumps(_agent_settings(script)))
    return workspace, script


def test_no_agent_in_an_untrusted_workspace(tmp_path: Path) -> None:
    """Workspace trust on and the folder untrusted (restricted mode): the chat opens and
    says why there is no agent, offering "Manage Workspace Trust"; no agent process
    starts. Trusting the folder there starts it (the session's model picker appears)."""
    workspace, script = _idle_workspace(tmp_path)
    run = _run_in_code_server(
        tmp_path,
        workspace,
        {"scenario": "untrusted", "script": str(script)},
        trusted=False,
        artifacts=REPO / "test-artifacts" / "vscode-untrusted",
    )
    report = run.report
    assert "This workspace is not trusted" in report["untrustedNotice"], report
    assert "Manage Workspace Trust" in report["untrustedActions"], report
    assert report["agentsWhileUntrusted"] == 0, report
    assert report["agentsAfterTrust"] == 1, report
    assert report.get("trustedNotice") is True, report


def _worker_wait(opened: dict[str, Any]) -> int:
    """The ms a webview waited for code-server's webview service worker (its host page's marks)."""
    marks = opened["marks"]
    return int(marks.get("content/workerReady", 0) - marks.get("content/started", 0))


def test_opening_the_chat_against_a_minimal_webview(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21.4: activity-bar click → usable input for the chat and for a minimal
    webview view (a text box, set at once: what code-server itself takes to show a
    webview), each the first webview of its workbench: on the run's first page, in a
    fresh browser, and as a returning user (page reloaded; twice each, alternating).
    The chat's own part is the difference; the figures are printed."""
    workspace, script = _idle_workspace(tmp_path)
    run = _run_in_code_server(
        tmp_path,
        workspace,
        {"scenario": "opentime", "script": str(script)},
        artifacts=REPO / "test-artifacts" / "vscode-open-time",
        baseline=True,
    )
    times = run.report["openTimes"]
    chat = statistics.median(t["usable_ms"] for t in times["chat"])
    minimal = statistics.median(t["usable_ms"] for t in times["minimal"])
    first, fresh_chat, fresh_minimal = (
        times["minimal_first_page"],
        times["chat_fresh"],
        times["minimal_fresh"],
    )
    target = "met" if chat <= 300 else f"out of reach, a bare webview alone takes {minimal:.0f} ms"
    figures = (
        "\nOpening the chat: activity-bar click → input usable, against a minimal webview "
        "view (code-server's own webview start), code-server + headless Chromium:\n"
        f"  run's first page (cold):  minimal {first['usable_ms']} ms, of which "
        f"{_worker_wait(first)} ms waiting for code-server's webview service worker; "
        f"then the chat {times['chat_after_minimal']['usable_ms']} ms\n"
        f"  fresh browser:            chat {fresh_chat['usable_ms']} ms "
        f"(worker {_worker_wait(fresh_chat)} ms), minimal {fresh_minimal['usable_ms']} ms "
        f"(worker {_worker_wait(fresh_minimal)} ms)\n"
        f"  returning (page reloaded): chat {chat:.0f} ms, minimal {minimal:.0f} ms "
        f"(medians of {len(times['chat'])})\n"
        f"  the chat's own part: {chat - minimal:+.0f} ms; the 300 ms target: {target}"
    )
    _show(capsys, figures)
    # The chat adds nothing that shows (no waiting for the agent, no slow page): loose
    # bounds against the baseline of the same run, for a loaded machine.
    assert chat < minimal + 1500, times
    assert fresh_chat["usable_ms"] < fresh_minimal["usable_ms"] + 1500, times
