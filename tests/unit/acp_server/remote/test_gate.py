"""`GatePolicy` and `RequestGate`: browser origins and foreign Host names refused before
the endpoint sees a request (issue 38); the end-to-end tier is
`tests/e2e/test_serve_security.py` and `tests/e2e/test_serve_browser.py`."""

from __future__ import annotations

from typing import Any

import pytest

from acp_server.remote.gate import GateError, GatePolicy, HostName, RequestGate, normalize_origin

PORT = 8765


def loopback(**kwargs: Any) -> GatePolicy:
    return GatePolicy.make("127.0.0.1", PORT, kwargs.get("origins", ()), kwargs.get("hosts", ()))


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("http://localhost:3000", "http://localhost:3000"),
        ("HTTPS://Example.COM:443/", "https://example.com"),
        ("http://[::1]:80", "http://[::1]"),
        ("vscode-webview://x", None),
        ("http://a.example/path", None),
        ("*", None),
        ("null", None),
        ("http://user@a.example", None),
        ("http://a.example:99999", None),
    ],
)
def test_origins_are_normalized_or_refused(given: str, normal: str | None) -> None:
    if normal is None:
        with pytest.raises(GateError):
            normalize_origin(given)
    else:
        assert normalize_origin(given) == normal


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("127.0.0.1:8765", HostName("127.0.0.1", 8765)),
        ("LocalHost.:8765", HostName("localhost", 8765)),
        ("[::1]:8765", HostName("::1", 8765)),
        ("[::1]", HostName("::1", None)),
        ("acp.example.com", HostName("acp.example.com", None)),
        ("::1", None),  # unbracketed IPv6
        ("[evil.example]:1", None),
        ("a.example:", None),
        ("a.example:x", None),
        ("a.example:0", None),
        ("a b:1", None),
        ("evil.example@127.0.0.1:8765", None),
        ("", None),
    ],
)
def test_host_headers_are_parsed(value: str, parsed: HostName | None) -> None:
    assert HostName.parse(value) == parsed


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "127.0.0.1", "localhost", "127.1.2.3:8765"],
)
def test_a_loopback_server_answers_loopback_names(host: str) -> None:
    assert loopback().host_refusal(host) is None


@pytest.mark.parametrize(
    "host",
    [
        None,
        "evil.example:8765",  # DNS rebinding: the page's own name
        "evil.example",
        "localhost.evil.example:8765",
        "127.0.0.1.nip.io:8765",
        "127.0.0.1:9999",
        "10.0.0.1:8765",
        "[::1]x",
    ],
)
def test_a_loopback_server_refuses_other_hosts(host: str | None) -> None:
    assert loopback().host_refusal(host) is not None


def test_public_hosts_are_answered_by_name_and_by_their_own_port() -> None:
    policy = loopback(hosts=["acp.example.com", "proxy.example:443"])
    assert policy.host_refusal("ACP.example.com") is None
    assert policy.host_refusal("acp.example.com:8443") is None
    assert policy.host_refusal("proxy.example:443") is None
    assert policy.host_refusal("proxy.example") is not None
    assert policy.host_refusal("proxy.example:8765") is not None
    assert policy.host_refusal("other.example") is not None


def test_a_wildcard_bind_answers_addresses_and_refuses_unknown_names() -> None:
    policy = GatePolicy.make("0.0.0.0", PORT, (), ["acp.team.example"])
    assert policy.host_refusal("192.0.2.7:8765") is None
    assert policy.host_refusal("[2001:db8::1]:8765") is None
    assert policy.host_refusal("localhost:8765") is None
    assert policy.host_refusal("acp.team.example") is None
    assert policy.host_refusal("agent-1:8765") is not None
    assert policy.host_refusal("evil.example:8765") is not None


def test_a_specific_address_answers_only_itself() -> None:
    policy = GatePolicy.make("192.0.2.7", PORT, (), ())
    assert policy.host_refusal("192.0.2.7:8765") is None
    assert policy.host_refusal("192.0.2.8:8765") is not None
    assert policy.host_refusal("localhost:8765") is not None


