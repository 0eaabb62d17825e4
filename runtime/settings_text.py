"""A settings.json file read as Gemini CLI reads it (standard library only: the early
`session/new` path uses it through `runtime.config` before the engine has loaded).

- comments: `// …` to the end of the line and `/* … */`, outside strings;
- `$VAR` and `${VAR}` in every string value are replaced by the environment's value
  (a variable that is not set is left as written), as Gemini CLI's settings loader
  does for the whole file (MCP `command`/`args`/`env`/`url`/`httpUrl`/`headers`, hook
  commands, …);
- a known field of the wrong type (a hook `timeout` of `"5s"`, `args` that is not a
  list, …) is dropped with a warning naming the file and the field, so whoever reads it
  falls back to its default; the session never fails for it. Unknown fields are kept
  as they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_ENV_REFERENCE = re.compile(r"\$(?:(\w+)|\{([^}]+)\})")


def strip_json_comments(text: str) -> str:
    """`text` without `//` and `/* */` comments (strings untouched; a comment becomes
    a space, so line and column numbers of later errors stay close)."""
    out: list[str] = []
    in_string = False
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            comment = text[i : n if end < 0 else end + 2]
            out.append("\n" * comment.count("\n") or " ")
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def expand_env(value: Any, env: Mapping[str, str]) -> Any:
    """`value` with `$VAR` / `${VAR}` replaced in every string it holds (dict keys kept)."""
    if isinstance(value, str):
        if "$" not in value:
            return value

        def replace(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(2)
            found = env.get(name)
            return found if isinstance(found, str) else match.group(0)

        return _ENV_REFERENCE.sub(replace, value)
    if isinstance(value, list):
        return [expand_env(item, env) for item in value]
    if isinstance(value, dict):
        return {key: expand_env(item, env) for key, item in value.items()}
    return value


# ------------------------------------------------------------------ types of known fields

_NUMBER = "number"
_STRING = "string"
_BOOL = "boolean"
_STRINGS = ("list", _STRING)  # a list of strings
_STRING_MAP = ("map", _STRING)  # an object whose values are strings

_HOOK = {
    "type": _STRING,
    "command": _STRING,
    "name": _STRING,
    "timeout": _NUMBER,
    "env": _STRING_MAP,
}
_HOOK_GROUP = {"matcher": _STRING, "sequential": _BOOL, "hooks": ("list", _HOOK)}
_MCP_SERVER = {
    "command": _STRING,
    "args": _STRINGS,
    "env": _STRING_MAP,
    "cwd": _STRING,
    "url": _STRING,
    "httpUrl": _STRING,
    "headers": _STRING_MAP,
    "timeout": _NUMBER,
    "trust": _BOOL,
    "includeTools": _STRINGS,
    "excludeTools": _STRINGS,
}
_MODEL_PROVIDER = {
    "baseUrl": _STRING,
    "apiKeyEnv": _STRING,
    "contextWindow": _NUMBER,
    "models": _STRINGS,
}
SETTINGS_TYPES: dict[str, Any] = {
    "model": {
        "name": _STRING,
        "maxSessionTurns": _NUMBER,
        "maxTokensPerPrompt": _NUMBER,
        "maxTimeSeconds": _NUMBER,
        "compressionThreshold": _NUMBER,
        "fallbackModels": _STRINGS,
    },
    "modelProviders": ("map", _MODEL_PROVIDER),
    "general": {"defaultApprovalMode": _STRING, "sessionsDir": _STRING},
    "chatCompression": {"contextPercentageThreshold": _NUMBER},
    "security": {"environmentVariableAllowlist": _STRINGS},
    "hooksConfig": {"enabled": _BOOL, "disabled": _STRINGS},
    "hooks": ("map", ("list", _HOOK_GROUP)),
    "mcpServers": ("map", _MCP_SERVER),
}
"""The fields the agent reads, by type: a dict is an object with those keys, `("list",
T)` a list of T, `("map", T)` an object whose every value is a T."""


def _type_name(expected: Any) -> str:
    if isinstance(expected, dict):
        return "an object"
    if isinstance(expected, tuple):
        return "a list" if expected[0] == "list" else "an object"
    return {"number": "a number", "string": "a string", "boolean": "true or false"}[expected]


def _fits(value: Any, expected: Any) -> bool:
    if isinstance(expected, dict) or (isinstance(expected, tuple) and expected[0] == "map"):
        return isinstance(value, dict)
    if isinstance(expected, tuple):
        return isinstance(value, list)
    if expected == _NUMBER:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected == _STRING:
        return isinstance(value, str)
    return isinstance(value, bool)


def _shown(value: Any) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "…"


def _checked(value: Any, expected: Any, path: str, problems: list[str]) -> Any:
    """`value` (which fits `expected`) with its wrongly typed parts dropped."""
    if isinstance(expected, dict):
        out = {}
        for key, item in value.items():
            inner = expected.get(key)
            if inner is None:
                out[key] = item
            elif _fits(item, inner):
                out[key] = _checked(item, inner, f"{path}.{key}" if path else key, problems)
            else:
                where = f"{path}.{key}" if path else key
                problems.append(f"{where} should be {_type_name(inner)}, not {_shown(item)}")
        return out
    if isinstance(expected, tuple):
        kind, inner = expected
        items = value.items() if kind == "map" else enumerate(value)
        kept: dict[Any, Any] = {}
        for key, item in items:
            where = f"{path}.{key}" if kind == "map" else f"{path}[{key}]"
            if _fits(item, inner):
                kept[key] = _checked(item, inner, where, problems)
            else:
                problems.append(f"{where} should be {_type_name(inner)}, not {_shown(item)}")
        return kept if kind == "map" else list(kept.values())
    return value


def check_types(settings: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`settings` without the known fields of the wrong type, and one line per field
    dropped (`hooks.BeforeTool[0].hooks[0].timeout should be a number, not "5s"`)."""
    problems: list[str] = []
    cleaned = _checked(settings, SETTINGS_TYPES, "", problems)
    return cleaned, problems
