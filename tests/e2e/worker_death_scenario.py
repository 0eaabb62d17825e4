"""Run by `test_worker_death.py` as a pytest process of its own (its name keeps it out of
the suite's collection): starts what a test worker starts — an agent over stdio, a
`serve` instance, the shared PostgreSQL cluster — writes their pids, and waits to be
killed."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tests.e2e.remote_client import start_serve
from tests.e2e.spine import AGENT, MakeAgent, agent_env, dirs
from tests.pg_cluster import Cluster


async def test_started_children_then_wait_to_be_killed(
    make_agent: MakeAgent, postgres_cluster: Cluster, tmp_path: Path
) -> None:
    client = await make_agent(AGENT, env=agent_env(dirs(tmp_path)))
    await client.initialize()
    served = await start_serve(tmp_path / "serve", None)
    postmaster = (postgres_cluster.data / "postmaster.pid").read_text().split()[0]
    assert client.process is not None
    pids = [client.process.pid, served.process.pid, int(postmaster)]
    report = Path(os.environ["WORKER_DEATH_REPORT"])
    report.write_text(f"{' '.join(map(str, pids))}\n{postgres_cluster.folder}\n")
    await asyncio.sleep(600)  # until the outer test kills this process
