"""How long a throttled paginated list takes, in real time (issue 18, behaviour 4).

600 ConfigMaps listed in pages of 50 from the test API server, one LIST in four answered 429
with ``Retry-After: 1`` and ``Retry-After: 0`` in turn (the real-server scenario's schedule); the
first watch is answered 410, forcing a relist. Prints the seconds to the initial sync and from the
410 to the relist's end, with the server's request counts, for the default ``BackoffPolicy``. The
Retry-Afters of one list add up to about 2 s: a list that waits what the server says takes about
that; one whose waits grow with every throttle takes many times longer.

    python benchmarks/throttled_list.py [--objects 600] [--page-size 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from informer import CONFIGMAPS, Informer, ReflectorOptions
from informer.testing import ApiServer, Fault, RecordedRequest


async def measure(objects: int, page_size: int) -> dict[str, Any]:
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(objects):
            server.create(
                CONFIGMAPS,
                {"metadata": {"name": f"c{i:04d}", "namespace": "default"}, "data": {"k": "v"}},
            )

        def nth(request: RecordedRequest) -> int:
            lists = [r for r in server.requests if r.verb == "list"]
            return next(i for i, r in enumerate(lists, 1) if r is request)

        for rest, seconds in ((4, 1), (0, 0)):
            server.faults.add(
                Fault(
                    verb="list",
                    predicate=lambda r, rest=rest: nth(r) % 8 == rest,  # type: ignore[misc]
                    times=None,
                    status=429,
                    retry_after=seconds,
                )
            )
        server.faults.add(Fault(verb="watch", status=410))
        api = server.api_client()
        options = ReflectorOptions(page_size=page_size, list_strategy="list")
        try:
            start = time.perf_counter()
            async with Informer(api, CONFIGMAPS, options=options) as inf:
                await inf.wait_for_sync(timeout=600)
                synced = time.perf_counter()
                await server.wait_for_requests(lambda r: r.verb == "watch", count=1, timeout=600)
                expired = time.perf_counter()
                await server.wait_for_requests(lambda r: r.verb == "watch", count=2, timeout=600)
                relisted = time.perf_counter()
                assert len(inf.store) == objects
        finally:
            await api.close()
        lists = [r for r in server.requests if r.verb == "list"]
        return {
            "objects": objects,
            "page_size": page_size,
            "initial_list_s": round(synced - start, 2),
            "relist_s": round(relisted - expired, 2),
            "list_requests": len(lists),
            "throttled": sum(1 for r in lists if r.status == 429),
            "retry_after_total_s": sum(
                r.fault.retry_after or 0 for r in lists if r.status == 429 and r.fault
            ),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=600)
    parser.add_argument("--page-size", type=int, default=50)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.objects, args.page_size))))


if __name__ == "__main__":
    main()
