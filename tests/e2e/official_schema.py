"""The official ACP JSON schema, applied to every message of the end-to-end tier.

The schema ships in the npm package `@agentclientprotocol/sdk` (`schema/v1/schema.json`
for the stable protocol, `schema.unstable.json` for stable plus unstable); the e2e tier
installs that package with the Node clients (`tests/e2e/node_clients.py`), so the
newest one the registry serves is what the agent is checked against.

Each definition of the schema names its method (`x-method`) and the side that serves
it (`x-side`), so a message is checked against exactly one definition:

| message | checked against |
|---|---|
| agent → client request `m` | the `...Request` served by the client for `m` |
| agent → client notification `m` | the `...Notification` served by the client for `m` |
| agent's answer to our request `m` | the `...Response` served by the agent for `m`, or `Error` |
| client → agent request `m` (answered with a result) | the `...Request` served by the agent |
| client → agent notification `m` | the `...Notification` served by the agent |
| client's answer to the agent's request `m` | the `...Response` served by the client |

A request the agent refused with an error need not be valid (the hostile tests send
bad params on purpose), and extension methods (`_` prefix) are not in the schema.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest

logger = logging.getLogger(__name__)

Side = Literal["agent", "client"]
Kind = Literal["Request", "Response", "Notification"]
Check = Callable[[Any], str | None]


class OfficialSchema:
    """Validators for the definitions of one schema file, built on first use."""

    def __init__(self, document: dict[str, Any], name: str) -> None:
        self.name = name
        self._defs: dict[str, Any] = document["$defs"]
        self._by_method: dict[tuple[str, str, str], str] = {}
        for def_name, body in self._defs.items():
            method, side = body.get("x-method"), body.get("x-side")
            if not (isinstance(method, str) and isinstance(side, str)):
                continue
            for kind in ("Request", "Response", "Notification"):
                if def_name.endswith(kind):
                    self._by_method[(method, side, kind)] = def_name

    def knows(self, method: str) -> bool:
        return any(key[0] == method for key in self._by_method)

    def problem(self, method: str, served_by: Side, kind: Kind, value: Any) -> str | None:
        """Why `value` does not match the definition for (method, side, kind); None if it does
        or if the schema has no such definition (an extension method)."""
        def_name = self._by_method.get((method, served_by, kind))
        if def_name is None:
            return None
        return self._check(def_name)(value)

    def error_problem(self, error: Any) -> str | None:
        return self._check("Error")(error)

    @functools.cache  # noqa: B019 - one per schema file, kept for the whole run
    def _check(self, def_name: str) -> Check:
        """jsonschema-rs decides (about 2 µs a message; the pure-Python validator took
        ~4 ms on a loaded machine, a second per 200-chunk answer); the pure-Python one
        explains a failure."""
        import jsonschema_rs

        document = {"$defs": self._defs, "$ref": f"#/$defs/{def_name}"}
        fast = jsonschema_rs.Draft202012Validator(document)

        def check(value: Any) -> str | None:
            if fast.is_valid(value):
                return None
            return f"{def_name}: {_explain(document, value)}"

        return check


def _explain(document: dict[str, Any], value: Any) -> str:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(document).iter_errors(value))
    if error is None:
        return "invalid"
    # In a union, the variant whose tag matched is the one the message meant: skip the
    # variants that failed on their tag (a `const` or `enum`), then take the deepest.
    while error.context:
        meant = [e for e in error.context if e.validator not in ("const", "enum")]
        if not meant:
            break
        error = max(meant, key=lambda e: len(e.absolute_path))
    where = "/".join(str(p) for p in error.absolute_path) or "(top)"
    return f"at {where}: {error.message[:300]}"


@functools.cache
def official_schema(version: str = "v1", stable: bool = False) -> OfficialSchema | None:
    """The unstable schema of `version` (v1, or v2 for a client speaking ACP v2: stable and
    unstable parts; its stable parts alone with `stable`) from the installed SDK package,
    or None where npm cannot install it (the check is then skipped, with a warning)."""
    from tests.e2e.node_clients import node_clients

    try:
        root = node_clients().root
    except pytest.skip.Exception as skipped:
        logger.warning("no official ACP schema to check messages against: %s", skipped)
        return None
    path = schema_path(root, stable=stable, version=version)
    return OfficialSchema(json.loads(path.read_text(encoding="utf-8")), str(path))


def schema_path(clients_root: Path, *, stable: bool = False, version: str = "v1") -> Path:
    folder = clients_root / "node_modules" / "@agentclientprotocol" / "sdk" / "schema" / version
    return folder / ("schema.json" if stable else "schema.unstable.json")


def trace_problems(trace: Path, schema: OfficialSchema) -> tuple[int, list[str]]:
    """`traffic_problems` of an agent's protocol trace (`--trace-file`)."""
    lines = trace.read_text(encoding="utf-8").splitlines()
    return traffic_problems([json.loads(line) for line in lines], schema)