def test_a_server_bound_by_name_answers_that_name() -> None:
    assert GatePolicy.make("localhost", PORT, (), ()).host_refusal("[::1]:8765") is None
    named = GatePolicy.make("devbox", PORT, (), ())
    assert named.host_refusal("devbox:8765") is None
    assert named.host_refusal("evil.example:8765") is not None


def test_requests_with_an_origin_are_refused_unless_allowed() -> None:
    policy = loopback(origins=["http://localhost:3000"])
    assert policy.origin_refusal(None, None) is None
    assert policy.origin_refusal(None, "none") is None  # typed in the address bar
    assert policy.origin_refusal("http://localhost:3000", "same-site") is None
    assert policy.origin_refusal("HTTP://LOCALHOST:3000", None) is None
    for origin in ("http://evil.example", "null", "http://localhost:3001", "file://", "garbage"):
        assert policy.origin_refusal(origin, None) is not None, origin
    assert policy.origin_refusal(None, "cross-site") is not None
    assert policy.origin_refusal(None, "same-site") is not None


def test_unusable_options_are_refused_when_the_policy_is_made() -> None:
    with pytest.raises(GateError):
        GatePolicy.make("127.0.0.1", PORT, ["http://a.example/x"], ())
    with pytest.raises(GateError):
        GatePolicy.make("127.0.0.1", PORT, (), ["evil.example/x"])


class Recorder:
    """An ASGI app and the messages a gate sent back."""

    def __init__(self) -> None:
        self.called = False
        self.sent: list[dict[str, Any]] = []

    async def app(self, scope: Any, receive: Any, send: Any) -> None:
        self.called = True

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


def scope(kind: str, path: str, **headers: str) -> dict[str, Any]:
    encoded = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    extensions = {"websocket.http.response": {}} if kind == "websocket" else {}
    return {"type": kind, "path": path, "headers": encoded, "extensions": extensions}


@pytest.mark.parametrize("kind", ["http", "websocket"])
async def test_the_gate_answers_before_the_app(kind: str) -> None:
    for headers, status in (
        ({"host": "127.0.0.1:8765", "origin": "http://evil.example"}, 403),
        ({"host": "evil.example:8765"}, 421),
        ({"host": "evil.example:8765", "origin": "http://evil.example"}, 403),
    ):
        seen = Recorder()
        await RequestGate(seen.app, loopback())(scope(kind, "/acp", **headers), _receive, seen.send)
        assert not seen.called
        start = "websocket.http.response.start" if kind == "websocket" else "http.response.start"
        assert seen.sent[0]["type"] == start and seen.sent[0]["status"] == status


async def test_the_gate_lets_its_own_clients_and_health_checks_through() -> None:
    for path, headers in (
        ("/acp", {"host": "127.0.0.1:8765"}),
        ("/healthz", {"host": "evil.example", "origin": "http://evil.example"}),
    ):
        seen = Recorder()
        await RequestGate(seen.app, loopback())(scope("http", path, **headers), _receive, seen.send)
        assert seen.called and not seen.sent


async def test_an_allowed_origin_gets_its_preflight_and_cors_headers() -> None:
    policy = loopback(origins=["http://localhost:3000"])
    headers = {"host": "127.0.0.1:8765", "origin": "http://localhost:3000"}
    seen = Recorder()
    preflight = {**scope("http", "/acp", **headers), "method": "OPTIONS"}
    await RequestGate(seen.app, policy)(preflight, _receive, seen.send)
    assert not seen.called and seen.sent[0]["status"] == 204
    sent = dict(seen.sent[0]["headers"])
    assert sent[b"access-control-allow-origin"] == b"http://localhost:3000"
    assert b"acp-connection-id" in sent[b"access-control-allow-headers"]

    answered: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def record(message: dict[str, Any]) -> None:
        answered.append(message)

    post = {**scope("http", "/acp", **headers), "method": "POST"}
    await RequestGate(app, policy)(post, _receive, record)
    sent = dict(answered[0]["headers"])
    assert sent[b"access-control-allow-origin"] == b"http://localhost:3000"
    assert b"Acp-Connection-Id" in sent[b"access-control-expose-headers"]
