"""The JSON-RPC connection: pygls' `JsonRPCServer`, driven by newline-delimited JSON.

pygls frames messages with Content-Length; ACP puts one JSON message per line.
So the lines are read by `acp_server.stdio` and fed here one by one: a line that
is not JSON gets -32700 (id null), JSON that is not a JSON-RPC 2.0 message gets
-32600, and everything else goes to pygls' protocol, which dispatches requests
to the installed handlers, matches responses to our own requests, answers
unknown methods with -32601 and ignores unknown notifications. Writes go
through `Output` without headers, one line each.

`$/cancel_request {requestId}` cancels the handler task of that request; pygls
then answers it with -32800.

Handlers are registered with `register(method, params_model, fn)`: params are
validated with the `acp_server.schema` model (-32602 with the validation errors),
runtime errors are mapped through `acp_server.errors`, anything unexpected
becomes -32603 with a clear message and a log entry, and the server keeps
serving.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from lsprotocol.converters import get_converter
from pydantic import BaseModel, ValidationError
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol
from pygls.server import JsonRPCServer

from acp_server.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    AcpError,
    from_runtime,
)
from acp_server.schema.base import dump as dump
from acp_server.stdio import Output
from runtime.errors import RuntimeAgentError

logger = logging.getLogger(__name__)

ACP_CANCEL_REQUEST = "$/cancel_request"
LSP_CANCEL_REQUEST = "$/cancelRequest"

P = TypeVar("P", bound=BaseModel)


class ClientLink(Protocol):
    """What a session and its host speak to the client through: a `JsonRpcConnection`
    on stdio, a `remote.channel.SessionChannel` (every attached client) under `serve`."""

    def notify(self, method: str, params: Any) -> None: ...

    async def request(self, method: str, params: Any) -> Any: ...


Handler = Callable[[Any], Awaitable[Any]]


class Dialect(Protocol):
    """Another protocol version than v1, chosen at `initialize` (`acp_server.v2`): which
    handler answers a method (`None`: not served in it), and the shapes of what we send."""

    def method(
        self, name: str, params_model: type[BaseModel] | None, fn: Handler
    ) -> tuple[type[BaseModel] | None, Handler] | None: ...

    def notify(self, method: str, params: Any) -> None: ...

    async def request(self, method: str, params: Any, msg_id: str | None) -> Any: ...


class AcpRpcProtocol(JsonRPCProtocol):
    """pygls' JSON-RPC protocol with ACP's `$/cancel_request`."""

    def _handle_notification(self, method_name: str, params: Any) -> None:
        if method_name in (ACP_CANCEL_REQUEST, LSP_CANCEL_REQUEST):
            request_id = (
                params.get("requestId", params.get("id")) if isinstance(params, dict) else None
            )
            if _valid_id(request_id):
                self._cancel_incoming(request_id)
            else:
                logger.info("ignored a cancel of an invalid request id %s", _short(request_id))
            return
        super()._handle_notification(method_name, params)

    def _handle_response(
        self, msg_id: Any, result: Any | None = None, error: Any | None = None
    ) -> None:
        """Match a client's answer to our request; late and unknown answers are dropped quietly.

        After `session/cancel`, clients still answer the requests we abandoned
        (`terminal/wait_for_exit`, a permission): their futures are already
        cancelled, so setting a result would raise InvalidStateError.
        """
        future = self._request_futures.pop(msg_id, None)
        if future is None:
            logger.info("dropped a response to unknown request id %s", _short(msg_id))
            return
        if future.done():
            logger.debug("dropped a late response to abandoned request %s", _short(msg_id))
            return
        if error is not None:
            future.set_exception(JsonRpcException.from_error(error))
        else:
            future.set_result(result)

    def _cancel_incoming(self, request_id: Any) -> None:
        future = self._request_futures.get(request_id)
        if future is None:
            logger.info("cancel for unknown or finished request %r", request_id)
            return
        future.cancel()


def _short(value: Any, limit: int = 80) -> str:
    """A client-supplied value for a log line, cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class _NumberOutOfRange(ValueError):
    """A number too large for a float (1e999): the JSON is valid, the params are not."""


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NumberOutOfRange(f"number out of range: {_cut(text, 40)}")
    return value


