"""Shared fixtures: the fake Gemini server (in-loop and threaded).

Heavy modules are imported inside the fixtures, so collecting unrelated tests
stays cheap. The end-to-end client fixture `make_agent` lives in `tests/e2e`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.fakes.gemini_server import FakeGeminiServer


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
