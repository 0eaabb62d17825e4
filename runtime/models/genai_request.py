"""Incremental request conversion for the google-genai client (design: ContentGenerator;
performance: a flat per-turn cost over HTTP).

For every streamed call, google-genai validates the whole request again
(`types._GenerateContentParameters(...)`, a pydantic pass with a per-model warning
check) and converts every history `Content` to its wire dict (`_Content_to_mldev` /
`_Content_to_vertex`, then `convert_to_dict` and `encode_unserializable_types`).
Measured over a local Gemini API at 200 turns this was three quarters of the agent's
CPU per turn, growing 12 → 170 ms with the history.

The history part of our requests is made of the same `Content` objects from one call
to the next (`runtime/adk/history_cache.py` keeps them), so `CachedStreamRequests`
converts each `Content` once, with genai's own converter, and reuses the wire dict
while the object is unchanged. Unchanged means: the same object, the same `role`,
the same `parts` list of the same length (every writer in the engine and in ADK
replaces the parts list or appends to it; none edits a kept `Part` in place). The
rest of the request (model, config, system instruction, tools) is converted by genai
as before, and the answer is parsed by genai's own functions.

It replaces, on one client's `aio.models` only, the private per-hop method
`_generate_content_stream` that genai's public `generate_content_stream` calls for
each hop (so automatic continuation and everything else of the public method stays
genai's). A request it does not recognise (dict config, contents that are not a list
of `Content`) goes to genai's method unchanged. `tests/unit/runtime/models/test_genai_request.py`
checks the wire body equal to genai's for every kind of part.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import urlencode

from google.genai import _common, types
from google.genai import models as genai_models

logger = logging.getLogger(__name__)

# Entries unused for this many requests are dropped (one cache per client, which may
# serve several sessions in turn).
_KEEP_FOR = 64

Hop = Callable[..., Awaitable[AsyncIterator[types.GenerateContentResponse]]]


class _Entry:
    __slots__ = ("content", "parts", "count", "role", "wire", "used")

    def __init__(self, content: types.Content, wire: dict[str, Any], used: int) -> None:
        self.content = content
        self.parts = content.parts
        self.count = len(content.parts or ())
        self.role = content.role
        self.wire = wire
        self.used = used


class _NotOurs(Exception):
    """A request this builder does not handle: genai's own method takes it."""


