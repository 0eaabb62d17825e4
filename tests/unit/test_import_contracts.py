"""The rules of the house that imports can show (ARCHITECTURE.md), checked.

- the import-linter contracts in `pyproject.toml` (`[tool.importlinter]`: the layers,
  the rooms of `runtime/tools`, the session's public face), run by `lint-imports`;
- no room of `runtime/tools` imports `google.adk` (import-linter can forbid an external
  package only whole, and `google` also holds genai);
- no import cycle among the modules of `acp_server` and `runtime`, counting imports
  inside functions and under `TYPE_CHECKING` (grimp, import-linter's graph, sees both);
- JSON-RPC error codes are written only in `acp_server/errors.py`.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("runtime", "acp_server")

KNOWN_CYCLES_BEING_REMOVED: tuple[frozenset[str], ...] = ()
"""Cycles allowed while a restructuring removes them; a listed cycle that is gone fails
the test, so an entry cannot outlive its cycle. Empty: the graph has none."""


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(
        *PACKAGES,
        include_external_packages=True,
        exclude_type_checking_imports=False,
        cache_dir=None,
    )


def test_the_import_linter_contracts_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    assert lint_imports.exists(), "import-linter is missing: pip install -e '.[test]'"
    run = subprocess.run(
        [str(lint_imports), "--no-cache", "--no-logo", "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_no_tools_room_imports_google_adk(graph: grimp.ImportGraph) -> None:
    offenders = [
        f"{module} (l.{detail['line_number']}): {detail['line_contents']}"
        for module in sorted(graph.find_descendants("runtime.tools"))
        for detail in graph.get_import_details(importer=module, imported="google")
        if "google.adk" in detail["line_contents"]
    ]
    assert offenders == [], "ADK belongs in runtime/adk:\n" + "\n".join(offenders)


def strongly_connected(graph: grimp.ImportGraph) -> list[frozenset[str]]:
    """The import cycles: each group of two or more modules that import one another
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    work: list[tuple[str, Iterator[str]]] = []
    groups: list[frozenset[str]] = []

    def enter(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        work.append((module, iter(sorted(graph.find_modules_directly_imported_by(module)))))

    for start in sorted(graph.modules):
        if start not in index:
            enter(start)
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    enter(target)
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                group: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == module:
                        break
                if len(group) > 1:
                    groups.append(frozenset(group))
    return groups


def test_the_cycle_finder_sees_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    package = tmp_path / "cyclic_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclic_pkg import b\n")
    (package / "b.py").write_text("def f() -> None:\n    from cyclic_pkg import c\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import cyclic_pkg.a\n"
    )
    (package / "d.py").write_text("import cyclic_pkg.a\n")
    sys.path.insert(0, str(tmp_path))
    try:
        small = grimp.build_graph("cyclic_pkg", exclude_type_checking_imports=False, cache_dir=None)
    finally:
        sys.path.remove(str(tmp_path))
    cycle = frozenset({"cyclic_pkg.a", "cyclic_pkg.b", "cyclic_pkg.c"})
    assert strongly_connected(small) == [cycle]


def test_the_import_graph_has_no_cycles_but_the_known_ones(graph: grimp.ImportGraph) -> None:
    cycles = [c for c in strongly_connected(graph) if any(m.split(".")[0] in PACKAGES for m in c)]
    new = [sorted(c) for c in cycles if not any(c <= known for known in KNOWN_CYCLES_BEING_REMOVED)]
    assert new == [], f"import cycles (break them; imports inside functions count): {new}"
    gone = [
        sorted(known) for known in KNOWN_CYCLES_BEING_REMOVED if not any(c & known for c in cycles)
    ]
    assert gone == [], f"remove from KNOWN_CYCLES_BEING_REMOVED, no longer cycles: {gone}"


JSON_RPC_CODES = range(-32768, -31999)  # the codes JSON-RPC 2.0 reserves


def error_code_literals(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
        and -node.operand.value in JSON_RPC_CODES
    ]


def test_json_rpc_error_codes_are_written_only_in_errors_py() -> None:
    allowed = ROOT / "acp_server" / "errors.py"
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != allowed
        for line in error_code_literals(path)
    ]
    assert error_code_literals(allowed), "errors.py is where the codes are written"
    assert found == [], f"JSON-RPC error codes outside acp_server/errors.py: {found}"
