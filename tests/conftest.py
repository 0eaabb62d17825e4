"""Shared fixtures: the fake Gemini server (in-loop and threaded) and `make_agent`.

Heavy modules are imported inside the fixtures, so collecting unrelated tests
stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests import schedule, worker_children

# No test agent uses or starts the warm per-user server (acp_server/warm/), so no test
# leaves a daemon behind; tests/e2e/test_warm_server.py turns it on with its own folder.
os.environ["ADK_ACP_NO_WARM"] = "1"
# What a test process starts ends with it, even if it dies without its teardown.
worker_children.install()

if TYPE_CHECKING:
    from tests.e2e.acp_client import AcpTestClient
    from tests.fakes.gemini_server import FakeGeminiServer
    from tests.pg_cluster import Cluster

    MakeAgent = Callable[..., Awaitable[AcpTestClient]]


@pytest.fixture
async def fake_gemini() -> AsyncIterator[FakeGeminiServer]:
    """A fake Gemini server in the test's event loop; add replies with `.add(...)`."""
    from tests.fakes.gemini_server import FakeGeminiServer

    async with FakeGeminiServer() as server:
        yield server


@pytest.fixture
def fake_gemini_thread() -> Iterator[FakeGeminiServer]:
    """A fake Gemini server on its own thread: for subprocess agents and sync tests."""
    from tests.fakes.gemini_server import FakeGeminiServer

    with FakeGeminiServer() as server:
        yield server


@pytest.fixture
async def make_agent() -> AsyncIterator[MakeAgent]:
    """`await make_agent(argv, env=None, cwd=None, **client_options)` starts an agent
    and returns its `AcpTestClient`. At teardown every client is closed: the agent
    must exit on stdin EOF with code 0 and must not have broken the protocol (a test
    that expects otherwise calls `close(...)` itself first)."""
    from tests.e2e.acp_client import AcpTestClient

    clients: list[AcpTestClient] = []

    async def factory(
        argv: list[str], env: dict[str, str | None] | None = None, **options: Any
    ) -> AcpTestClient:
        client = await AcpTestClient.spawn(argv, env=env, **options)
        clients.append(client)
        return client

    yield factory
    failures: list[AssertionError] = []
    for client in clients:
        try:
            await client.close()
        except AssertionError as failure:
            failures.append(failure)
    if failures:
        raise failures[0]


# ---------------------------------------------------------------- PostgreSQL


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Install PostgreSQL (once, `tests/pg_cluster.py`) before any test that needs it
    runs, outside the tests' timeouts; if it cannot be, those tests fail saying why.
    The longest files go first (`tests/schedule.py`)."""
    schedule.longest_files_first(items)
    if any("postgres_cluster" in getattr(item, "fixturenames", ()) for item in items):
        from tests.pg_cluster import PostgresUnavailable, ensure_installed

        try:
            ensure_installed()
        except PostgresUnavailable:
            pass  # `postgres_cluster` raises it again, for each test that needs it


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> None:
    """`--dist loadfile` hands the files out in the collection's order (longest first,
    `tests/schedule.py`) rather than sorted by their number of tests."""
    config.option.loadscopereorder = False


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """A throwaway PostgreSQL cluster on loopback, shared by this test process."""
    from tests.pg_cluster import Cluster, ensure_installed

    cluster = Cluster.start(ensure_installed())
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(postgres_cluster: Cluster) -> Iterator[str]:
    """A fresh, empty database of the shared cluster: its `postgresql://` URL."""
    name = postgres_cluster.create_database()
    yield postgres_cluster.url(name)
    postgres_cluster.drop_database(name)
