"""`adk-acp --login`: the terminal login of the ACP registry's `terminal` auth method."""

from __future__ import annotations

import os
import sys


def login() -> int:
    """`adk-acp --login` (the registry's terminal auth): ask for a Gemini API key and save
    it outside every workspace, owner-only; later sessions use it when the environment
    has no key."""
    import getpass

    from runtime.credentials import save_api_key

    prompt = "Gemini API key (from https://aistudio.google.com/apikey): "
    if sys.stdin.isatty():
        key = getpass.getpass(prompt)
    else:
        sys.stderr.write(prompt)
        sys.stderr.flush()
        key = sys.stdin.readline()
    key = key.strip()
    if not key:
        sys.stderr.write("No key given; nothing saved.\n")
        return 1
    path = save_api_key(os.environ, key)
    sys.stderr.write(f"Saved. adk-acp will use this key; it is stored in {path}.\n")
    return 0
