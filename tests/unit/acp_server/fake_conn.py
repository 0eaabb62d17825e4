"""A fake JSON-RPC connection for the ACP layer's unit tests (no subprocess, no pygls).

It stands where `acp_server.transport.JsonRpcConnection` stands: it records what would
be sent (notifications and requests, as the JSON-ready data the wire would carry) and
answers our requests from a script: per method, a queue of answers, each a result, an
exception to raise (say a `JsonRpcException`), or a function of the params.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from acp_server.transport import dump


class FakeConn:
    def __init__(self, answers: dict[str, list[Any]] | None = None) -> None:
        self.answers: dict[str, list[Any]] = {k: list(v) for k, v in (answers or {}).items()}
        self.sent: list[tuple[str, Any]] = []
        """Every notification and request, in order: (method, params)."""
        self.methods: dict[str, tuple[Any, Callable[[Any], Awaitable[Any]]]] = {}
        self.notifications: dict[str, Callable[[Any], Any]] = {}

    # ------------------------------------------------------------ what the agent sends

    def notify(self, method: str, params: Any) -> None:
        self.sent.append((method, dump(params)))

    async def request(self, method: str, params: Any) -> Any:
        self.sent.append((method, dump(params)))
        await asyncio.sleep(0)  # an answer never arrives in the same step
        queue = self.answers.get(method)
        if not queue:
            raise AssertionError(f"no scripted answer for {method}")
        answer = queue.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer(params) if callable(answer) else answer

    # ------------------------------------------------------------ what the server installs

    def register(self, method: str, params_model: Any, fn: Callable[[Any], Awaitable[Any]]) -> None:
        self.methods[method] = (params_model, fn)

    def register_notification(self, method: str, fn: Callable[[Any], Any]) -> None:
        self.notifications[method] = fn

    # ------------------------------------------------------------ reading what was sent

    def requests(self, method: str) -> list[Any]:
        return [params for m, params in self.sent if m == method]

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The `session/update`s sent (of one session), their `update` objects."""
        return [
            params["update"]
            for method, params in self.sent
            if method == "session/update"
            and (session_id is None or params["sessionId"] == session_id)
        ]

    def update_kinds(self, session_id: str | None = None) -> list[str]:
        return [u["sessionUpdate"] for u in self.updates(session_id)]