class CachedStreamRequests:
    """Builds `streamGenerateContent` bodies with each history `Content` converted once."""

    def __init__(self, api_client: Any) -> None:
        self._api = api_client
        self._entries: dict[int, _Entry] = {}
        self._requests = 0
        # The previous request: its contents, their parts lists and lengths, wire dicts.
        self._last: tuple[list[types.Content], list[Any], list[int], list[dict[str, Any]]] = (
            [],
            [],
            [],
            [],
        )
        self.converted = 0  # contents converted (tests, bench)
        self.reused = 0

    @property
    def vertex(self) -> bool:
        return bool(getattr(self._api, "vertexai", False))

    def install(self, models: Any) -> None:
        """Routes `models`' per-hop stream calls through this cache."""
        original: Hop = models._generate_content_stream

        async def hop(
            *, model: str, contents: Any, config: Any = None
        ) -> AsyncIterator[types.GenerateContentResponse]:
            if self.fits(contents, config):
                try:
                    return await self.stream(model, contents, config)
                except _NotOurs:
                    pass
            return await original(model=model, contents=contents, config=config)

        models._generate_content_stream = hop

    @staticmethod
    def fits(contents: Any, config: Any) -> bool:
        """A list (of `Content`s: each is checked as it is converted) and a config model."""
        return isinstance(contents, list) and (
            config is None or isinstance(config, types.GenerateContentConfig)
        )

    # -- the body ------------------------------------------------------------------

    def _wire(self, content: types.Content, root: Any) -> dict[str, Any]:
        entry = self._entries.get(id(content))
        if entry is not None and entry.content is content:
            parts = content.parts
            if (
                parts is entry.parts
                and (parts is None or len(parts) == entry.count)
                and content.role == entry.role
            ):
                entry.used = self._requests
                self.reused += 1
                return entry.wire
        if not isinstance(content, types.Content):
            raise _NotOurs
        convert = genai_models._Content_to_vertex if self.vertex else genai_models._Content_to_mldev
        wire = _common.encode_unserializable_types(
            _common.convert_to_dict(convert(content, None, root))
        )
        self._entries[id(content)] = _Entry(content, wire, self._requests)
        self.converted += 1
        return wire

    def body(
        self,
        model: str,
        contents: Sequence[types.Content],
        config: types.GenerateContentConfig | None,
    ) -> tuple[str, dict[str, Any], types._GenerateContentParameters]:
        """The request path, its JSON body, and the parameters genai's parsers expect."""
        self._requests += 1
        # Built without validation: the inputs are already genai models (`fits`).
        params = types._GenerateContentParameters.model_construct(
            model=model, contents=list(contents), config=config
        )
        rest = types._GenerateContentParameters.model_construct(
            model=model, contents=None, config=config
        )
        convert = (
            genai_models._GenerateContentParameters_to_vertex
            if self.vertex
            else genai_models._GenerateContentParameters_to_mldev
        )
        request: dict[str, Any] = convert(self._api, rest, None, params)
        url = request.get("_url")
        path = "{model}:streamGenerateContent?alt=sse"
        if url:
            path = path.format_map(url)
        query = request.get("_query")
        if query:
            path = f"{path}?{urlencode(query)}"
        request.pop("config", None)
        request = _common.encode_unserializable_types(_common.convert_to_dict(request))
        request["contents"] = self._wires(contents, params)
        if self._requests % _KEEP_FOR == 0:
            for content in self._last[0]:  # the leading run was not stamped one by one
                entry = self._entries.get(id(content))
                if entry is not None and entry.content is content:
                    entry.used = self._requests
            horizon = self._requests - _KEEP_FOR
            self._entries = {k: e for k, e in self._entries.items() if e.used > horizon}
        return path, request, params

    def _wires(self, contents: Sequence[types.Content], root: Any) -> list[dict[str, Any]]:
        """The wire dicts: the run of contents that leads this request as it led the
        previous one (same objects, same parts lists of the same length) is taken as
        it was sent; the rest is looked up one by one."""
        before, before_parts, before_counts, before_wires = self._last
        try:
            parts = [c.parts for c in contents]
        except AttributeError:  # not a Content
            raise _NotOurs from None
        same = 0
        for content, old, now, was, count in zip(
            contents, before, parts, before_parts, before_counts, strict=False
        ):
            if content is not old or now is not was or (now is not None and len(now) != count):
                break
            same += 1
        self.reused += same
        wires = before_wires[:same] + [self._wire(c, root) for c in contents[same:]]
        self._last = (
            list(contents),
            parts,
            [len(p) if p is not None else 0 for p in parts],
            wires,
        )
        return wires

    async def stream(
        self,
        model: str,
        contents: Sequence[types.Content],
        config: types.GenerateContentConfig | None,
    ) -> AsyncIterator[types.GenerateContentResponse]:
        path, request, params = self.body(model, contents, config)
        http_options = config.http_options if config is not None else None
        if config is not None and getattr(config, "should_return_http_response", None):
            raise ValueError("a raw HTTP response is not available for a streamed call")
        responses = await self._api.async_request_streamed("post", path, request, http_options)
        return self._parsed(responses, params)

    async def _parsed(
        self, responses: Any, params: types._GenerateContentParameters
    ) -> AsyncIterator[types.GenerateContentResponse]:
        parse = (
            genai_models._GenerateContentResponse_from_vertex
            if self.vertex
            else genai_models._GenerateContentResponse_from_mldev
        )
        config = params.config
        kwargs: dict[str, object] = (
            {
                "config": {
                    "response_schema": getattr(config, "response_schema", None),
                    "response_json_schema": getattr(config, "response_json_schema", None),
                    "include_all_fields": getattr(config, "include_all_fields", None),
                }
            }
            if config is not None
            else {}
        )
        async for response in responses:
            data = json.loads(response.body) if response.body else {}
            value = types.GenerateContentResponse._from_response(
                response=parse(data, None, params), kwargs=kwargs
            )
            value.sdk_http_response = types.HttpResponse(headers=response.headers)
            self._api._verify_response(value)
            yield value
