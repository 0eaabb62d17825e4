"""The extension in a real VS Code: code-server (VS Code in the browser, from npm)
driven by headless Chromium through playwright-core (tests/vscode/browser/drive.mjs).

One code-server and one Chromium serve the whole tier (the `run` fixture: one drive.mjs
run, whose report the tests below check in parts). The .vsix built from the sources and
the minimal webview (the open time's baseline) are installed into a throw-away HOME; the
workspace's settings start `adk-acp` with a scripted model (`--fake-responses`). The run:
the workspace opens untrusted (no agent until it is trusted in VS Code's trust editor);
the chat view opens (mode and model pickers, slash-command completion); an edit and a
new file are each shown in VS Code's diff editor before anything is written and approved
from it (its title-bar action, then the notification's button), saved; a command runs in
a VS Code terminal; a 200-chunk answer renders; Stop cancels a running command and a
waiting question; the agent is killed and comes back; a new chat, then the first one
again from History; an agent that dies at start gives one clear message. Issue 21: a
fast 60-chunk first answer and a two-chunk one shown exactly once; the crash notice and
the answered permission cards survive the reload; Add to Chat from the explorer, the
editor and its tab, a dropped URI and a real drag from the explorer; the focus
keybinding; Undo Last Agent Edit; a wrong setting named in a message; the open time
against the minimal webview (kept, first open after a reload, restored) and the chat's
opening input on its first open in a page (a prompt sent from it, a draft moved into the
chat, none restored or with the setting off). Issue 22: the agent's notice and
`/compress`'s compaction are lines of their own, live and after each reload.
Screenshots go to test-artifacts/vscode/. The first run installs code-server into the
test cache (minutes)."""

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
    extension_modules,
    node24,
    node_env,
    package_minimal_webview,
    packaged_extension,
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
QUICK_PROMPT = "sent from the opening input"
"""Typed into the chat's opening input (a quick input) and sent before the chat is ready."""


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
    # Trust is on and the folder opens in restricted mode without a prompt: the run
    # starts untrusted and trusts the folder through VS Code's own trust editor.
    "security.workspace.trust.enabled": True,
    "security.workspace.trust.startupPrompt": "never",
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
    """The code-server run: the driver's report, its output, the files it left."""

    report: dict[str, Any]
    driven: subprocess.CompletedProcess[str]
    home: Path
    workspace: Path
    metrics: Path

    def check(self) -> dict[str, Any]:
        """The report of a run whose every step passed."""
        report = self.report
        errors = "\n".join(report["errors"])
        assert report["errors"] == [], errors + "\n" + self.driven.stderr[-2000:]
        assert self.driven.returncode == 0, self.driven.stderr[-3000:]
        return report


