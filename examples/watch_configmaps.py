"""Watch ConfigMaps with an informer and read your own writes from the cache.

python examples/watch_configmaps.py               # against the embedded test API server
python examples/watch_configmaps.py --cluster     # against the cluster of your kubeconfig
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from informer import (
    CONFIGMAPS,
    DROP_MANAGED_FIELDS,
    Informer,
    KubeObject,
    ReflectorOptions,
    Tombstone,
    connect,
)
from informer.testing import ApiServer


@contextlib.asynccontextmanager
async def api_client(cluster: bool) -> AsyncIterator[tuple[Any, ApiServer | None]]:
    if cluster:
        api = await connect()
        try:
            yield api, None
        finally:
            await api.close()
        return
    async with ApiServer(too_large_wait=0.05) as server:
        for i in range(3):
            server.create(CONFIGMAPS, {"metadata": {"name": f"cm-{i}", "namespace": "default"}})
        api = server.api_client()
        try:
            yield api, server
        finally:
            await api.close()


async def main(namespace: str, cluster: bool) -> None:
    async with api_client(cluster) as (api, server):
        # drop metadata.managedFields on the bytes: a smaller cache, faster than a dict transform
        options = ReflectorOptions(transform=DROP_MANAGED_FIELDS)
        inf = Informer(api, CONFIGMAPS, namespace=namespace, options=options)

        def on_add(obj: KubeObject, is_initial: bool) -> None:
            print(f"{'listed' if is_initial else 'added '} {obj.key} rv={obj.resource_version}")

        def on_update(old: KubeObject, new: KubeObject) -> None:
            print(f"update {new.key} rv={old.resource_version} -> {new.resource_version}")

        def on_delete(obj: KubeObject | Tombstone) -> None:
            print(f"delete {obj.key}")

        inf.add_handler(on_add, on_update, on_delete)
        async with inf:
            await inf.wait_for_sync(timeout=30)
            print(f"synced: {len(inf.store)} objects at rv {inf.store.resource_version}")
            if server is None:
                await asyncio.Event().wait()  # until Ctrl-C
                return
            written = server.patch(CONFIGMAPS, "cm-1", {"data": {"k": "v"}}, namespace="default")
            cached = await inf.wait_for_write(written, timeout=10)  # read your own write
            assert cached is not None
            print(f"cache holds our write: {dict(cached['data'])} at rv {cached.resource_version}")
            print(inf.statistics())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--cluster", action="store_true", help="use kubeconfig / in-cluster")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(args.namespace, args.cluster))
