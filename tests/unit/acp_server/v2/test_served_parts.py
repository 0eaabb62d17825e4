"""The v2 parts served from v1 features (`acp_server/v2/`): auth methods and
`auth/login`/`logout`, the capabilities a v2 client is served with, compaction and
subagent updates, plans by v1's id, and a form holding the turn (`requires_action`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from acp_server.capabilities import AUTH_METHODS, LOGIN_METHOD
from acp_server.errors import AcpError
from acp_server.v2.capabilities import auth_methods_v2, initialize_result_v2
from acp_server.v2.dialect import V2Dialect, client_capabilities
from acp_server.v2.updates import V2Updates


class FakeProtocol:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def notify(self, method: str, params: Any) -> None:
        self.sent.append((method, params))

    async def send_request_async(self, method: str, params: Any, msg_id: Any = None) -> Any:
        self.sent.append((method, params))
        return {"action": "accept", "content": {"choice": "retry_once"}}


class FakeConn:
    """What `V2Dialect` uses of a `JsonRpcConnection`; v1's handlers record their params."""

    def __init__(self) -> None:
        self.protocol = FakeProtocol()
        self.called: list[tuple[str, Any]] = []
        self.methods: dict[str, Any] = {
            "authenticate": (None, self._v1("authenticate")),
            "logout": (None, self._v1("logout")),
        }

    def _v1(self, name: str) -> Any:
        async def handler(params: Any) -> dict[str, Any]:
            self.called.append((name, params))
            return {}

        return handler

    def register(self, name: str, model: Any, fn: Any) -> None:
        self.methods[name] = (model, fn)


def dialect() -> tuple[V2Dialect, FakeConn]:
    conn = FakeConn()
    state: Any = SimpleNamespace(conn=conn, replay_cursors=False)
    return V2Dialect(state), conn


def test_auth_methods_are_v1s_typed_and_the_terminal_login_only_when_the_client_runs_it() -> None:
    plain = auth_methods_v2({}, AUTH_METHODS, LOGIN_METHOD)
    assert [(m["type"], m["methodId"]) for m in plain] == [
        ("agent", "gemini-api-key"),
        ("agent", "vertex-ai"),
    ]
    assert all(m["name"] and m["description"] for m in plain)
    (terminal,) = auth_methods_v2({"auth": {"terminal": {}}}, AUTH_METHODS, LOGIN_METHOD)[2:]
    assert terminal == {
        "type": "terminal",
        "methodId": "login",
        "name": terminal["name"],
        "description": terminal["description"],
        "args": ["--login"],
        "env": [],
    }
    assert (
        len(auth_methods_v2({"auth": {"terminal": True}}, AUTH_METHODS, LOGIN_METHOD)) == 2
    )  # v1's flag is not v2's
    session = initialize_result_v2(None, [], LOGIN_METHOD)["capabilities"]["session"]
    assert session["systemPrompt"] == {"mode": {"override": {}}} and session["fork"] == {}


def test_a_v2_client_is_served_compaction_subagents_and_forms_when_it_offers_them() -> None:
    served = client_capabilities({"elicitation": {"form": {}, "url": {}}})
    assert served == {
        "session": {"compaction": {}},
        "subagents": {},
        "elicitation": {"form": {}},
    }
    assert "elicitation" not in client_capabilities({"elicitation": {"url": {}}})
    assert "elicitation" not in client_capabilities(None)


async def test_login_and_logout_are_v1s_authenticate_and_logout() -> None:
    v2, conn = dialect()
    served = v2.method("auth/login", None, conn.methods["auth/login"][1])
    assert served is not None
    login = {"methodId": "gemini-api-key", "_meta": {"api-key": "k"}}
    assert await served[1](login) == {}
    logout = v2.method("auth/logout", None, conn.methods["auth/logout"][1])
    assert logout is not None and await logout[1]({}) == {}
    assert conn.called == [("authenticate", login), ("logout", {})]
    # registered on the connection for v2; v1 (no dialect) does not have them
    try:
        await conn.methods["auth/login"][1](login)
    except AcpError as exc:
        assert exc.code == -32601
    else:
        raise AssertionError("auth/login answered for v1")


async def test_a_form_holds_the_turn_as_requires_action_and_goes_as_it_is() -> None:
    v2, conn = dialect()
    running = {"sessionUpdate": "state_update", "state": "running"}
    v2.notify("session/update", {"sessionId": "s", "update": running})
    form = {"sessionId": "s", "mode": "form", "message": "m", "requestedSchema": {}}
    answer = await v2.request("elicitation/create", form, None)
    assert answer["action"] == "accept"
    assert [(m, p.get("update", {}).get("state")) for m, p in conn.protocol.sent] == [
        ("session/update", "running"),
        ("session/update", "requires_action"),
        ("elicitation/create", None),
        ("session/update", "running"),
    ]
    assert conn.protocol.sent[2][1] == form


def test_compaction_and_subagent_updates_pass_and_plans_keep_v1s_id() -> None:
    updates = V2Updates()
    compaction = {
        "sessionUpdate": "compaction_update",
        "compactionId": "c1",
        "status": "completed",
        "summary": [{"type": "text", "text": "s"}],
    }
    assert updates.update("s", compaction) == compaction
    child = {"sessionUpdate": "subagent_update", "sessionId": "c", "state": {"state": "running"}}
    assert updates.update("s", child) == child
    entries = [{"content": "x", "priority": "medium", "status": "pending"}]
    plan_file = {
        "sessionUpdate": "plan",
        "entries": entries,
        "_meta": {"adkAcp": {"planId": "plan:a.md"}},
    }
    assert updates.update("s", plan_file) == {
        "sessionUpdate": "plan_update",
        "plan": {"type": "items", "planId": "plan:a.md", "entries": entries},
    }


async def test_a_subagents_question_holds_the_session_it_runs_in() -> None:
    v2, conn = dialect()
    running = {"sessionUpdate": "state_update", "state": "running"}
    v2.notify("session/update", {"sessionId": "p", "update": running})
    child = {"sessionUpdate": "subagent_update", "sessionId": "c", "state": {"state": "running"}}
    v2.notify("session/update", {"sessionId": "p", "update": child})
    grandchild = {**child, "sessionId": "g"}
    v2.notify("session/update", {"sessionId": "c", "update": grandchild})
    asked = {"sessionId": "g", "toolCall": {"toolCallId": "t"}, "options": []}
    await v2.request("session/request_permission", asked, None)
    states = [
        (p["sessionId"], p["update"]["state"])
        for m, p in conn.protocol.sent
        if m == "session/update" and p["update"]["sessionUpdate"] == "state_update"
    ]
    assert states == [("p", "running"), ("p", "requires_action"), ("p", "running")]
