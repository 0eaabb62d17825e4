"""Reading a tool's arguments: typed getters that raise ArgError with a message for the model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.errors import ToolError


class ArgError(ToolError):
    """An argument has the wrong type or value."""


def parse_error(parse: Callable[[dict[str, Any]], object], args: dict[str, Any]) -> str | None:
    """A tool's `validate`: the message of the ArgError `parse(args)` raises, else None."""
    try:
        parse(args)
    except ArgError as exc:
        return str(exc)
    return None


def str_arg(
    args: dict[str, Any], name: str, *, required: bool = False, default: str | None = None
) -> str | None:
    value = args.get(name)
    if value is None:
        if required:
            raise ArgError(f"The '{name}' parameter is required.")
        return default
    if not isinstance(value, str):
        raise ArgError(f"The '{name}' parameter must be a string.")
    return value


def required_str(args: dict[str, Any], name: str, *, allow_empty: bool = False) -> str:
    value = str_arg(args, name, required=True)
    assert value is not None
    if not allow_empty and not value.strip():
        raise ArgError(f"The '{name}' parameter must not be empty.")
    return value


def bool_arg(args: dict[str, Any], name: str, default: bool) -> bool:
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ArgError(f"The '{name}' parameter must be a boolean.")
    return value


def int_arg(
    args: dict[str, Any], name: str, *, default: int | None = None, minimum: int | None = None
) -> int | None:
    """An integer; JSON numbers such as 10.0 are accepted."""
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise ArgError(f"The '{name}' parameter must be an integer.")
    number = int(value)
    if minimum is not None and number < minimum:
        raise ArgError(f"The '{name}' parameter must be at least {minimum}.")
    return number


def str_list_arg(args: dict[str, Any], name: str, *, required: bool = False) -> list[str]:
    value = args.get(name)
    if value is None:
        if required:
            raise ArgError(f"The '{name}' parameter is required.")
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ArgError(f"The '{name}' parameter must be a list of strings.")
    return list(value)