def _workspace(root: Path) -> tuple[Path, Path]:
    """The workspace (a.txt, a wrongly typed agent setting) and its agent's model script."""
    workspace = (root / "ws").resolve()
    (workspace / ".vscode").mkdir(parents=True)
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / ".gemini").mkdir()
    (workspace / ".gemini" / "settings.json").write_text(json.dumps(BAD_SETTING))
    script = root / "model.jsonl"
    _script(script)
    (workspace / ".vscode" / "settings.json").write_text(json.dumps(_agent_settings(script)))
    return workspace, script


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One code-server and one headless Chromium for the whole tier (each costs a
    workbench load of seconds to a minute on a loaded machine): the .vsix built from
    the sources and the minimal webview (the open time's baseline) are installed into a
    throw-away HOME, code-server serves the workspace with trust on, and drive.mjs runs
    the whole scenario; the screenshots, report, metrics and logs go to ARTIFACTS."""
    tmp_path = tmp_path_factory.mktemp("code-server")
    workspace, script = _workspace(tmp_path)
    node = node24()
    modules = extension_modules(node)
    vsixes = [packaged_extension(node)]
    vsixes.append(package_minimal_webview(node, modules, tmp_path / "minimal"))
    tools = browser_tools(node)
    code_server = tools / "node_modules" / ".bin" / "code-server"
    home, shots = tmp_path / "home", tmp_path / "shots"
    user = home / ".local" / "share" / "code-server" / "User"
    for d in (user, shots):
        d.mkdir(parents=True)
    (user / "settings.json").write_text(json.dumps(USER_SETTINGS))
    metrics = tmp_path / "metrics.jsonl"
    base = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    base |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "ADK_ACP_VSCODE_METRICS": str(metrics),
    }
    env = node_env(node, base)

    installed = subprocess.run(
        [str(code_server), *(a for v in vsixes for a in ("--install-extension", str(v)))],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    output = installed.stdout + installed.stderr
    assert output.count("successfully installed") == len(vsixes), output

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
                    "script": str(script),
                    "fastWords": FAST_WORDS,
                    "twoChunks": TWO_CHUNKS,
                    "compactionSummary": COMPACTION_SUMMARY,
                    "metrics": str(metrics),
                    "quickPrompt": QUICK_PROMPT,
                    "crashAgent": {"command": sys.executable, "args": ["-c", CRASHING_AGENT]},
                }
            )
        )
        driven = subprocess.run(
            [str(node), str(tools / "drive.mjs"), str(config)],
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
        if ARTIFACTS.exists():
            shutil.rmtree(ARTIFACTS)
        ARTIFACTS.mkdir(parents=True)
        for shot in sorted(shots.glob("*.png")):
            shutil.copyfile(shot, ARTIFACTS / shot.name)
        acp_logs = sorted(home.glob(".local/share/code-server/logs/*/exthost*/*/adk-acp.log"))
        for extra in (report_path, metrics, log, *acp_logs[:1]):
            if extra.exists():
                shutil.copyfile(extra, ARTIFACTS / extra.name)

    assert report_path.exists(), driven.stdout[-3000:] + driven.stderr[-3000:]
    return Run(json.loads(report_path.read_text()), driven, home, workspace, metrics)


def _show(capsys: pytest.CaptureFixture[str], figures: str) -> None:
    """The run's figures, in the test run's output, pass or fail."""
    with capsys.disabled():
        print(figures)  # noqa: T201 - the figures of the run


def _worker_wait(marks: dict[str, int]) -> int:
    """The ms a webview waited for code-server's webview service worker (its host page's marks)."""
    return int(marks.get("content/workerReady", 0) - marks.get("content/started", 0))


def test_no_agent_in_an_untrusted_workspace(run: Run) -> None:
    """The run starts in restricted mode (trust on, the folder untrusted): the chat opens
    and says why there is no agent, offering "Manage Workspace Trust"; no agent process
    starts. Trusting the folder in VS Code's trust editor starts it (the session's model
    picker appears); the rest of the run is the trusted chat."""
    report = run.check()
    assert "This workspace is not trusted" in report["untrustedNotice"], report
    assert "Manage Workspace Trust" in report["untrustedActions"], report
    assert report["agentsWhileUntrusted"] == 0, report
    assert report["agentsAfterTrust"] == 1, report
    assert report.get("trustedNotice") is True, report


def test_extension_in_code_server(run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    report, workspace = run.check(), run.workspace
    acp_logs = sorted(run.home.glob(".local/share/code-server/logs/*/exthost*/*/adk-acp.log"))
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

    events = [json.loads(line) for line in run.metrics.read_text().splitlines()]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_name.setdefault(event["name"], []).append(event)
    stops = [e["stopReason"] for e in by_name["turn_stream_ms"]]
    # The last two: the prompts sent from the chat's opening input after a reload (issue
    # 21.4), opened by a click, then by the focus key.
    assert stops == ["end_turn"] * 6 + ["cancelled", "cancelled", "end_turn", "end_turn"], stops
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
        f"  activity-bar click → input usable               {report['timings']['open_ms']} ms, "
        f"the {report['timings']['open_which']} (target ≤ 300 ms after the workbench is up: "
        f"{'meets' if report['timings']['open_ms'] <= 300 else 'misses'}); the chat's webview "
        f"input {report['timings']['open_webview_ms']} ms, of which "
        f"{_worker_wait(report['timings']['open_marks'])} ms waiting for "
        "code-server's webview service worker (the run's first page, untrusted; the "
        "figures after a reload are test_opening_the_chat_against_a_minimal_webview's)\n"
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
    # A real drag from the explorer: code-server names the file vscode-remote://…/a.txt.
    assert report["mentionFromRealDrag"].startswith("@a.txt"), report
    assert report["mentionFromEditorMenu"].startswith("@a.txt"), report
    assert report["mentionFromEditorTab"].startswith("@a.txt"), report
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
    # Loose bounds that catch a regression without failing on a loaded CI machine (the
    # first page's open: 5-9 s at load 6-10 on 2 cores, up to 15 s seen before).
    assert report["timings"]["open_ms"] < 30000, report["timings"]
    # The cold diff is the workbench's very first editor: 0.4-1 s alone, 3.5 s seen with
    # another test worker beside it, so it gets the open time's loose bound; the warm one
    # 0.12-0.34 s alone, 2-5 s seen at load 6-10 on 2 cores, gets 10 s (the figures
    # themselves are printed above, targets are the bench's job).
    assert diffs[0] < 15000 and diffs[1] < 10000, diffs
    assert render < long_turn + 2000, (render, long_turn)


def test_opening_the_chat_against_a_minimal_webview(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21.4: activity-bar click → usable input for the chat and for a minimal
    webview view (a text box, set at once: what code-server itself takes to show a
    webview) in the same run: the chat kept hidden (retainContextWhenHidden) and shown
    again, each view's first open after a reload with the explorer shown, and the chat
    restored by the workbench as the last-open view. The figures and the first open's
    profile (the webview host page's marks) are printed."""
    times = run.check()["openTimes"]
    kept = statistics.median(t["usable_ms"] for t in times["kept"])
    chat, minimal = times["chat_reloaded"], times["minimal_reloaded"]
    restored = times["restored"]
    workbench = restored["workbench"]

    def profile(opened: dict[str, Any]) -> str:
        usable = opened.get("webview_ms", opened["usable_ms"])  # the webview's own input
        marks = opened["marks"]
        steps = [
            ("frame_created", "the host resolves the view, the workbench makes the frame"),
            ("scriptStart", "the webview host page loads"),
            ("content/started", "the page asks for the content"),
            ("content/workerReady", "code-server's webview service worker ready"),
            ("content/innerFrameLoaded", "the content frame loaded"),
            ("content/wroteInnerContent", "the content written"),
        ]
        lines, at = [], 0
        for name, what in steps:
            if name in marks:
                lines.append(f"      {marks[name] - at:+6d} ms  {what}")
                at = marks[name]
        rest = usable - at
        lines.append(f"      {rest:+6d} ms  the page's own start → input usable")
        return "\n".join(lines)

    figures = (
        "\nOpening the chat: activity-bar click → input usable, against a minimal webview "
        "view (code-server's own webview start), code-server + headless Chromium:\n"
        f"  kept (opened before in this page, retainContextWhenHidden): chat "
        f"{', '.join(str(t['usable_ms']) for t in times['kept'])} ms "
        f"(median {kept:.0f} ms, target ≤ 300 ms: {'meets' if kept <= 300 else 'misses'}); "
        "the minimal webview "
        f"kept {times['minimal_kept']['usable_ms']} ms; the workbench's own switch to the "
        f"Explorer {', '.join(str(t) for t in times['explorer'])} ms\n"
        f"  restored (the chat was the last view): input usable "
        f"{restored['usable_ms'] - workbench.get('didStartWorkbench', 0)} ms after the "
        f"workbench started, {restored['usable_ms'] - workbench.get('didRestoreViewlet', 0)} ms "
        f"after it restored the side bar (no click; page start → usable "
        f"{restored['usable_ms']} ms)\n"
        f"  first open after a reload, the webview's input: chat {chat['webview_ms']} ms, "
        f"minimal {minimal['usable_ms']} ms (the chat's own part "
        f"{chat['webview_ms'] - minimal['usable_ms']:+d} ms); "
        "where it goes, chat:\n" + profile(chat) + "\n    minimal:\n" + profile(minimal) + "\n"
        f"  minimal's first open in the run's first page, late (the worker running): "
        f"{times['minimal_this_page']['usable_ms']} ms\n"
        "  A webview view is made only when it is first shown, so its first open in a page "
        "is code-server's webview start (the frames and the service worker, as long for a "
        "bare text box); the chat's opening input (a quick input) takes typing meanwhile "
        "(test_the_chat_s_opening_input_on_its_first_open); after that the chat is kept "
        "and shows at once."
    )
    _show(capsys, figures)
    # The kept chat shows without a reload of its page; on its first open the chat's own
    # start (its content written → input usable: 18-121 ms seen) adds nothing that shows.
    # Single samples of the whole open vary by seconds on a loaded machine: loose bounds.
    assert kept < 3000, times["kept"]
    own = chat["webview_ms"] - chat["marks"]["content/wroteInnerContent"]
    assert own < 1000, chat
    assert chat["webview_ms"] < minimal["usable_ms"] + 5000, times


