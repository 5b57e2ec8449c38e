"""pytest fixtures for testing against the informer test API server.

``api_server``: a running ``modern`` ApiServer with millisecond waits. ``api_server_factory``:
``await api_server_factory(personality=..., **kwargs)`` starts more (test defaults merged in);
all are stopped at teardown. Registered through the ``pytest11`` entry point ``informer``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from informer.testing.server import ApiServer

try:  # pytest-asyncio is a test extra: without it the fixtures are simply not async-aware
    import pytest_asyncio

    _async_fixture: Any = pytest_asyncio.fixture
except ImportError:  # pragma: no cover
    _async_fixture = pytest.fixture

__all__ = ["TEST_DEFAULTS", "api_server", "api_server_factory"]

TEST_DEFAULTS: dict[str, Any] = {
    "too_large_wait": 0.05,
    "bookmark_interval": 0.5,
    "bookmark_before_timeout": 0.2,
}
"""ApiServer keyword arguments the fixtures use unless overridden: short waits for tests."""

ApiServerFactory = Callable[..., Awaitable[ApiServer]]


@_async_fixture  # type: ignore[untyped-decorator,unused-ignore]
async def api_server() -> AsyncIterator[ApiServer]:
    """A running ``modern`` ApiServer on an ephemeral loopback port."""
    async with ApiServer("modern", **TEST_DEFAULTS) as server:
        yield server


@_async_fixture  # type: ignore[untyped-decorator,unused-ignore]
async def api_server_factory() -> AsyncIterator[ApiServerFactory]:
    """An async callable taking ApiServer arguments; every server it starts stops at teardown."""
    servers: list[ApiServer] = []

    async def factory(personality: str = "modern", **kwargs: Any) -> ApiServer:
        server = ApiServer(personality, **{**TEST_DEFAULTS, **kwargs})
        await server.start()
        servers.append(server)
        return server

    try:
        yield factory
    finally:
        for server in reversed(servers):
            await server.stop()
