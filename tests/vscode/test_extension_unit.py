"""The VS Code extension's own tests, in plain Node (no VS Code): a strict type check
(the extension, its tests and the webview's scripts against the shared message types),
the unit tests of its client logic (the pieces of the extension on fakes of their VS
Code side: supervisor, sessions and turns, approvals, editor I/O, commands; permissions
and diff documents, fs and terminal handlers, the chat's update model, Markdown escaping,
command resolution, redaction) and its client side driven against the real agent with a
scripted model, all on `node --test`; then the .vsix is packaged."""

from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path

import pytest

from tests.e2e.acp_client import CLEARED_ENV
from tests.vscode.harness import (
    REPO,
    copy_extension,
    extension_modules,
    node24,
    packaged_extension,
    run_node,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def test_the_extension_version_is_the_agents_and_its_metadata_is_publishable() -> None:
    """One version (acp_server.__version__), and what `vsce` and Open VSX (`ovsx`) ask of
    a published extension: publisher, repository, license file, a PNG icon, categories,
    keywords, a README and a CHANGELOG; it runs where the workspace is (VS Code Remote)."""
    from acp_server import __version__

    extension = REPO / "editors" / "vscode"
    manifest = json.loads((extension / "package.json").read_text())
    assert manifest["version"] == __version__
    assert manifest["publisher"] and manifest["license"] == "Apache-2.0"
    assert manifest["repository"]["url"].startswith("https://github.com/")
    assert "private" not in manifest
    assert "Apache License" in (extension / "LICENSE").read_text()
    icon = extension / manifest["icon"]
    assert icon.suffix == ".png" and icon.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert manifest["categories"] and len(manifest["keywords"]) >= 3
    assert manifest["extensionKind"] == ["workspace"]
    assert manifest["capabilities"]["untrustedWorkspaces"]["supported"] == "limited"
    readme = (extension / "README.md").read_text()
    for image in ("images/chat.png", "images/approval.png", "images/opening-input.png"):
        assert image in readme and (extension / image).is_file(), image
    assert f"## {__version__}" in (extension / "CHANGELOG.md").read_text()
    assert "--allow-missing-repository" not in manifest["scripts"]["package"]
    assert "--skip-license" not in manifest["scripts"]["package"]


def test_extension_unit_tests_and_package(tmp_path: Path) -> None:
    node = node24()
    work = copy_extension(tmp_path / "ext", extension_modules(node))

    typecheck = run_node(
        node, ["node_modules/typescript/bin/tsc", "-p", ".", "--noEmit"], work, timeout=300
    )
    assert typecheck.returncode == 0, typecheck.stdout + typecheck.stderr

    built = run_node(node, ["scripts/build.mjs", "--tests"], work, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
        "ADK_ACP_AGENT": json.dumps([sys.executable, "-m", "acp_server.cli"]),
    }
    tests = sorted(str(p) for p in (work / "out" / "test").glob("*.test.js"))
    assert len(tests) >= 5, tests
    done = run_node(node, ["--test", "--test-reporter=tap", *tests], work, timeout=300, env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-8000:]
    assert "# fail 0" in output and "# skipped 0" in output, output[-3000:]
    assert "# pass 0" not in output

    vsix = packaged_extension(node)
    names = set(zipfile.ZipFile(vsix).namelist())
    for needed in (
        "extension/package.json",
        "extension/dist/extension.js",
        "extension/media/chat.js",
        "extension/media/chat.css",
        "extension/media/markdown.js",
        "extension/media/transcript.js",
        "extension/media/items.js",
        "extension/media/composer.js",
        "extension/dist/media/chat.js",
        "extension/dist/media/chat.css",
        "extension/media/icon.png",
        "extension/LICENSE.txt",
        "extension/readme.md",
        "extension/changelog.md",
    ):
        assert needed in names, sorted(names)
    assert not any("node_modules" in n or n.startswith("extension/src/") for n in names)
