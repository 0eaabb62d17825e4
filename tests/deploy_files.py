"""The deployment files of `deploy/` read as the tests need them: the compose file,
the Dockerfile's entry command, and the nginx template rendered with addresses
(`tests/unit/test_deploy_files.py` checks how they fit together;
`tests/e2e/test_deploy_proxy.py` runs the same command and configuration on loopback).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
DOCKERFILE = DEPLOY / "Dockerfile"
NGINX_TEMPLATE = DEPLOY / "nginx" / "adk-acp.conf.template"
TEMPLATE_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    return [(each.split(None, 1)[0].upper(), each.split(None, 1)[1].strip()) for each in logical]


def exec_form(instruction: str) -> list[str]:
    """The JSON (exec) form of a Dockerfile instruction, e.g. ENTRYPOINT."""
    (arguments,) = [args for name, args in dockerfile_instructions() if name == instruction]
    parsed = json.loads(arguments)
    assert isinstance(parsed, list) and all(isinstance(a, str) for a in parsed), arguments
    return parsed


def agent_services() -> dict[str, dict[str, Any]]:
    """The compose services that run the image's `adk-acp serve`."""
    services = compose()["services"]
    return {name: s for name, s in services.items() if s.get("image") == "adk-acp:local"}


def serve_command(service: dict[str, Any]) -> list[str]:
    """What an agent container runs: the image's entry point and the service's command."""
    return [*exec_form("ENTRYPOINT"), *[str(a) for a in service.get("command", [])]]


def render_nginx(values: dict[str, str]) -> str:
    """The template with its `${ACP_...}` replaced, as nginx's image does (envsubst);
    nginx's own `$variables` stay."""
    text = NGINX_TEMPLATE.read_text(encoding="utf-8")
    missing = set(TEMPLATE_VARIABLE.findall(text)) - set(values)
    assert not missing, f"no value for {sorted(missing)}"
    return TEMPLATE_VARIABLE.sub(lambda m: values[m.group(1)], text)
