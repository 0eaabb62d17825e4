"""Two `adk-acp serve` instances on loopback sharing one real PostgreSQL database (issue
24.5/24.6): the `ServePair` a test module starts once (`serve_pair` fixture, module
scope and module event loop, beside its own fake Gemini server).

Both read the same token file (`TOKEN` for everything, `LIMITED` for `limited_root`
only), have a short lease (`LEASE_S`: a killed instance's sessions are taken over
within seconds) and a short `--session-idle-timeout` (`IDLE_S`). A test may kill
an instance (`kill`) and start it again (`restart`).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from tests.e2e.remote_client import TOKEN, Served, start_serve
from tests.fakes.gemini_server import FakeGeminiServer

if TYPE_CHECKING:
    from tests.pg_cluster import Cluster

LIMITED = "serve-pair-limited-token-0123456789"
LEASE_S = 6.0
"""Renewed every 2 s: long enough that a busy machine's pauses do not lose it."""
IDLE_S = 2.0


@dataclass
class ServePair:
    """Two instances (`a`, `b` = `served[0]`, `served[1]`) on one database."""

    root: Path
    url: str
    fake: FakeGeminiServer
    served: list[Served] = field(default_factory=list)

    @property
    def a(self) -> Served:
        return self.served[0]

    @property
    def b(self) -> Served:
        return self.served[1]

    @property
    def workspace(self) -> Path:
        return (self.root / "ws").resolve()

    @property
    def limited_root(self) -> Path:
        return (self.root / "limited").resolve()

    async def start(self, index: int) -> Served:
        home = self.root / f"home{index}"
        tokens = self.root / "tokens"
        return await start_serve(
            home,
            self.fake.base_url,
            "--store", self.url,
            "--token-file", str(tokens),
            "--permission-timeout", "60",
            "--session-idle-timeout", str(IDLE_S),
            ADK_ACP_LEASE_SECONDS=str(LEASE_S),
        )  # fmt: skip

    def kill(self, index: int) -> None:
        """kill -9: no close, no lease let go."""
        self.served[index].process.send_signal(signal.SIGKILL)

    async def restart(self, index: int) -> None:
        await self.served[index].process.wait()
        self.served[index] = await self.start(index)

    async def fetch(self, sql: str, *args: object) -> list[Any]:
        """Rows of a query on the shared database."""
        import asyncpg

        conn = await asyncpg.connect(self.url)
        try:
            return list(await conn.fetch(sql, *args))
        finally:
            await conn.close()

    async def lease_holder(self, session_id: str) -> str | None:
        rows = await self.fetch("SELECT holder FROM adk_leases WHERE session_id = $1", session_id)
        return str(rows[0]["holder"]) if rows else None

    async def record(self, session_id: str) -> list[str]:
        """The session's record lines in the database, in order."""
        sql = "SELECT line::text FROM adk_records WHERE session_id = $1 ORDER BY seq"
        return [row["line"] for row in await self.fetch(sql, session_id)]

    async def wait_for_record(self, session_id: str, text: str) -> list[str]:
        """The record once a line holds `text` (written by the instance driving it)."""

        async def watch() -> list[str]:
            while True:
                lines = await self.record(session_id)
                if any(text in line for line in lines):
                    return lines
                await asyncio.sleep(0.05)

        return await asyncio.wait_for(watch(), 60)

    def holder_is(self, served: Served) -> Callable[[str | None], bool]:
        return lambda holder: holder is not None and f"pid {served.process.pid} " in holder


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def serve_pair(
    postgres_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[ServePair]:
    root = tmp_path_factory.mktemp("serve-pair")
    (root / "ws").mkdir()
    (root / "limited").mkdir()
    (root / "tokens").write_text(f"{TOKEN}\n{LIMITED} {(root / 'limited').resolve()}\n")
    name = postgres_cluster.create_database()
    async with FakeGeminiServer() as fake:
        pair = ServePair(root, postgres_cluster.url(name), fake)
        try:
            pair.served = [await pair.start(0), await pair.start(1)]
            yield pair
        finally:
            codes = [await s.stop() for s in pair.served]
            postgres_cluster.drop_database(name)
        assert codes == [0, 0], [s.log()[-3000:] for s in pair.served]
