"""The ACP registry entry (`registry/adk-acp/`) follows the registry's rules
(agentclientprotocol/registry: FORMAT.md, CONTRIBUTING.md, agent.schema.json),
checked here so it can be submitted as it is."""

from __future__ import annotations

import json
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

from acp_server import __version__

ROOT = Path(__file__).parents[3]
ENTRY = ROOT / "registry" / "adk-acp"
ALLOWED_PAINT = {"currentColor", "none", "inherit"}
TOP_KEYS = {
    "id",
    "name",
    "version",
    "description",
    "repository",
    "authors",
    "license",
    "icon",
    "distribution",
}


def _manifest() -> dict[str, object]:
    data = json.loads((ENTRY / "agent.json").read_text())
    assert isinstance(data, dict)
    return data


def test_required_fields_id_and_version() -> None:
    entry = _manifest()
    assert set(entry) <= TOP_KEYS
    for key in ("id", "name", "version", "description", "distribution"):
        assert entry.get(key), key
    assert entry["id"] == ENTRY.name == "adk-acp"
    assert re.fullmatch(r"[a-z][a-z0-9-]*", str(entry["id"]))
    assert re.fullmatch(r"\d+\.\d+\.\d+", str(entry["version"]))
    assert entry["version"] == __version__  # one source of truth: acp_server.__version__


def test_uvx_distribution_names_this_package_at_this_version() -> None:
    entry = _manifest()
    distribution = entry["distribution"]
    assert isinstance(distribution, dict) and set(distribution) == {"uvx"}
    uvx = distribution["uvx"]
    assert set(uvx) <= {"package", "args", "env"}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert uvx["package"] == f"{project['name']}=={__version__}"
    assert all(isinstance(a, str) for a in uvx.get("args", []))
    env = uvx.get("env", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    # uvx compiles the bytecode as it installs: the first start does not compile it.
    assert env.get("UV_COMPILE_BYTECODE") == "1"
    assert entry["license"] == project["license"]["text"]
    assert entry["repository"] == project["urls"]["Repository"]
    assert str(entry["repository"]).startswith("https://")


def test_icon_is_16x16_square_and_single_colour() -> None:
    assert _manifest()["icon"] == "./icon.svg"
    svg = ET.parse(ENTRY / "icon.svg").getroot()
    assert svg.tag.endswith("svg")
    assert svg.get("width") == svg.get("height") == "16"
    assert svg.get("viewBox") in (None, "0 0 16 16")
    for element in svg.iter():
        for attribute in ("fill", "stroke"):
            value = element.get(attribute)
            assert value is None or value in ALLOWED_PAINT, (element.tag, attribute, value)
        style = element.get("style") or ""
        assert not re.search(r"(fill|stroke)\s*:\s*(?!currentColor|none|inherit)", style)
