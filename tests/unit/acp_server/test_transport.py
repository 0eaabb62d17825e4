"""The NDJSON transport: framing, JSON-RPC errors, cancel, the fast initialize path."""

from __future__ import annotations

import asyncio
import io
import json
import os
import threading
from typing import Any

from acp import schema
from pydantic import BaseModel

from acp_server.errors import AcpError
from acp_server.stdio import Output, StdinReader, Trace, answer_initialize, redact
from acp_server.transport import JsonRpcConnection
from runtime.errors import AuthRequiredError


class Sink(io.BytesIO):
    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.getvalue().splitlines()]


class Echo(BaseModel):
    text: str


def _engine() -> tuple[JsonRpcConnection, Sink]:
    sink = Sink()
    engine = JsonRpcConnection(Output(sink))

    async def echo(params: Echo) -> dict[str, str]:
        return {"text": params.text}

    async def boom(params: Any) -> None:
        raise ZeroDivisionError("bad luck")

    async def auth(params: Any) -> None:
        raise AuthRequiredError("set GEMINI_API_KEY")

    async def slow(params: Any) -> None:
        await asyncio.sleep(30)

    async def table(params: Any) -> None:
        raise AcpError(-32002, "Session not found: x")

    engine.register("test/echo", Echo, echo)
    engine.register("test/boom", None, boom)
    engine.register("test/auth", None, auth)
    engine.register("test/slow", None, slow)
    engine.register("test/table", None, table)
    return engine, sink


def _req(i: int, method: str, params: Any = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).encode()


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_every_bad_input_gets_its_code_and_the_engine_keeps_serving() -> None:
    engine, sink = _engine()
    engine.feed(b"{not json")
    engine.feed(b"[1, 2]")
    engine.feed(b'{"jsonrpc": "1.0", "id": 7, "method": "test/echo"}')
    engine.feed(b'{"jsonrpc": "2.0", "id": 8}')
    engine.feed(_req(1, "no/such"))
    engine.feed(b'{"jsonrpc": "2.0", "method": "no/such/notification", "params": {}}')
    engine.feed(_req(2, "test/echo", {"text": 5}))
    engine.feed(_req(3, "test/boom"))
    engine.feed(_req(4, "test/auth"))
    engine.feed(_req(5, "test/table"))
    engine.feed(_req(6, "test/echo", {"text": "still alive"}))
    await _settle()
    by_id = {m.get("id"): m for m in sink.lines()}
    codes = [m["error"]["code"] for m in sink.lines() if m.get("id") is None]
    assert codes == [-32700, -32600]
    assert by_id[7]["error"]["code"] == -32600
    assert by_id[8]["error"]["code"] == -32600
    assert by_id[1]["error"]["code"] == -32601
    assert by_id[2]["error"]["code"] == -32602
    assert by_id[2]["error"]["data"][0]["loc"] == ["text"]
    assert by_id[3]["error"]["code"] == -32603 and "bad luck" in by_id[3]["error"]["message"]
    assert by_id[4]["error"]["code"] == -32000 and "GEMINI_API_KEY" in by_id[4]["error"]["message"]
    assert by_id[5]["error"]["code"] == -32002
    assert by_id[6]["result"] == {"text": "still alive"}
    assert len(sink.lines()) == 10  # the unknown notification got no answer


async def test_cancel_request_answers_minus_32800() -> None:
    engine, sink = _engine()
    engine.feed(_req(9, "test/slow"))
    await _settle()
    engine.feed(b'{"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 9}}')
    await _settle()
    (reply,) = sink.lines()
    assert reply["id"] == 9 and reply["error"]["code"] == -32800


async def test_large_lines_pass_through() -> None:
    engine, sink = _engine()
    big = "x" * 20_000_000
    engine.feed(_req(1, "test/echo", {"text": big}))
    await _settle()
    assert sink.lines()[0]["result"]["text"] == big


async def test_outgoing_messages_are_one_line_each_and_requests_get_responses() -> None:
    engine, sink = _engine()
    engine.notify("session/update", {"text": "multi\nline"})
    pending = asyncio.ensure_future(engine.request("fs/read_text_file", {"path": "/a"}))
    await _settle()
    lines = sink.getvalue().splitlines()
    assert len(lines) == 2
    request = json.loads(lines[1])
    engine.feed(
        json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"content": "hi"}}).encode()
    )
    assert (await asyncio.wait_for(pending, 2))["content"] == "hi"


