"""Throughput of the test API server: bulk load, initial-state watch, change streams.

Not part of the test suite. Run: ``python benchmarks/server_throughput.py [--objects N]``.
Clients count lines without parsing them, so the numbers measure the server, not a decoder.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer

PATH = "/api/v1/namespaces/bench/configmaps"


def objects(prefix: str, count: int) -> Iterator[dict[str, Any]]:
    for i in range(count):
        yield {
            "metadata": {
                "name": f"{prefix}-{i:06d}",
                "namespace": "bench",
                "labels": {"app": "bench", "shard": str(i % 16)},
            },
            "data": {"key": "x" * 64, "index": str(i)},
        }


async def count_lines(response: aiohttp.ClientResponse, wanted: int) -> int:
    """Read until ``wanted`` newline-terminated lines arrived; returns the count."""
    seen = 0
    async for chunk in response.content.iter_any():
        seen += chunk.count(b"\n")
        if seen >= wanted:
            break
    return seen


async def open_watch(
    http: aiohttp.ClientSession, server: ApiServer, **params: str
) -> aiohttp.ClientResponse:
    response = await http.get(server.url + PATH, params={"watch": "true", **params})
    assert response.status == 200, response.status
    return response


async def main(total: int, watchers: int) -> None:
    async with ApiServer("modern") as server, aiohttp.ClientSession() as http:
        started = time.perf_counter()
        server.bulk_load(CONFIGMAPS, objects("cm", total))
        load = time.perf_counter() - started
        print(f"bulk_load: {total} objects in {load:.2f}s ({total / load:,.0f} objects/s)")

        started = time.perf_counter()
        async with http.get(server.url + PATH) as reply:
            body = await reply.read()
        took = time.perf_counter() - started
        print(f"list: {total} objects, {len(body) / 1e6:.1f} MB in {took:.2f}s")

        started = time.perf_counter()
        response = await open_watch(http, server)
        got = await count_lines(response, total)
        response.close()
        took = time.perf_counter() - started
        print(
            f"watch initial state: {got} ADDED events in {took:.2f}s ({got / took:,.0f} events/s)"
        )

        rv = str(server.revision)
        streams = [await open_watch(http, server, resourceVersion=rv) for _ in range(watchers)]
        await server.wait_for_watchers(watchers)
        started = time.perf_counter()
        readers = [asyncio.create_task(count_lines(s, total)) for s in streams]
        server.bulk_load(CONFIGMAPS, objects("new", total))
        counts = await asyncio.gather(*readers)
        took = time.perf_counter() - started
        delivered = sum(counts)
        print(
            f"change stream: {total} writes to {watchers} watchers, {delivered} events in "
            f"{took:.2f}s ({delivered / took:,.0f} events/s delivered, "
            f"{total / took:,.0f} writes/s)"
        )
        for stream in streams:
            stream.close()

        changes = min(total, 20_000)
        rv = str(server.revision)
        stream = await open_watch(http, server, resourceVersion=rv)
        await server.wait_for_watchers(1)
        reader = asyncio.create_task(count_lines(stream, changes))
        started = time.perf_counter()
        for i in range(changes):
            server.patch(CONFIGMAPS, f"cm-{i:06d}", {"data": {"index": f"p{i}"}}, "bench")
            if i % 500 == 0:
                await asyncio.sleep(0)  # let the stream drain as a real writer would
        await reader
        took = time.perf_counter() - started
        stream.close()
        print(
            f"individual patches: {changes} MODIFIED events in {took:.2f}s "
            f"({changes / took:,.0f} events/s, writes included)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--watchers", type=int, default=4)
    args = parser.parse_args()
    asyncio.run(main(args.objects, args.watchers))
