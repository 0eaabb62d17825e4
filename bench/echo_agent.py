"""The benchmark floor: a minimal ACP agent in plain, synchronous Python.

It reads newline-delimited JSON-RPC from stdin and writes it to stdout, using
only the standard library, so its numbers are the cost of the protocol alone.
It also drives the end-to-end client's self-tests (`tests/e2e`).

- `initialize` → protocol version 1, empty capabilities, agentInfo.
- `session/new` → a new `sessionId`.
- `session/prompt` → N `agent_message_chunk` updates, each echoing the prompt's
  text, then `{stopReason: "end_turn"}`. N comes from the prompt's
  `_meta.echoChunks`, else the env var `ECHO_AGENT_CHUNKS`, else 1.
- `session/cancel` is ignored (except by `/wait`); unknown notifications too.
  Unknown requests get -32601, unparsable lines -32700. EOF on stdin → exit 0.

Prompt commands (for the client's self-tests):
- `/ask [title]` → a pending `tool_call` update, then one
  `session/request_permission` (options allow/reject); the chosen option id (or
  `cancelled`) is echoed back; stopReason `cancelled` if the request was cancelled.
- `/call METHOD JSON` → calls client METHOD with JSON params (+ sessionId) and
  echoes the raw response (`{"result": ...}` or `{"error": ...}`) as the message.
- `/wait` → waits for `session/cancel` (stopReason `cancelled`) or a
  `$/cancel_request` naming this prompt (error -32800).
- `/raw TEXT` → writes TEXT to stdout as one line, verbatim.
- `/stderr TEXT` → writes TEXT to stderr.
- `/exit CODE` → exits at once with CODE, without answering.
"""

from __future__ import annotations

import json
import os
import sys
from collections import deque
from typing import Any, BinaryIO

Message = dict[str, Any]
PROTOCOL_VERSION = 1


