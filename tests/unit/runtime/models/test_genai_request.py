"""The cached request builder sends exactly what google-genai would, and reuses only
what is unchanged (runtime/models/genai_request.py)."""

from __future__ import annotations

from typing import Any

import pytest
from google import genai
from google.genai import _common, types
from google.genai import models as genai_models

from runtime.models.genai_request import CachedStreamRequests


def _genai_body(client: genai.Client, model: str, contents: Any, config: Any) -> dict[str, Any]:
    """The body genai's own `_generate_content_stream` builds (its steps, in order)."""
    api = client.aio.models._api_client
    params = types._GenerateContentParameters(model=model, contents=contents, config=config)
    convert = (
        genai_models._GenerateContentParameters_to_vertex
        if api.vertexai
        else genai_models._GenerateContentParameters_to_mldev
    )
    request = convert(api, params, None, params)
    request.pop("config", None)
    return _common.encode_unserializable_types(_common.convert_to_dict(request))


def _history() -> list[types.Content]:
    return [
        types.Content(role="user", parts=[types.Part(text="read the README, please")]),
        types.Content(
            role="model",
            parts=[
                types.Part(text="thinking about it", thought=True),
                types.Part(
                    function_call=types.FunctionCall(
                        id="c1", name="read_file", args={"path": "README.md", "n": 2.5}
                    ),
                    thought_signature=b"\x00\x01signature\xff",
                ),
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="c1", name="read_file", response={"output": "# hi\n", "lines": [1, 2]}
                    )
                ),
                types.Part(inline_data=types.Blob(data=b"\x89PNG\r\n", mime_type="image/png")),
                types.Part(
                    file_data=types.FileData(file_uri="gs://b/x.pdf", mime_type="application/pdf")
                ),
            ],
        ),
        types.Content(role="model", parts=[types.Part(text="Done. ünïcode ✓")]),
        types.Content(role="user", parts=[types.Part(text="and now?")]),
    ]


def _config() -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        system_instruction=types.Content(role="system", parts=[types.Part(text="Be brief.")]),
        temperature=0.2,
        top_p=0.9,
        thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=1024),
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name="read_file",
                        description="Reads a file",
                        parameters_json_schema={
                            "type": "object",
                            "properties": {"path": {"type": "string"}},
                        },
                    )
                ]
            )
        ],
        tool_config=types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(
                mode=types.FunctionCallingConfigMode.AUTO
            )
        ),
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


@pytest.mark.parametrize("vertex", [False, True])
def test_body_equals_genai(vertex: bool) -> None:
    if vertex:
        client = genai.Client(vertexai=True, project="p", location="us-central1")
    else:
        client = genai.Client(api_key="k")
    cache = CachedStreamRequests(client.aio.models._api_client)
    contents, config = _history(), _config()
    path, body, _ = cache.body("gemini-2.5-pro", contents, config)
    assert body == _genai_body(client, "gemini-2.5-pro", contents, config)
    assert path.endswith(":streamGenerateContent?alt=sse") and "gemini-2.5-pro" in path
    # Again with the same objects: everything reused, still equal.
    _, again, _ = cache.body("gemini-2.5-pro", contents, config)
    assert again == body
    assert cache.converted == len(contents) and cache.reused == len(contents)


def test_changed_contents_are_converted_again() -> None:
    client = genai.Client(api_key="k")
    cache = CachedStreamRequests(client.aio.models._api_client)
    contents = _history()
    cache.body("m", contents, None)
    contents[0].parts = [types.Part(text="replaced")]  # a new parts list
    contents[3].parts.append(types.Part(text="appended"))  # the same list, grown
    contents[4] = contents[4].model_copy(update={"parts": [types.Part(text="copy")]})
    contents[1].role = "user"
    _, body, _ = cache.body("m", contents, None)
    assert body == _genai_body(client, "m", contents, None)
    assert cache.converted == len(contents) + 4


async def test_unrecognised_requests_go_to_genai() -> None:
    assert not CachedStreamRequests.fits("just text", None)
    assert not CachedStreamRequests.fits([types.Content(role="user")], {"temperature": 1})
    assert CachedStreamRequests.fits([types.Content(role="user")], None)

    calls: list[Any] = []

    class Models:
        _api_client = genai.Client(api_key="k").aio.models._api_client

        async def _generate_content_stream(self, **kwargs: Any) -> Any:
            calls.append(kwargs)
            return "genai's own"

    models = Models()
    CachedStreamRequests(models._api_client).install(models)
    mixed = [types.Content(role="user", parts=[types.Part(text="a")]), {"role": "user"}]
    assert await models._generate_content_stream(model="m", contents=mixed) == "genai's own"
    assert await models._generate_content_stream(model="m", contents="text") == "genai's own"
    assert [c["contents"] for c in calls] == [mixed, "text"]


def test_entries_are_dropped_when_unused() -> None:
    client = genai.Client(api_key="k")
    cache = CachedStreamRequests(client.aio.models._api_client)
    old = _history()
    cache.body("m", old, None)
    fresh = [types.Content(role="user", parts=[types.Part(text="x")])]
    for _ in range(130):
        cache.body("m", fresh, None)
    assert len(cache._entries) == 1
