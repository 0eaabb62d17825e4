"""A throwaway PostgreSQL cluster for the tests (the `postgres_cluster` and `pg_url`
fixtures in `tests/conftest.py`).

Debian's server binaries (`/usr/lib/postgresql/<version>/bin`) are installed with
apt-get when missing and this runs as root (CI: a clean machine, no stdin), under a
file lock so parallel workers install once; without them and without root, the tests
fail with what to install. `initdb` refuses to run as root, so as root the cluster
belongs to the `postgres` user (made by the package) and its commands run through
`runuser`. The cluster lives in a temporary folder, listens on 127.0.0.1 on a free
port (and a socket in its folder), trusts local connections, and is stopped and
removed at the end; each test gets a database of its own.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests import worker_children
from tests.debian_packages import PackageUnavailable, ensure_package

PG_ROOT = Path("/usr/lib/postgresql")
SUPERUSER = "postgres"
PostgresUnavailable = PackageUnavailable
"""Raised by `ensure_installed` when the server cannot be installed here."""


def bin_dir() -> Path | None:
    """The newest installed server's binaries, or None."""
    found = sorted(
        (p.parent for p in PG_ROOT.glob("*/bin/initdb")),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    return found[-1] if found else None


def ensure_installed() -> Path:
    """The server binaries, installed with apt-get first if needed (root only)."""
    return ensure_package("postgresql", bin_dir, "Debian's PostgreSQL server (initdb, pg_ctl)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Cluster:
    """One running throwaway cluster (see the module docstring)."""

    bin: Path
    folder: Path
    port: int
    owner: str | None  # the user the server runs as when we are root

    @classmethod
    def start(cls, bin: Path) -> Cluster:
        owner = SUPERUSER if os.geteuid() == 0 else None
        # as root, in /tmp itself: the server's user must reach it ($TMPDIR may not be)
        folder = Path(tempfile.mkdtemp(prefix="adk-acp-pg-", dir="/tmp" if owner else None))
        if owner is not None:
            account = pwd.getpwnam(owner)
            os.chown(folder, account.pw_uid, account.pw_gid)
        cluster = cls(bin, folder, _free_port(), owner)
        cluster._run(
            "initdb",
            "-D",
            str(cluster.data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        cluster._run(
            "pg_ctl", "-D", str(cluster.data), "-l", str(folder / "server.log"), "-w", "-t", "120",
            "-o", f"-c listen_addresses=127.0.0.1 -p {cluster.port} -k {folder} -c fsync=off",
            "start",
        )  # fmt: skip
        # if this test process dies without its teardown, the detached server goes too
        stop = cluster._command("pg_ctl", "-D", str(cluster.data), "-m", "immediate", "stop")
        gone = f"{shlex.join(stop)}; rm -rf {shlex.quote(str(folder))}"
        worker_children.on_death(str(folder), ["sh", "-c", gone])
        return cluster

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def _command(self, tool: str, *args: str) -> list[str]:
        command = [str(self.bin / tool), *args]
        if self.owner is not None:
            command = ["runuser", "-u", self.owner, "--", *command]
        return command

    def _run(self, tool: str, *args: str) -> str:
        command = self._command(tool, *args)
        done = subprocess.run(
            command, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=self.folder
        )
        if done.returncode != 0:
            log = self.folder / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{tool} failed: {done.stdout}{done.stderr}{tail}")
        return done.stdout

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER, name)
        return name

    def drop_database(self, name: str) -> None:
        self._run(
            "dropdb", "--force", "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER, name
        )

    def psql(self, database: str, sql: str) -> str:
        """One statement's rows, unaligned, `|`-separated."""
        return self._run(
            "psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER, "-d", database,
            "-At", "-v", "ON_ERROR_STOP=1", "-c", sql,
        )  # fmt: skip

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            worker_children.cancel_on_death(str(self.folder))
            shutil.rmtree(self.folder, ignore_errors=True)
