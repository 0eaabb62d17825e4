"""The deployment files (`deploy/`: Dockerfile, compose.yaml, the nginx template) fit
together and fit `adk-acp serve` (issue 24.7). The image is not built here (no Docker
engine on the test machines); `tests/e2e/test_deploy_proxy.py` runs the same command
and nginx configuration on loopback."""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.deploy_files import (
    COMPOSE,
    DEPLOY,
    DOCKERFILE,
    NGINX_TEMPLATE,
    TEMPLATE_VARIABLE,
    agent_services,
    compose,
    dockerfile_instructions,
    exec_form,
    serve_command,
)

ROOT = DEPLOY.parent


@cache
def serve_help() -> str:
    done = subprocess.run(
        [sys.executable, "-m", "acp_server.cli", "serve", "--help"],
        capture_output=True, text=True, check=True, cwd=ROOT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return done.stdout


def serve_args(argv: list[str]) -> Any:
    """`argv` (after `adk-acp serve`) parsed by serve's own parser: types and choices."""
    from acp_server.cli import _add_agent_options, _flags, _setup_logging
    from acp_server.remote.cli import CliParts, serve_parser

    return serve_parser(CliParts(_add_agent_options, _setup_logging, _flags)).parse_args(argv)


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def nginx_directive(name: str) -> str:
    (value,) = re.findall(rf"^\s*{name}\s+([^;]+);", NGINX_TEMPLATE.read_text(), re.M)
    return value.strip()


def test_every_serve_option_used_exists_and_parses() -> None:
    services = agent_services()
    assert len(services) == 2, "PostgreSQL + two instances + a proxy"
    helped = set(re.findall(r"(--[a-z][a-z-]+)", serve_help()))
    for name, service in services.items():
        argv = serve_command(service)
        assert argv[:2] == ["adk-acp", "serve"], name
        used = {a.split("=")[0] for a in argv[2:] if a.startswith("--")}
        assert used <= helped, f"{name}: not options of adk-acp serve: {used - helped}"
        args = serve_args(argv[2:])
        assert args.host == "0.0.0.0" and args.token_file is not None and not args.insecure_loopback
        assert serve_command(service) == argv  # both instances alike
    first, second = (serve_command(s) for s in services.values())
    assert first == second


def test_the_image_runs_serve_as_a_user_with_a_healthcheck() -> None:
    steps = dockerfile_instructions()
    names = [name for name, _ in steps]
    (base,) = [args for name, args in steps if name == "FROM"]
    assert re.fullmatch(r"python:3\.1[1-9]-slim", base), base
    installs = [args for name, args in steps if name == "RUN" and "pip install" in args]
    assert any('".[postgres]"' in args for args in installs)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r"^postgres = \[", pyproject, re.M), "the extra the image installs"
    # the user: made, then taken before the entry point; never root
    users = [args for name, args in steps if name == "USER"]
    assert users and users[-1] not in ("root", "0")
    assert any("useradd" in a and users[-1] in a for n, a in steps if n == "RUN")
    assert names.index("USER") < names.index("ENTRYPOINT")
    # what it copies exists, and the build's ignore file lets it in
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text()
    for args in (a for n, a in steps if n == "COPY"):
        *sources, _ = args.split()
        for source in sources:
            assert (ROOT / source).exists(), source
            assert f"!{source}" in ignored, source
    entry = exec_form("ENTRYPOINT")
    port = option(entry, "--port")
    assert port is not None and ("EXPOSE", port) in steps
    (health,) = [args for name, args in steps if name == "HEALTHCHECK"]
    assert f"http://127.0.0.1:{port}/healthz" in health
    assert "/healthz" in (ROOT / "acp_server/remote/endpoint.py").read_text()