def _meets(ms: int) -> str:
    return f"target ≤ 300 ms: {'meets' if ms <= 300 else 'misses'}"


def test_the_chat_s_opening_input_on_its_first_open(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21.4, the chat's first open in a page: a native input (a VS Code quick input)
    takes typing while the webview is made. Activity-bar click → whichever input takes
    typing first (a character typed shows in its value), printed for the first open after
    a reload (meets/misses 300 ms), beside the chat's webview input and the same open with
    the setting off. In the run's pages: nothing typed, the input closes by itself once the
    chat is ready and the chat's input has the focus (the first page); a prompt typed and
    sent with Enter before the chat is ready appears in the chat with its scripted answer,
    once each (a reload); a draft stays in the input when the chat is ready and Escape moves
    it, caret at the end, into the chat's focused input (the timed reload); none when the
    workbench restores the chat (no click) or with adkAcp.quickInputWhileOpening off. The
    focus key (Ctrl+Alt+J) on a first open after a reload: the input shows from the command
    itself, before VS Code resolves the view; key press → input that takes typing printed
    (meets/misses 300 ms) and the prompt typed there sent with Enter reaches the chat."""
    report = run.check()
    times = report["openTimes"]
    timed, prompted, off, keyed = (
        times["chat_reloaded"],
        times["chat_prompted"],
        times["chat_reloaded_off"],
        times["chat_keyed"],
    )
    events = [json.loads(line) for line in run.metrics.read_text().splitlines()]
    names = [e["name"] for e in events]
    figures = (
        "\nThe chat's first open in a page (code-server + headless Chromium, after a reload):\n"
        f"  activity-bar click → an input that takes typing   {timed['usable_ms']} ms, the "
        f"{timed['which']} ({_meets(timed['usable_ms'])}); the chat's webview input "
        f"{timed['webview_ms']} ms\n"
        f"    the host's side of the first: {timed['host']} (ms after the click)\n"
        f"  the focus key (Ctrl+Alt+J) → an input that takes typing {keyed['usable_ms']} ms, "
        f"the {keyed['which']} ({_meets(keyed['usable_ms'])}); a typed character in its value "
        f"{keyed['typed_ms']} ms; the chat's webview input {keyed['webview_ms']} ms (held back "
        f"until the prompt was sent)\n"
        f"    the host's side: {keyed['host']} (ms after the key press)\n"
        f"  the setting off (the webview only)                {off['usable_ms']} ms, the "
        f"{off['which']} ({_meets(off['usable_ms'])})\n"
        f"  the run's first page (untrusted, cold)            {report['timings']['open_ms']} ms, "
        f"the {report['timings']['open_which']}; the chat's webview input "
        f"{report['timings']['open_webview_ms']} ms"
    )
    _show(capsys, figures)
    # The draft: the character typed shows in the quick input; Escape (or, when code-server's
    # webview took the focus first, the blur) moves it into the chat's input, caret at the
    # end, focused.
    # A quiet machine may make the webview first (the quick input then not needed): the
    # typing is checked in the chat's input instead (the held-back open below always
    # takes the quick input's path, and the unit tests every ordering of the moves).
    draft = timed["firstOpen"]
    if timed["which"] == "quick input":
        assert draft["typed"] == "x", draft
        assert draft["chatInput"] == "x" and draft["caretAtEnd"] is True, draft
        assert "opening_moved-draft" in names, names
    else:
        # Two polls of the same input, 5 ms apart at most (530 vs 529 ms seen).
        assert timed["which"] == "chat webview" and timed["usable_ms"] <= timed["webview_ms"] + 20
    # The prompt sent with Enter from the opening input (the chat's webview held back until
    # then): once in the chat, its scripted answer once, nothing left in the chat's input.
    sent = prompted["firstOpen"]
    assert prompted["which"] == "quick input" and sent["sentBeforeReady"] is True, prompted
    assert "opening_sent" in names, names
    assert sent["users"] == [QUICK_PROMPT], sent
    assert [a.strip() for a in sent["answers"]] == ["".join(FAST_WORDS).strip()], sent
    assert sent["quickInputOpenAfter"] is False and sent["chatInputAfter"] == "", sent
    # The focus key on the chat's first open in a page (after a reload, the Explorer
    # shown): the opening input shows from the command itself, before VS Code resolves
    # the view; the prompt typed there (its first character seen in the input's value)
    # and sent with Enter is in the chat with its answer, once.
    by_key = keyed["firstOpen"]
    assert keyed["via"] == "key" and keyed["which"] == "quick input", keyed
    assert by_key["typed"] == QUICK_PROMPT[0] and by_key["sentBeforeReady"] is True, keyed
    assert by_key["users"] == [QUICK_PROMPT], by_key
    assert [a.strip() for a in by_key["answers"]] == ["".join(FAST_WORDS).strip()], by_key
    assert by_key["quickInputOpenAfter"] is False and by_key["chatInputAfter"] == "", by_key
    assert keyed["host"]["opening_shown"] < keyed["host"]["view_resolved"], keyed["host"]
    # Nothing typed: closed by itself once the chat was ready, the chat's input focused.
    first = report["firstPageOpen"]
    if report["timings"]["open_which"] == "quick input":
        assert first["closedByItself"] is True and first["chatFocused"] is True, first
    # None with the setting off, none for a restored chat, none for the kept chat.
    assert off["which"] == "chat webview" and off["firstOpen"]["quickInputSeen"] is False, off
    # The restored page's events (up to the next page's activation): a restore is told by
    # its resolve coming within 3 s of the provider's registration (1.7 s seen at load 13);
    # then no opening input.
    since = times["restored"]["reloaded_at"]
    later = [e["at"] for e in events if e["name"] == "activation_ms" and e["at"] >= since]
    page = [e for e in events if since <= e["at"] < (later[1] if len(later) > 1 else 1e15)]
    [resolve] = [e for e in page if e["name"] == "view_resolved"]
    shown_there = [e for e in page if e["name"] == "opening_shown"]
    assert (not shown_there and not times["restored"]["quickInputSeen"]) or not resolve["restored"]
    assert all(t["which"] == "chat webview" for t in times["kept"]), times["kept"]
    shown = [e for e in events if e["name"] == "opening_shown"]
    assert len(shown) >= 2, events  # the timed and the prompted opens (and the first page's)
    # Loose bounds (a shared machine): the figure itself is printed above.
    assert timed["usable_ms"] < 10000 and prompted["usable_ms"] < 10000, times
