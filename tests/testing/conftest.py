"""Fixtures for the test API server's own tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from .server_helpers import Client


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    """A raw aiohttp client (never our reflector)."""
    async with aiohttp.ClientSession() as http:
        yield Client(http)
