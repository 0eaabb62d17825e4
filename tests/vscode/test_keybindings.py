"""The extension's keys against VS Code's default keybindings (issue 21): an extension's
binding on a key that VS Code itself uses overrides VS Code's command for every user
(Ctrl+Alt+I, the extension's old focus key, is VS Code's "Chat: Open Chat"). The
defaults are read from the workbench of the tier's code-server (VS Code 1.139), where
each is registered with a numeric key code (KeyMod flags | KeyCode; a chord's second
part shifted by 16 bits), and from its built-in extensions' package.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.vscode.harness import REPO, browser_tools, node24

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

CTRL_CMD, SHIFT, ALT, WIN_CTRL = 2048, 1024, 512, 256
"""VS Code's KeyMod flags: CtrlCmd is Ctrl (Cmd on a mac), WinCtrl the Windows/Super
key (Ctrl on a mac)."""
KEY_FIELDS = r"\b(?:when|weight|id|title|handler|args)\s*:"


def key_code(key: str, mac: bool) -> int:
    """A package.json key ("ctrl+alt+j", "cmd+alt+j") as VS Code's number (letters only)."""
    *mods, last = key.lower().split("+")
    if not re.fullmatch(r"[a-z]", last):
        raise ValueError(f"only letter keys are decoded here: {key}")
    flags = {"alt": ALT, "shift": SHIFT, "cmd": CTRL_CMD, "ctrl": WIN_CTRL if mac else CTRL_CMD}
    code = 31 + ord(last) - ord("a")  # KeyCode.KeyA is 31
    for mod in mods:
        code |= flags[mod]
    return code


def default_keys(workbench: str) -> set[int]:
    """Every number in a keybinding's `primary`/`secondary` (and its platform variants):
    the first parts of chords too. Numbers near it that are no key make the set larger,
    never smaller: a key found free is free."""
    found: set[int] = set()
    for m in re.finditer(r"\b(?:primary|secondary)\s*:", workbench):
        window = re.split(KEY_FIELDS, workbench[m.end() : m.end() + 120])[0]
        found |= {int(n) for n in re.findall(r"\b\d+\b", window)}
        for expr in re.findall(r"\d+(?:\s*\|\s*\d+)+", window):
            value = 0
            for part in expr.split("|"):
                value |= int(part)
            found.add(value)
    return found | {n & 0xFFFF for n in found}


def test_the_extensions_keys_are_no_vs_code_defaults() -> None:
    vscode = browser_tools(node24()) / "node_modules" / "code-server" / "lib" / "vscode"
    workbench = (vscode / "out/vs/code/browser/workbench/workbench.js").read_text()
    defaults = default_keys(workbench)
    # The scan finds what it must: Chat: Open Chat's Ctrl+Alt+I, the palette's Ctrl+Shift+P.
    assert key_code("ctrl+alt+i", mac=False) in defaults
    assert key_code("ctrl+shift+p", mac=False) in defaults
    builtin = {
        binding.lower()
        for manifest in (vscode / "extensions").glob("*/package.json")
        for binding in re.findall(
            r'"(?:key|mac|linux|win)"\s*:\s*"([^"]+)"', Path(manifest).read_text()
        )
    }
    manifest = json.loads((REPO / "editors" / "vscode" / "package.json").read_text())
    checked = []
    for binding in manifest["contributes"]["keybindings"]:
        if binding["key"] in ("escape", "enter"):
            continue  # Stop: only while a turn runs and the chat has the focus
        for platform, mac in (("key", False), ("mac", True)):
            key = binding.get(platform, binding["key"])
            assert key_code(key, mac) not in defaults, (binding["command"], key)
            assert key not in builtin, (binding["command"], key)
            checked.append(key)
    assert {"ctrl+alt+j", "cmd+alt+j", "ctrl+alt+z", "cmd+alt+z"} <= set(checked), checked