def test_fast_initialize_validates_against_the_schema() -> None:
    sink = Sink()
    line = _req(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {"terminal": True}})
    handled, params = answer_initialize(line, Output(sink))
    assert handled and params == {"protocolVersion": 1, "clientCapabilities": {"terminal": True}}
    result = schema.InitializeResponse.model_validate(sink.lines()[0]["result"])
    assert (
        result.protocol_version == 1 and result.agent_info and result.agent_info.name == "adk-acp"
    )
    assert answer_initialize(_req(2, "session/new", {}), Output(Sink())) == (False, None)
    bad = Sink()
    assert answer_initialize(_req(3, "initialize", {"protocolVersion": "1"}), Output(bad)) == (
        True,
        None,
    )
    assert bad.lines()[0]["error"]["code"] == -32602


def test_newer_client_versions_are_answered_with_ours() -> None:
    """Our highest (2, ACP v2) at or below the client's; 1 below 2."""
    sink = Sink()
    answer_initialize(_req(1, "initialize", {"protocolVersion": 7}), Output(sink))
    answer_initialize(_req(2, "initialize", {"protocolVersion": 1}), Output(sink))
    assert [line["result"]["protocolVersion"] for line in sink.lines()] == [2, 1]


async def test_a_dialect_answers_in_place_of_v1_and_shapes_what_is_sent() -> None:
    engine, sink = _engine()
    sent: list[tuple[str, Any]] = []

    class Only:
        def method(self, name: str, model: Any, fn: Any) -> Any:
            return (model, fn) if name == "test/echo" else None

        def notify(self, method: str, params: Any) -> None:
            sent.append((method, params))

        async def request(self, method: str, params: Any, msg_id: str | None) -> Any:
            return None

    engine.dialect = Only()
    engine.feed(_req(1, "test/echo", {"text": "hi"}))
    engine.feed(_req(2, "test/boom"))
    await _settle()
    engine.notify("session/update", {"x": 1})
    first, second = sink.lines()
    assert first["result"] == {"text": "hi"} and second["error"]["code"] == -32601
    assert sent == [("session/update", {"x": 1})]
    assert set(engine.methods) >= {"test/echo", "test/boom"}


def test_reader_buffers_until_attached_and_reports_eof() -> None:
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(read_fd, "rb")
    reader = StdinReader(stream)
    reader.start()

    def write() -> None:
        with os.fdopen(write_fd, "wb") as writer:
            writer.write(b'{"a": 1}\r\n\n' + b'{"big": "' + b"y" * 5_000_000 + b'"}\n')

    writer_thread = threading.Thread(target=write)
    writer_thread.start()
    assert reader.first() == b'{"a": 1}'
    loop = asyncio.new_event_loop()
    got: list[bytes | None] = []
    done = asyncio.Event()

    def on_line(item: bytes | None) -> None:
        got.append(item)
        if item is None:
            done.set()

    reader.attach(loop, on_line)
    loop.run_until_complete(asyncio.wait_for(done.wait(), 5))
    loop.close()
    writer_thread.join()
    stream.close()
    assert (
        got[0] == b'{"a": 1}' and got[1] is not None and len(got[1]) > 5_000_000 and got[2] is None
    )


def test_trace_redacts_keys(tmp_path: Any) -> None:
    trace = Trace(str(tmp_path / "t.jsonl"))
    trace.record(
        "in",
        json.dumps({"params": {"_meta": {"api-key": "AIzaSECRETSECRETSECRETSECRET"}}}).encode(),
    )
    trace.record("out", b"raw AIzaSECRETSECRETSECRETSECRET text")
    trace.close()
    text = (tmp_path / "t.jsonl").read_text()
    assert "SECRET" not in text and text.count("***") == 2
    assert redact({"authorization": "Bearer x", "n": [1, "AIza" + "k" * 30]}) == {
        "authorization": "***",
        "n": [1, "***"],
    }