def test_compose_services_fit_together() -> None:
    spec = compose()
    services = spec["services"]
    agents = agent_services()
    # each agent: the image built from this repository (`test_one_service_builds_the_image`),
    # tokens from the secret the entry point reads
    entry = exec_form("ENTRYPOINT")
    token_file = option(entry, "--token-file")
    assert token_file is not None and token_file.startswith("/run/secrets/")
    db = services["db"]["environment"]
    for name, agent in agents.items():
        targets = {s["target"]: s["source"] for s in agent["secrets"]}
        assert targets[Path(token_file).name] in spec["secrets"], name
        env = agent["environment"]
        store = urlsplit(env["ADK_ACP_STORE"])
        assert store.scheme == "postgresql" and store.password is None  # no password in ps
        assert store.hostname in services and store.port == 5432
        assert store.username == db["POSTGRES_USER"] and store.path == f"/{db['POSTGRES_DB']}"
        assert env["PGPASSWORD"] == db["POSTGRES_PASSWORD"]  # one ${POSTGRES_PASSWORD}
        assert "GEMINI_API_KEY" in env
        # the public name nginx forwards as Host (serve refuses other names: issue 38)
        assert env["ADK_ACP_PUBLIC_HOST"].startswith("${ACP_PUBLIC_HOST:?")
        assert agent["depends_on"]["db"]["condition"] == "service_healthy"
        mounts = dict(v.split(":")[:2] for v in agent["volumes"])
        assert mounts["workspaces"] == "/workspaces", "the same workspaces in every instance"
        for volume in mounts:
            assert volume in spec["volumes"], volume
    homes = [v.split(":")[0] for a in agents.values() for v in a["volumes"] if "/home/adk" in v]
    assert len(set(homes)) == len(agents), "a home of its own per instance"
    for volume in services["db"]["volumes"]:
        assert volume.split(":")[0] in spec["volumes"]
    for secret in spec["secrets"].values():
        assert secret["file"].startswith("./secrets/")


def test_one_service_builds_the_image_and_the_other_runs_it() -> None:
    agents = agent_services()
    builders = {name: a["build"] for name, a in agents.items() if "build" in a}
    assert len(builders) == 1, f"exactly one service builds adk-acp:local: {sorted(builders)}"
    ((builder, build),) = builders.items()
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE
    assert "pull_policy" not in agents[builder]
    for name, agent in agents.items():
        if name == builder:
            continue
        assert agent["pull_policy"] == "never", f"{name}: the local image, never a registry's"
        # `up` with only this service still builds the image (its builder comes along),
        # and its own dependencies are not lost to the merge of `x-agent`
        assert agent["depends_on"][builder]["condition"] == "service_started"
        assert agent["depends_on"]["db"] == agents[builder]["depends_on"]["db"]


def test_the_proxy_fronts_both_instances_as_serve_expects() -> None:
    spec = compose()
    proxy = spec["services"]["proxy"]
    env = {k: str(v) for k, v in proxy["environment"].items()}
    agents = agent_services()
    entry = serve_command(next(iter(agents.values())))
    port = option(entry, "--port")
    upstreams = sorted(v for k, v in env.items() if k.startswith("ACP_UPSTREAM_"))
    assert upstreams == sorted(f"{name}:{port}" for name in agents)
    assert set(proxy["depends_on"]) == set(agents)
    # the template: every ${...} given, and only those the image's envsubst may replace
    used = set(TEMPLATE_VARIABLE.findall(NGINX_TEMPLATE.read_text()))
    assert used <= set(env), used - set(env)
    assert all(re.search(env["NGINX_ENVSUBST_FILTER"], name) for name in used)
    mounts = dict(v.split(":")[:2] for v in proxy["volumes"])
    template = mounts[f"./nginx/{NGINX_TEMPLATE.name}"]
    assert template.startswith("/etc/nginx/templates/") and template.endswith(".template")
    assert mounts["./tls"] == "/etc/nginx/tls"  # the template's relative tls/ paths
    assert nginx_directive("ssl_certificate").startswith("tls/")
    assert nginx_directive("ssl_certificate_key").startswith("tls/")
    published = [str(p).rsplit(":", 1)[-1] for p in proxy["ports"]]
    assert env["ACP_LISTEN"] in published
    # limits as serve's: the body of one message, the header deadline
    args = serve_args(entry[2:])
    assert _bytes(nginx_directive("client_max_body_size")) == args.max_message_bytes
    assert nginx_directive("client_header_timeout") == f"{args.header_timeout:g}s"


def _bytes(size: str) -> int:
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    return int(size[:-1]) * units[size[-1].lower()] if size[-1].isalpha() else int(size)


@pytest.mark.parametrize(
    "directive",
    ["proxy_buffering off", "proxy_http_version 1.1", "proxy_set_header Upgrade $http_upgrade",
     "proxy_read_timeout 3600s", "gzip off"],
)  # fmt: skip
def test_the_proxy_keeps_long_lived_streams(directive: str) -> None:
    (acp,) = re.findall(r"location = /acp \{(.*?)\n    \}", NGINX_TEMPLATE.read_text(), re.S)
    assert f"{directive};" in acp
