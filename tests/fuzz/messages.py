"""Generated hostile input for the fuzz tier: mutations of every ACP message the
agent accepts, as raw lines, each with what a correct agent must answer.

Deterministic for a seed. `Line.answer_id` is the id a response must carry (a
valid, unique id on a line that is still JSON), None when no answer is due or
only an answer with id null (malformed lines, wrong ids, notifications).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

HUGE = 100_000
VALID_CODES = frozenset({-32600, -32601, -32602, -32002, -32004, -32000, -32003, -32800})


@dataclass(frozen=True)
class Line:
    data: bytes
    answer_id: int | str | None
    kind: str


def templates(session_id: str, cwd: str) -> list[tuple[str, dict[str, Any] | None, bool]]:
    """(method, params, is_request) for every method the agent serves, with valid params."""
    text = [{"type": "text", "text": "hello"}]
    return [
        ("initialize", {"protocolVersion": 1, "clientCapabilities": {}}, True),
        ("authenticate", {"methodId": "gemini-api-key"}, True),
        ("session/new", {"cwd": cwd, "mcpServers": []}, True),
        ("session/load", {"sessionId": session_id, "cwd": cwd, "mcpServers": []}, True),
        ("session/prompt", {"sessionId": session_id, "prompt": text}, True),
        ("session/set_mode", {"sessionId": session_id, "modeId": "default"}, True),
        (
            "session/set_config_option",
            {"sessionId": session_id, "configId": "mode", "value": "plan"},
            True,
        ),
        ("session/set_model", {"sessionId": session_id, "modelId": "gemini-2.5-flash"}, True),
        ("session/cancel", {"sessionId": session_id}, False),
        ("$/cancel_request", {"requestId": 999_999}, False),
        ("_vendor/extension", {"x": 1}, True),
        ("_vendor/notice", {"x": 1}, False),
        ("no/such/method", {}, True),
    ]


def _odd_value(rng: random.Random) -> Any:
    choices: list[Any] = [
        None,
        True,
        -1,
        2**70,
        1.5,
        "",
        "x" * rng.choice((1, 300, HUGE)),
        [],
        [1, "a", None],
        {},
        {"type": "nope"},
        "\ud800" if rng.random() < 0.5 else "\u0000",
        "../../../../etc/passwd",
        "file:///dev/zero",
    ]
    return rng.choice(choices)


def _nest(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def _mutate_params(params: dict[str, Any] | None, rng: random.Random) -> Any:
    if params is None or rng.random() < 0.1:
        return _odd_value(rng)
    mutated = copy.deepcopy(params)
    keys = list(mutated)
    move = rng.randrange(6)
    if move == 0 and keys:
        del mutated[rng.choice(keys)]
    elif move == 1 and keys:
        mutated[rng.choice(keys)] = _odd_value(rng)
    elif move == 2:
        mutated[rng.choice(["extra", "_meta", "sessionId", "prompt"])] = _odd_value(rng)
    elif move == 3 and "prompt" in mutated:
        mutated["prompt"] = [
            rng.choice(
                [
                    {
                        "type": "resource_link",
                        "uri": rng.choice(["file://[::1", "/etc/passwd", "x"]),
                        "name": "n",
                    },
                    {"type": "image", "mimeType": "image/png", "data": "%%%"},
                    {"type": "audio", "mimeType": "audio/wav", "data": "AAAA"},
                    {
                        "type": "resource",
                        "resource": {"uri": "x", "blob": "!!", "mimeType": "image/png"},
                    },
                    {"type": "text"},
                    {"type": "text", "text": "x" * HUGE},
                ]
            )
        ]
    elif move == 4:
        mutated[rng.choice(keys or ["k"])] = _nest(rng.choice((50, 500)))
    else:
        mutated["cwd"] = "/" + "a" * rng.choice((256, 5000))
    return mutated


def _bad_id(rng: random.Random) -> bytes:
    return rng.choice([b"true", b"false", b"1.5", b"-0.25", b'{"a": 1}', b"[1]", b"[]", b"null"])


class Fuzzer:
    """Yields hostile lines for one agent process, numbering valid ids uniquely."""

    def __init__(self, seed: int, session_id: str, cwd: str) -> None:
        self.rng = random.Random(seed)
        self.templates = templates(session_id, cwd)
        self._next_id = 10_000
        self.valid_prompts_left = 15
        self.valid_sessions_left = 3

    def _id(self) -> int | str:
        self._next_id += 1
        return self._next_id if self.rng.random() < 0.7 else f"fz-{self._next_id}"

    def lines(self, count: int) -> Iterator[Line]:
        for _ in range(count):
            yield self._one()

    def _one(self) -> Line:
        rng = self.rng
        method, params, is_request = rng.choice(self.templates)
        roll = rng.random()
        if roll < 0.08:  # not JSON at all
            raw = rng.choice(
                [
                    b"{",
                    b"}",
                    b"nul",
                    b'{"jsonrpc": "2.0", "id": 1, "method": ',
                    b"\xff\xfe{}",
                    b'{"a": "\xc3\x28"}',
                    b"[" * 3000 + b"]" * 3000,
                    b'{"id": NaN}',
                    b"\x00\x01",
                ]
            )
            return Line(raw, None, "malformed")
        if roll < 0.13:  # split or glued lines: each fragment is malformed
            whole = json.dumps(
                {"jsonrpc": "2.0", "id": self._id(), "method": method, "params": params}
            )
            if rng.random() < 0.5:
                cut = rng.randrange(1, len(whole) - 1)
                return Line((whole[:cut] + "\n" + whole[cut:]).encode(), None, "split")
            return Line((whole + whole).encode(), None, "glued")
        if roll < 0.2:  # ids of the wrong type
            body = json.dumps({"method": method, "params": params})[1:]
            return Line(
                b'{"jsonrpc": "2.0", "id": ' + _bad_id(rng) + b", " + body.encode(), None, "bad-id"
            )
        if roll < 0.25:  # responses nobody asked for
            message = {
                "jsonrpc": "2.0",
                "id": rng.choice([self._id(), "zz", 0]),
                "result": _odd_value(rng),
            }
            if rng.random() < 0.3:
                message = {"jsonrpc": "2.0", "id": 5, "error": _odd_value(rng)}
            return Line(json.dumps(message).encode(), None, "response")
        if roll < 0.3:  # not JSON-RPC 2.0
            message = {"jsonrpc": rng.choice(["1.0", None, 2]), "id": self._id(), "method": method}
            if rng.random() < 0.3:
                message = {
                    "id": self._id(),
                    "method": rng.choice([1, None, [], {}]),
                    "jsonrpc": "2.0",
                }
            return Line(json.dumps(message).encode(), message["id"], "invalid-request")
        mutated: Any = params
        if roll < 0.85 or not self._valid_allowed(method):
            mutated = _mutate_params(params, rng)
            if method == "session/new" and isinstance(mutated, dict) and "cwd" in mutated:
                mutated["cwd"] = "relative/dir"  # sessions are real work: only a few valid ones
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": mutated}
        msg_id = None
        if is_request:
            msg_id = self._id()
            message["id"] = msg_id
        try:
            data = json.dumps(message).encode("utf-8", "surrogatepass")
        except (ValueError, RecursionError):
            return Line(b"{}", None, "skipped")
        if rng.random() < 0.05:  # invalid UTF-8 inside a string: the line is malformed
            data = data.replace(b'"params"', b'"par\xffams"', 1)
            msg_id = None
        return Line(data, msg_id, "request" if is_request else "notification")

    def _valid_allowed(self, method: str) -> bool:
        if method == "session/prompt":
            if self.valid_prompts_left <= 0:
                return False
            self.valid_prompts_left -= 1
        if method == "session/new":
            if self.valid_sessions_left <= 0:
                return False
            self.valid_sessions_left -= 1
        return True
