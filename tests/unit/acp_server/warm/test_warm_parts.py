"""The warm server's parts without processes: the opt-out, the folder's safety, the
installation key, the request's wire form with descriptors, the server's request check."""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from pathlib import Path

import pytest

from acp_server.cli import build_parser
from acp_server.warm import client, place, server, wire


def test_opt_out_by_flag_or_environment() -> None:
    assert place.wanted(["--fake-responses", "f"], {})
    assert not place.wanted(["--no-warm"], {})
    assert place.wanted(["--", "--no-warm"], {})  # after `--`: not an option
    assert not place.wanted([], {place.NO_WARM_ENV: "1"})
    assert place.wanted([], {place.NO_WARM_ENV: "0"})
    assert "--no-warm" in build_parser().format_help()
    assert build_parser().parse_args(["--no-warm"]).no_warm


def test_the_folder_is_private_and_refused_when_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir()
    folder = place.folder({"XDG_RUNTIME_DIR": str(runtime)})
    assert folder == str(runtime / "adk-acp")
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    os.chmod(folder, 0o755)
    with pytest.raises(place.PlaceError, match="not a private folder"):
        place.folder({"XDG_RUNTIME_DIR": str(runtime)})
    monkeypatch.setattr(place, "RUN_USER", str(tmp_path / "no-run-user"))
    monkeypatch.setattr(place, "FALLBACK_ROOT", str(tmp_path))
    relative = place.folder({"XDG_RUNTIME_DIR": "relative/dir"})  # ignored: the fallback
    assert relative == str(tmp_path / f"adk-acp-{os.getuid()}")


def test_the_folder_does_not_depend_on_tmpdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not $TMPDIR: $XDG_RUNTIME_DIR if private, else /run/user/<uid> if there, else
    /tmp/adk-acp-<uid>; a symbolic link planted there is refused."""
    uid = os.getuid()
    run_user, root = tmp_path / "run-user", tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(place, "RUN_USER", str(run_user))
    monkeypatch.setattr(place, "FALLBACK_ROOT", str(root))
    seen = set()
    for i in range(3):
        monkeypatch.setenv("TMPDIR", str(tmp_path / f"t{i}"))
        monkeypatch.setattr("tempfile.tempdir", str(tmp_path / f"t{i}"))
        seen.add(place.folder({"TMPDIR": str(tmp_path / f"t{i}")}))
    assert seen == {str(root / f"adk-acp-{uid}")}
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)  # others may write there: not a runtime folder
    assert place.folder({"XDG_RUNTIME_DIR": str(shared)}) == str(root / f"adk-acp-{uid}")
    (run_user / str(uid)).mkdir(parents=True, mode=0o700)
    assert place.folder({}) == str(run_user / str(uid) / "adk-acp")
    os.rmdir(run_user / str(uid) / "adk-acp")
    os.rmdir(run_user / str(uid))
    os.rmdir(root / f"adk-acp-{uid}")
    os.symlink(tmp_path / "elsewhere", root / f"adk-acp-{uid}")
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    with pytest.raises(place.PlaceError, match="not a private folder"):
        place.folder({})


def test_a_pid_is_trusted_only_while_it_holds_the_lock(tmp_path: Path) -> None:
    import fcntl

    lock = Path(place.lock_path(str(tmp_path), "k"))
    lock.write_text(f"{os.getpid()}\n")  # this process: alive, but not holding the lock
    assert place.server_pid(str(tmp_path), "k") is None
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        st = lock.stat()
        assert os.getpid() in place.lock_holders(st.st_dev, st.st_ino)
    finally:
        os.close(fd)
    st = lock.stat()
    assert os.getpid() not in place.lock_holders(st.st_dev, st.st_ino)


def test_the_installation_key_is_stable_and_changes_with_a_source_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = place.install_key()
    assert len(key) == 16 and key == place.install_key()
    monkeypatch.setattr(place, "__version__", "9.9.9")
    assert place.install_key() != key


def test_the_server_environment_keeps_no_credential() -> None:
    env = {"PATH": "/bin", "HOME": "/h", "GEMINI_API_KEY": "k", "LC_ALL": "C", "OTHER": "x"}
    assert client.server_env(env) == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C"}


def test_a_request_carries_its_descriptors(tmp_path: Path) -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    marker = tmp_path / "marker"
    marker.write_text("mine", encoding="utf-8")
    fds = [os.open(marker, os.O_RDONLY) for _ in range(wire.FDS)]
    request = {"key": "k", "argv": ["-m", "x"], "env": {"A": "b" * 200_000}}
    with left, right:
        wire.send_request(left, request, fds)
        got, received = wire.recv_request(right)
    assert got == request
    assert [os.read(fd, 4) for fd in received] == [b"mine"] * wire.FDS
    for fd in fds + received:
        os.close(fd)


def test_a_request_without_descriptors_is_refused() -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    body = json.dumps({"key": "k"}).encode()
    with left, right:
        left.sendall(len(body).to_bytes(4, "big") + body)
        with pytest.raises(wire.WireError, match="file descriptors"):
            wire.recv_request(right)


def test_the_server_refuses_another_uid_and_another_installation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """SO_PEERCRED gives the peer's uid: a uid that is not the server's is refused before
    anything is read; a request of another installation key is refused after."""
    cwd = os.open(tmp_path, os.O_RDONLY)
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        monkeypatch.setattr(server.os, "getuid", lambda: os.geteuid() + 1)
        with pytest.raises(wire.WireError, match="is not served by uid"):
            server.read_request(right, "k")
        monkeypatch.undo()
        wire.send_request(left, {"key": "other", "argv": [], "env": {}}, [0, 1, 2, cwd])
        os.close(cwd)
        with pytest.raises(wire.WireError, match="installation 'other'"):
            server.read_request(right, "k")


def test_the_child_reads_stdin_only_after_the_spawns_go() -> None:
    """A spawn that gave up waiting (EOF instead of `go`) serves cold: the child must not
    start."""
    from acp_server.warm.child import _go

    for sent, expected in ((wire.GO, True), (b"", False), (b"no\n", False)):
        left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with left, right:
            left.sendall(sent)
            left.shutdown(socket.SHUT_WR)
            assert _go(right) is expected


def test_a_new_server_sweeps_what_gone_servers_of_other_installations_left(
    tmp_path: Path,
) -> None:
    old = time.time() - 2 * place.SWEEP_AGE_S
    names = ["aaaa.sock", "aaaa.lock", "aaaa.log", "bbbb.log", "mine.lock", "notes.txt"]
    for name in names:
        (tmp_path / name).write_text("12345678\n" if name.endswith(".lock") else "")
        if not name.startswith("bbbb"):  # bbbb: too recent (an upgrade starting now)
            os.utime(tmp_path / name, (old, old))
    assert place.sweep(str(tmp_path), keep="mine") == ["aaaa.lock", "aaaa.log", "aaaa.sock"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bbbb.log", "mine.lock", "notes.txt"]
