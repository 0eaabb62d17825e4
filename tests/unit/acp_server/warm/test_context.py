"""The warm child's context check (`acp_server.warm.context`) without a server: which
variables count as read at start-up, and `take` in a fresh process given a spawn's
context that differs from its own in one item at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from acp_server.warm import client, context

ROOT = Path(__file__).parents[4]

_TAKE = """
import json, os, sys
from acp_server.warm import context
spawn = context.gather()
spawn.update(json.loads(sys.argv[1]))
try:
    taken = context.take(spawn, dict(os.environ, **json.loads(sys.argv[2])))
except context.Unfaithful as exc:
    print(json.dumps({"refused": str(exc)}))
else:
    print(json.dumps({"taken": taken, "umask": os.umask(0), "after": context.gather()}))
"""


def _take(changes: dict[str, Any], env: dict[str, str] | None = None) -> dict[str, Any]:
    """`take` run in a fresh single-threaded process, of a spawn like it but `changes`."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_TAKE), json.dumps(changes), json.dumps(env or {})],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_variables_read_at_start_up() -> None:
    for name in ("LANG", "LC_ALL", "PYTHONPATH", "PYTHONHASHSEED", "SSL_CERT_FILE", "https_proxy"):
        assert context.import_time(name), name
    for name in ("HOME", "PATH", "GEMINI_API_KEY", "TZ", "TMPDIR"):
        assert not context.import_time(name), name
    assert context.env_difference({"LANG": "C", "HOME": "/a"}, {"LANG": "C", "HOME": "/b"}) is None
    reason = context.env_difference({"LC_ALL": "C"}, {})
    assert reason == "the spawn's LC_ALL is not the warm server's (read at start-up)"


def test_home_counts_where_the_user_s_site_packages_are_on_the_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("site.ENABLE_USER_SITE", True)
    reason = context.env_difference({"HOME": "/a"}, {"HOME": "/b"})
    assert reason == "the spawn's HOME is not the warm server's (read at start-up)"
    monkeypatch.setattr("site.ENABLE_USER_SITE", False)  # a virtual environment's
    assert context.env_difference({"HOME": "/a"}, {"HOME": "/b"}) is None


def test_the_server_keeps_the_start_up_variables_but_no_proxy_password() -> None:
    env = {
        "SSL_CERT_FILE": "/ca.pem",
        "PYTHONDONTWRITEBYTECODE": "1",
        "HTTPS_PROXY": "http://proxy:3128",
        "http_proxy": "http://me:secret@proxy:3128",
        "GEMINI_API_KEY": "k",
    }
    assert client.server_env(env) == {
        "SSL_CERT_FILE": "/ca.pem",
        "PYTHONDONTWRITEBYTECODE": "1",
        "HTTPS_PROXY": "http://proxy:3128",
    }


def test_gather_is_cheap_and_plain() -> None:
    found = context.gather()
    assert json.loads(json.dumps(found)) == found
    assert found["ns.mnt"] == os.readlink("/proc/self/ns/mnt")
    assert found["umask"] and found["rlimit.NOFILE"] and found["affinity"]


def test_what_a_process_can_change_is_taken_and_checked() -> None:
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    result = _take({"umask": "0077", "nice": nice + 3})
    assert result["taken"] == ["nice", "umask"]
    assert result["umask"] == 0o077 and result["after"]["nice"] == nice + 3


def test_what_must_be_equal_refuses_the_spawn() -> None:
    refused = _take({"lsm": "some-profile (enforce)"})["refused"]
    assert refused == (
        "the spawn's LSM label is not the warm server's: 'some-profile (enforce)', not "
        f"{context.gather()['lsm']!r}"
    )
    assert "mnt namespace is not the warm server's" in _take({"ns.mnt": "mnt:[1]"})["refused"]
    assert "root folder is not the warm server's" in _take({"root": "1:2"})["refused"]
    assert "uid is not the warm server's" in _take({"uid": "1 1 1 1"})["refused"]
    assert _take({}, {"LANG": "xx_XX.UTF-8"})["refused"].startswith("the spawn's LANG is not")


def test_a_capability_the_child_has_not_refuses_the_spawn() -> None:
    all_bits = "ffffffffffffffff"
    refused = _take({"cap_bnd": all_bits})["refused"]
    assert refused == "the spawn has bounding capabilities the warm server has not"


def test_a_change_the_kernel_refuses_refuses_the_spawn() -> None:
    soft, _ = context.gather()["rlimit.NOFILE"]
    refused = _take({"rlimit.NOFILE": [soft, 1 << 40]})["refused"]
    assert refused.startswith("cannot take the spawn's RLIMIT_NOFILE:")


def test_an_item_still_different_after_refuses_the_spawn() -> None:
    refused = _take({"something_new": "1"})["refused"]
    assert refused == "something_new is still not the spawn's: None"


def test_the_spawn_s_claim_is_checked_against_its_process() -> None:
    claim = context.gather()
    checked = context.confirm(claim, os.getpid())
    assert checked == {**claim, "ioprio": checked["ioprio"]}  # and the I/O priority
    with pytest.raises(context.Unfaithful, match="umask is not what it sent"):
        context.confirm(
            {**claim, "umask": "0000" if claim["umask"] != "0000" else "0077"}, os.getpid()
        )
    with pytest.raises(context.Unfaithful, match="mnt namespace is not what it sent"):
        context.confirm({**claim, "ns.mnt": "mnt:[1]"}, os.getpid())
    with pytest.raises(context.Unfaithful, match="not visible"):
        context.confirm(claim, 0)
