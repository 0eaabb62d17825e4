"""`runtime.host.stop_terminal`: a terminal's kill and release, waited for through a
cancel of the caller and at most a bound; a failed kill is logged and the release follows."""

from __future__ import annotations

import asyncio

import pytest

from runtime.host import TerminalExit, TerminalHandle, TerminalOutput, stop_terminal


class Terminal(TerminalHandle):
    def __init__(self, *, kill_fails: bool = False) -> None:
        self.terminal_id = "t1"
        self.calls: list[str] = []
        self.kill_fails = kill_fails
        self.release_gate = asyncio.Event()
        self.release_gate.set()

    async def wait_for_exit(self) -> TerminalExit:
        raise AssertionError("not waited for")

    async def output(self) -> TerminalOutput:
        raise AssertionError("not read")

    async def kill(self) -> None:
        self.calls.append("kill")
        if self.kill_fails:
            raise OSError("the editor lost it")

    async def release(self) -> None:
        self.calls.append("release")
        await self.release_gate.wait()
        self.calls.append("released")


async def test_a_failed_kill_is_logged_and_the_release_follows(
    caplog: pytest.LogCaptureFixture,
) -> None:
    terminal = Terminal(kill_fails=True)
    assert await stop_terminal(terminal, kill=True) is False
    assert terminal.calls == ["kill", "release", "released"]
    assert "could not kill terminal t1: the editor lost it" in caplog.text
    assert await stop_terminal(Terminal(), kill=False) is True


async def test_a_cancel_meanwhile_is_raised_once_the_release_is_answered() -> None:
    terminal = Terminal()
    terminal.release_gate.clear()
    task = asyncio.ensure_future(stop_terminal(terminal, kill=True, within_s=30))
    while "release" not in terminal.calls:
        await asyncio.sleep(0)
    task.cancel()
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done()  # the editor has not answered yet: still waited for
    terminal.release_gate.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert terminal.calls == ["kill", "release", "released"]