def _valid_id(value: Any) -> bool:
    """JSON-RPC ids we answer: strings and integers (null is answered as invalid)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _error(code: int, message: str, data: Any = None) -> JsonRpcException:
    return JsonRpcException(message=message, code=code, data=data)


def _validation_data(exc: ValidationError) -> list[dict[str, Any]]:
    return [
        {"loc": list(err.get("loc", ())), "msg": err.get("msg", ""), "type": err.get("type", "")}
        for err in exc.errors(include_url=False)
    ]


class _Server(JsonRPCServer):
    """pygls' server; errors are logged where they happen, not again here."""

    def report_server_error(self, error: Exception, source: Any) -> None:
        logger.debug("pygls reported %s: %s", getattr(source, "__name__", source), error)


@functools.cache
def shared_converter() -> Any:
    """lsprotocol's converter, built once per process (~0.1 s of hook registration); the
    warm server's zygote builds it, so its children's connections start with it."""
    return get_converter()


class JsonRpcConnection:
    """The connection to the client: feeds lines to pygls, installs the ACP methods on
    it, and sends our notifications and requests."""

    def __init__(self, output: Output) -> None:
        self.server = _Server(protocol_cls=AcpRpcProtocol, converter_factory=shared_converter)
        self.protocol: AcpRpcProtocol = self.server.protocol  # type: ignore[assignment]
        self.protocol.set_writer(output, include_headers=False)
        self._output = output
        self.dialect: Dialect | None = None
        """Set at `initialize` when the client speaks another version than v1."""
        self.methods: dict[str, tuple[type[BaseModel] | None, Handler]] = {}
        """What `register` installed: a dialect's handlers may call v1's."""

    # ------------------------------------------------------------ incoming lines

    def feed(self, line: bytes) -> None:
        data = self._parse(line)
        if data is None:
            return
        try:
            message = self.protocol.structure_message(data)
        except JsonRpcException as exc:
            self._reply_error(data.get("id"), exc.code, exc.message)
            return
        try:
            self.protocol.handle_message(message)
        except Exception:  # noqa: BLE001 - the server keeps serving whatever one message does
            logger.exception("failed to handle message")
            if "method" in data and "id" in data:
                self._reply_error(
                    data["id"], INTERNAL_ERROR, "Internal error while dispatching the request"
                )

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        """The message in `line` if it is a JSON-RPC 2.0 message we can act on; otherwise
        the error is answered (id null unless the message had a valid id) and None returned."""
        try:
            data = json.loads(line, parse_constant=_reject_constant, parse_float=_parse_float)
        except _NumberOutOfRange as exc:
            self._reply_out_of_range(line, str(exc))
            return None
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # too deep is malformed too
            self._reply_error(None, PARSE_ERROR, f"Parse error: {_cut(str(exc))}")
            return None
        if not isinstance(data, dict):
            self._reply_error(None, INVALID_REQUEST, "Invalid Request: expected a JSON object")
            return None
        has_id = "id" in data
        msg_id = data.get("id")
        reply_id = msg_id if _valid_id(msg_id) else None
        if "method" not in data:  # a response to one of our requests
            if has_id and ("result" in data) != ("error" in data) and _valid_id(msg_id):
                if "error" in data and not _is_error_object(data["error"]):
                    logger.info("dropped a malformed error response to request %s", _short(msg_id))
                    return None
                return data
            if has_id and ("result" in data or "error" in data):
                logger.info("dropped a response with an invalid id %s", _short(msg_id))
                return None
            self._reply_error(
                reply_id, INVALID_REQUEST, "Invalid Request: neither a request nor a response"
            )
            return None
        problem = None
        notification_params = False
        if data.get("jsonrpc") != "2.0":
            problem = '"jsonrpc" must be "2.0"'
        elif not isinstance(data["method"], str):
            problem = "method must be a string"
        elif has_id and not _valid_id(msg_id):
            problem = "id must be a string or an integer"
        elif data.get("params") is not None and not isinstance(data["params"], dict | list):
            problem = "params must be an object or an array"
            notification_params = not has_id
        if problem is not None:
            if not notification_params:
                self._reply_error(reply_id, INVALID_REQUEST, f"Invalid Request: {problem}")
            else:
                logger.info("dropped an invalid notification: %s", problem)
            return None
        data.setdefault("params", None)
        return data

    def _reply_out_of_range(self, line: bytes, problem: str) -> None:
        """Valid JSON with an unusable number: -32602 for a request, nothing for the rest."""
        try:
            loose = json.loads(line, parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # malformed after all
            self._reply_error(None, PARSE_ERROR, f"Parse error: {_cut(str(exc))}")
            return
        msg_id = loose.get("id") if isinstance(loose, dict) else None
        if isinstance(loose, dict) and isinstance(loose.get("method"), str) and _valid_id(msg_id):
            self._reply_error(msg_id, INVALID_PARAMS, f"Invalid params: {problem}")
        elif isinstance(loose, dict) and "method" in loose and "id" in loose:
            self._reply_error(
                None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer"
            )
        else:
            logger.info("dropped a message with a %s", problem)

    def _reply_error(self, msg_id: Any, code: int, message: str) -> None:
        self._output.send(
            {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
        )

    # ------------------------------------------------------------ registration

    def register(
        self,
        method: str,
        params_model: type[P] | None,
        fn: Callable[[Any], Awaitable[Any]],
    ) -> None:
        """Register `fn` for `method`; `fn` gets the validated model (or the raw params)."""

        self.methods[method] = (params_model, fn)

        async def handler(params: Any) -> Any:
            model: type[BaseModel] | None = params_model
            call = fn
            if self.dialect is not None:
                served = self.dialect.method(method, params_model, fn)
                if served is None:
                    raise _error(METHOD_NOT_FOUND, f"Method not found: {method}")
                model, call = served
            if model is not None:
                try:
                    parsed: Any = model.model_validate(params if params is not None else {})
                except ValidationError as exc:
                    raise _error(
                        INVALID_PARAMS,
                        f"Invalid params for {method}: {_summary(exc)}",
                        _validation_data(exc),
                    ) from exc
            else:
                parsed = params
            try:
                return dump(await call(parsed))
            except AcpError as exc:
                raise _error(exc.code, exc.message, exc.data) from exc
            except RuntimeAgentError as exc:
                mapped = from_runtime(exc)
                raise _error(mapped.code, mapped.message, mapped.data) from exc
            except JsonRpcException:
                raise
            except Exception as exc:  # noqa: BLE001 - becomes -32603; the server keeps serving
                logger.exception("%s failed", method)
                raise _error(
                    INTERNAL_ERROR, f"Internal error in {method}: {type(exc).__name__}: {exc}"
                ) from exc

        handler.__name__ = f"acp_{method.replace('/', '_')}"
        self.server.feature(method)(handler)

    def register_notification(
        self, method: str, fn: Callable[[Any], Awaitable[None] | None]
    ) -> None:
        async def handler(params: Any) -> None:
            try:
                result = fn(params)
                if result is not None:
                    await result
            except Exception:  # noqa: BLE001 - a notification has no reply; log it
                logger.exception("notification %s failed", method)

        handler.__name__ = f"acp_{method.replace('/', '_')}"
        self.server.feature(method)(handler)

    # ------------------------------------------------------------ outgoing

    def notify(self, method: str, params: Any) -> None:
        if self.dialect is not None:
            self.dialect.notify(method, dump(params))
            return
        self.protocol.notify(method, dump(params))

    async def request(self, method: str, params: Any, msg_id: str | None = None) -> Any:
        """Send a request to the client and wait for its result (raises JsonRpcException).
        `msg_id` names the request, for a later `$/cancel_request`."""
        if self.dialect is not None:
            return await self.dialect.request(method, dump(params), msg_id)
        return await self.protocol.send_request_async(method, dump(params), msg_id=msg_id)


def _cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…"


def _is_error_object(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("code"), int)
        and not isinstance(value.get("code"), bool)
        and isinstance(value.get("message", ""), str)
    )


def _summary(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False)[:3]:
        loc = ".".join(str(x) for x in err.get("loc", ())) or "params"
        parts.append(f"{loc}: {err.get('msg', '')}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")
