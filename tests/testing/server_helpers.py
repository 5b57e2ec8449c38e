"""Helpers for the test API server's own tests: a raw aiohttp client, never our reflector."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp

from informer.testing import ApiServer

READ_GUARD = 5.0  # seconds: a hung read fails the test instead of hanging it (not a timing check)


def cm(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    """A ConfigMap body."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": name}}


CM_PATH = "/api/v1/namespaces/default/configmaps"


@dataclass
class Reply:
    status: int
    body: Any
    text: str
    headers: Any


class Watch:
    """One open watch stream: read events one by one, or to the end."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response
        self.status = response.status

    async def line(self) -> bytes:
        async with asyncio.timeout(READ_GUARD):
            return await self.response.content.readline()

    async def next(self) -> dict[str, Any] | None:
        raw = await self.line()
        return json.loads(raw) if raw else None

    async def take(self, count: int) -> list[dict[str, Any]]:
        events = []
        for _ in range(count):
            event = await self.next()
            assert event is not None, f"stream ended after {events}"
            events.append(event)
        return events

    async def rest(self) -> list[dict[str, Any]]:
        events = []
        while (event := await self.next()) is not None:
            events.append(event)
        return events


class Client:
    """Raw HTTP against an ApiServer."""

    def __init__(self, http: aiohttp.ClientSession) -> None:
        self.http = http

    async def request(
        self,
        server: ApiServer,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        **params: Any,
    ) -> Reply:
        data = json.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else {}
        query = {k: str(v) for k, v in params.items()}
        async with (
            asyncio.timeout(READ_GUARD),
            self.http.request(
                method, server.url + path, data=data, params=query, headers=headers
            ) as response,
        ):
            text = await response.text()
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            return Reply(response.status, parsed, text, response.headers)

    async def get(self, server: ApiServer, path: str, **params: Any) -> Reply:
        return await self.request(server, "GET", path, **params)

    @asynccontextmanager
    async def watch(self, server: ApiServer, path: str, **params: Any) -> AsyncIterator[Watch]:
        query = {"watch": "true", **{k: str(v) for k, v in params.items()}}
        async with asyncio.timeout(READ_GUARD):
            response = await self.http.get(server.url + path, params=query)
        try:
            yield Watch(response)
        finally:
            response.close()


def names(body: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]