def traffic_problems(
    entries: list[dict[str, Any]], schema: OfficialSchema
) -> tuple[int, list[str]]:
    """Every message of a connection (`{"dir": "in" (from the client) or "out", "msg"}`, as
    the protocol trace and the node clients' `report.wire` hold them) checked against
    `schema`: how many, and the problems of both sides (the agent's, then the client's)."""
    check = TrafficCheck(schema)
    asked: dict[Any, str] = {}  # the client's request id -> method
    problems: list[str] = []
    for entry in entries:
        message = entry["msg"]
        if entry["dir"] == "in":
            if isinstance(message.get("method"), str) and "id" in message:
                asked[message["id"]] = message["method"]
            check.client_message(message)
            continue
        our_method = None if "method" in message else asked.pop(message.get("id"), None)
        if problem := check.agent_message(message, our_method):
            problems.append(problem)
    return len(entries), problems + check.client_problems


class TrafficCheck:
    """Checks one connection's messages, both ways, against the official schema.

    `agent_problems` are the agent's (they fail the test through the client's
    violations); `client_problems` are the test client's own (kept for inspection:
    a test may answer badly on purpose)."""

    def __init__(self, schema: OfficialSchema) -> None:
        self.schema = schema
        self.client_problems: list[str] = []
        self._sent: dict[Any, tuple[str, Any]] = {}  # our request id -> (method, params)
        self._asked: dict[Any, str] = {}  # the agent's request id -> method

    def agent_message(self, message: dict[str, Any], our_method: str | None) -> str | None:
        """A problem with a line the agent wrote (`our_method`: the request it answers)."""
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._asked[message["id"]] = method
                kind: Kind = "Request"
            else:
                kind = "Notification"
            return self._where(
                method, self.schema.problem(method, "client", kind, message.get("params"))
            )
        if our_method is None:
            return None
        sent = self._sent.pop(message.get("id"), None)
        if "error" in message:
            return self._where(our_method, self.schema.error_problem(message["error"]))
        if sent is not None:  # accepted: what we sent must have been valid
            if problem := self.schema.problem(our_method, "agent", "Request", sent[1]):
                self.client_problems.append(f"{our_method} (accepted): {problem}")
        result = message.get("result")
        schema = self.schema
        if our_method == "initialize" and isinstance(result, dict):
            if result.get("protocolVersion") == 2:  # a client asking for more gets ACP v2
                schema = official_schema("v2") or schema
        return self._where(our_method, schema.problem(our_method, "agent", "Response", result))

    def client_message(self, message: dict[str, Any]) -> None:
        """A line the test client wrote (recorded, not failed: see the class)."""
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._sent[message["id"]] = (method, message.get("params"))
            elif problem := self.schema.problem(
                method, "agent", "Notification", message.get("params")
            ):
                self.client_problems.append(f"{method}: {problem}")
            return
        asked = self._asked.pop(message.get("id"), None)
        if asked is not None and "result" in message:
            if problem := self.schema.problem(asked, "client", "Response", message["result"]):
                self.client_problems.append(f"answer to {asked}: {problem}")

    def _where(self, method: str, problem: str | None) -> str | None:
        if problem is None:
            return None
        return f"{method} does not match the official ACP schema ({self.schema.name}): {problem}"
