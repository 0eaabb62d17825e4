"""The base of our ACP message models (`acp_server.schema`) and the two lenient
readings the official schema asks of a receiver.

The official v1 JSON schema marks some fields `x-deserialize-default-on-error` (a
malformed optional field falls back to its default instead of failing the message)
and some arrays `x-deserialize-skip-invalid-items` (a malformed item is dropped):
`or_default` and `valid_items` are those two readings, used where the agent receives
such fields. Everything else is validated strictly: a bad required field is a -32602.

Models are built on first use (`defer_build`), so importing them costs almost nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
)


class AcpModel(BaseModel):
    """An ACP object: snake_case attributes, camelCase aliases, `_meta` as `field_meta`."""

    model_config = ConfigDict(populate_by_name=True, defer_build=True)

    field_meta: Annotated[dict[str, Any] | None, Field(alias="_meta")] = None

    @field_validator("field_meta", mode="wrap")
    @classmethod
    def _meta_or_none(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """A malformed `_meta` is dropped, never a reason to refuse the message."""
        try:
            return handler(value)
        except ValidationError:
            return None


class Sent(AcpModel):
    """An object the agent sends: frozen once built."""

    model_config = ConfigDict(frozen=True)


def dump(value: Any) -> Any:
    """Models (anywhere inside dicts and lists) → JSON-ready data, by alias."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [dump(v) for v in value]
    return value


def or_default(default: Callable[[], Any]) -> WrapValidator:
    """`x-deserialize-default-on-error`: a value that does not validate becomes `default()`."""

    def validate(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return default()

    return WrapValidator(validate)


def _valid_items(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    if not isinstance(value, list):
        return handler(value)
    kept: list[Any] = []
    for item in value:
        try:
            kept.extend(handler([item]))
        except ValidationError:
            continue
    return kept


valid_items = WrapValidator(_valid_items)
"""`x-deserialize-skip-invalid-items`: list items that do not validate are dropped."""


def _none() -> None:
    return None


lenient = or_default(_none)
"""An optional field that falls back to None when malformed."""
