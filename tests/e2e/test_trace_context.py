"""Trace context (issue 22), through the real process: a prompt's `_meta.traceparent`,
`tracestate` and `baggage` make the client's span the parent of the turn's spans (ours,
then ADK's down to the model call), exported over OTLP/HTTP to a receiver the test
runs, as the standard `OTEL_*` variables say."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.e2e.spine import MakeAgent, dirs, start_session
from tests.e2e.tools_harness import wait_until
from tests.fakes.gemini_server import FakeGeminiServer, function_call_response, text_response

pytestmark = pytest.mark.e2e

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"


class OtlpReceiver:
    """Accepts OTLP/HTTP JSON on `/v1/traces` and keeps every span."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.content_types: set[str] = set()
        self.url = ""

    async def _traces(self, request: web.Request) -> web.Response:
        self.content_types.add(request.content_type)
        body = json.loads(await request.read())
        for resource in body.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    self.spans.append({**span, "scope": scope["scope"]["name"]})
        return web.json_response({})

    def in_trace(self, trace_id: str) -> list[dict[str, Any]]:
        return [s for s in self.spans if s["traceId"] == trace_id]


@pytest.fixture
async def otlp_receiver() -> AsyncIterator[OtlpReceiver]:
    receiver = OtlpReceiver()
    app = web.Application()
    app.router.add_post("/v1/traces", receiver._traces)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    receiver.url = f"http://127.0.0.1:{port}"
    yield receiver
    await runner.cleanup()


def _ancestors(span: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[str]:
    names = []
    parent = span.get("parentSpanId")
    while parent in by_id:
        names.append(by_id[parent]["name"])
        parent = by_id[parent].get("parentSpanId")
    return names


async def test_the_clients_span_is_the_parent_of_the_turn_down_to_the_model_call(
    make_agent: MakeAgent,
    tmp_path: Path,
    fake_gemini: FakeGeminiServer,
    otlp_receiver: OtlpReceiver,
) -> None:
    d = dirs(tmp_path)
    (d.workspace / "a.txt").write_text("alpha\n")
    fake_gemini.add(
        function_call_response("read_file", {"file_path": "a.txt"}),
        text_response("It says alpha."),
        text_response("untraced"),
    )
    otel = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.url,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OTEL_SERVICE_NAME": "adk-acp-under-test",
    }
    client, sid = await start_session(make_agent, d, fake_gemini, env=otel)
    meta = {
        "traceparent": f"00-{TRACE_ID}-{CLIENT_SPAN}-01",
        "tracestate": "editor=zed",
        "baggage": "user=ada",
    }
    assert await client.prompt(sid, "read a.txt", meta=meta) == {"stopReason": "end_turn"}

    def model_calls() -> list[dict[str, Any]]:
        return [s for s in otlp_receiver.in_trace(TRACE_ID) if "generate_content" in s["name"]]

    await wait_until(lambda: len(model_calls()) == 2, 60, "both model calls' spans")
    await wait_until(
        lambda: any(s["name"] == "session/prompt" for s in otlp_receiver.in_trace(TRACE_ID)),
        60,
        "the turn's span",
    )
    spans = otlp_receiver.in_trace(TRACE_ID)
    by_id = {s["spanId"]: s for s in spans}
    (turn,) = [s for s in spans if s["name"] == "session/prompt"]
    assert turn["parentSpanId"] == CLIENT_SPAN and turn["scope"] == "adk-acp"
    assert turn["traceState"] == "editor=zed"
    attributes = {a["key"]: a["value"] for a in turn["attributes"]}
    assert attributes["gen_ai.conversation.id"] == {"stringValue": sid}
    for call in model_calls():
        chain = _ancestors(call, by_id)
        assert chain[-1] == "session/prompt", chain  # one trace: client → turn → ... → model
        assert any(name.startswith("invoke_agent") for name in chain), chain
    assert any(s["name"].startswith("execute_tool") for s in spans)
    assert otlp_receiver.content_types == {"application/json"}

    # a prompt without trace context is a trace of its own
    assert await client.prompt(sid, "again") == {"stopReason": "end_turn"}
    await wait_until(
        lambda: sum(s["name"] == "session/prompt" for s in otlp_receiver.spans) == 2,
        60,
        "the second turn's span",
    )
    (second,) = [s for s in otlp_receiver.spans if s["name"] == "session/prompt" and s is not turn]
    assert second["traceId"] != TRACE_ID and "parentSpanId" not in second