class EchoAgent:
    """A one-threaded ACP agent; messages that arrive while it waits are queued."""

    def __init__(self, stdin: BinaryIO, stdout: BinaryIO, stderr: BinaryIO) -> None:
        self._in = stdin
        self._out = stdout
        self._err = stderr
        self._queue: deque[Message] = deque()
        self._next_id = 0
        self._sessions = 0
        self._default_chunks = int(os.environ.get("ECHO_AGENT_CHUNKS", "1"))

    # ------------------------------------------------------------ wire

    def send(self, message: Message) -> None:
        wire = {"jsonrpc": "2.0", **message}
        self._out.write(json.dumps(wire, separators=(",", ":")).encode() + b"\n")
        self._out.flush()

    def _read_wire(self) -> Message | None:
        """The next well-formed message from stdin; None at EOF."""
        while True:
            line = self._in.readline()
            if not line:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError as exc:
                self.send({"id": None, "error": {"code": -32700, "message": f"Parse error: {exc}"}})
                continue
            if isinstance(message, dict):
                return message
            self.send({"id": None, "error": {"code": -32600, "message": "Invalid Request"}})

    def next_message(self) -> Message | None:
        return self._queue.popleft() if self._queue else self._read_wire()

    def update(self, session_id: str, update: Message) -> None:
        self.send(
            {"method": "session/update", "params": {"sessionId": session_id, "update": update}}
        )

    def say(self, session_id: str, text: str) -> None:
        self.update(
            session_id,
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}},
        )

    def call_client(self, method: str, params: Message) -> Message:
        """Send a request to the client and wait for its response (queueing the rest)."""
        self._next_id += 1
        request_id = f"echo-{self._next_id}"
        self.send({"id": request_id, "method": method, "params": params})
        while True:
            message = self._read_wire()
            if message is None:
                raise SystemExit(0)
            if "method" not in message and message.get("id") == request_id:
                return message
            self._queue.append(message)

    # ------------------------------------------------------------ dispatch

    def run(self) -> int:
        while (message := self.next_message()) is not None:
            self.dispatch(message)
        return 0

    def dispatch(self, message: Message) -> None:
        method = message.get("method")
        if not isinstance(method, str):
            return  # a response nobody waits for
        params = message.get("params") or {}
        is_request = "id" in message
        handlers = {
            "initialize": self.initialize,
            "authenticate": lambda _p: {},
            "session/new": self.new_session,
            "session/set_mode": lambda _p: {},
            "session/set_config_option": lambda _p: {"configOptions": []},
            "session/set_model": lambda _p: {},
        }
        if method == "session/prompt" and is_request:
            self.prompt(message["id"], params)
        elif method in handlers and is_request:
            self.send({"id": message["id"], "result": handlers[method](params)})
        elif is_request:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            self.send({"id": message["id"], "error": error})

    def initialize(self, params: Message) -> Message:
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {},
            "authMethods": [],
            "agentInfo": {"name": "echo-agent", "title": "Echo agent", "version": "1.0.0"},
        }

    def new_session(self, params: Message) -> Message:
        self._sessions += 1
        return {"sessionId": f"echo-session-{self._sessions}"}

    # ------------------------------------------------------------ prompt turn

    def prompt(self, request_id: Any, params: Message) -> None:
        session_id = params.get("sessionId", "")
        blocks = params.get("prompt") or []
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        command, _, rest = text.partition(" ")
        result: Message | None = {"stopReason": "end_turn"}
        if command == "/ask":
            result = self.ask(session_id, rest or "Run the echo tool?")
        elif command == "/call":
            method, _, raw = rest.partition(" ")
            answer = self.call_client(method, {**json.loads(raw or "{}"), "sessionId": session_id})
            self.say(
                session_id,
                json.dumps({k: v for k, v in answer.items() if k in ("result", "error")}),
            )
        elif command == "/wait":
            result = self.wait_for_cancel(request_id, session_id)
        elif command == "/raw":
            self._out.write(rest.encode() + b"\n")
            self._out.flush()
        elif command == "/stderr":
            self._err.write(rest.encode() + b"\n")
            self._err.flush()
        elif command == "/exit":
            raise SystemExit(int(rest or "0"))
        else:
            meta = params.get("_meta") or {}
            for _ in range(int(meta.get("echoChunks", self._default_chunks))):
                self.say(session_id, text)
        if result is None:
            error = {"code": -32800, "message": "Request cancelled"}
            self.send({"id": request_id, "error": error})
        else:
            self.send({"id": request_id, "result": result})

    def ask(self, session_id: str, title: str) -> Message:
        self._next_id += 1
        tool_call_id = f"echo-tool-{self._next_id}"
        self.update(
            session_id,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": tool_call_id,
                "title": title,
                "kind": "execute",
                "status": "pending",
            },
        )
        answer = self.call_client(
            "session/request_permission",
            {
                "sessionId": session_id,
                "toolCall": {"toolCallId": tool_call_id, "title": title},
                "options": [
                    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                ],
            },
        )
        outcome = (answer.get("result") or {}).get("outcome") or {}
        chosen = outcome.get("optionId") if outcome.get("outcome") == "selected" else "cancelled"
        self.say(session_id, f"permission: {chosen}")
        return {"stopReason": "cancelled" if chosen == "cancelled" else "end_turn"}

    def wait_for_cancel(self, request_id: Any, session_id: str) -> Message | None:
        """Block until this turn is cancelled; None means `$/cancel_request` (→ -32800)."""
        while True:
            message = self._read_wire()
            if message is None:
                raise SystemExit(0)
            method, params = message.get("method"), message.get("params") or {}
            if method == "session/cancel" and params.get("sessionId") == session_id:
                return {"stopReason": "cancelled"}
            if method == "$/cancel_request" and params.get("requestId") == request_id:
                return None
            self._queue.append(message)


def main() -> int:
    agent = EchoAgent(sys.stdin.buffer, sys.stdout.buffer, sys.stderr.buffer)
    try:
        return agent.run()
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
