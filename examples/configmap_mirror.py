"""An operator: ConfigMaps labelled ``mirror=true`` in any namespace are copied into namespace
``mirror`` and kept in sync; mirrors whose source vanished (or lost the label) are deleted.

Informers + a Controller (read-your-own-writes) + the writes Client + leader election: run
several replicas, one reconciles, the others keep warm caches and take over.

python examples/configmap_mirror.py             # on the embedded test API server, with a demo
python examples/configmap_mirror.py --cluster   # on the cluster of your kubeconfig (Ctrl-C)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from typing import Any

from informer import (
    CONFIGMAPS,
    NAMESPACES,
    AlreadyExists,
    Client,
    Controller,
    Informer,
    KubeObject,
    LeaderElector,
    NotFound,
    ReflectorOptions,
    Request,
    connect,
)

MIRROR_NS = "mirror"
FROM_NS, FROM_NAME = "mirror.example.com/namespace", "mirror.example.com/name"


def source_of(mirror: KubeObject) -> list[Request]:
    """The source a mirror was copied from (its labels say)."""
    labels = mirror.labels
    return [Request(labels[FROM_NAME], labels[FROM_NS])] if FROM_NAME in labels else []


async def operator(
    api: Any,
    *,
    identity: str | None = None,
    options: ReflectorOptions | None = None,
    **election: float,
) -> None:
    """Run one replica until cancelled (``election``: LeaderElector timings)."""
    client = Client(api, field_manager="configmap-mirror")
    sources = Informer(api, CONFIGMAPS, label_selector="mirror=true", options=options)
    mirrors = Informer(
        api, CONFIGMAPS, namespace=MIRROR_NS, label_selector=FROM_NAME, options=options
    )

    async def reconcile(request: Request) -> None:
        name = f"{request.namespace}.{request.name}"
        source = sources.store.get(request.name, request.namespace)
        mirror = mirrors.store.get(name, MIRROR_NS)
        if source is None or request.namespace == MIRROR_NS:
            if mirror is not None:
                with contextlib.suppress(NotFound):
                    await client.delete(CONFIGMAPS, name, MIRROR_NS, uid=mirror.uid)
            return
        data = {k: source.get(k) for k in ("data", "binaryData") if source.get(k)}
        if mirror is None:
            labels = {FROM_NS: request.namespace, FROM_NAME: request.name}
            meta = {"name": name, "namespace": MIRROR_NS, "labels": labels}
            await client.create(CONFIGMAPS, {"metadata": meta, **data})
        elif any(mirror.get(k) != data.get(k) for k in ("data", "binaryData")):
            body = {k: v for k, v in mirror.to_dict().items() if k not in ("data", "binaryData")}
            await client.replace(CONFIGMAPS, {**body, **data})  # conditional on its RV

    controller = Controller(
        reconcile,
        for_=sources,
        watches=[(mirrors, source_of)],
        client=client,  # read-your-own-writes: never reconcile on a cache older than our writes
        workers=4,
        shutdown_timeout=1.0,  # stop well within the lease when leadership is lost
    )
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACES, {"metadata": {"name": MIRROR_NS}})
    elector = LeaderElector(client, "configmap-mirror", "default", identity=identity, **election)
    async with sources, mirrors:  # warm standby: caches sync whether or not we lead
        await elector.run(on_started_leading=controller.run)


def mirrored(server: Any) -> dict[str, Any]:
    """The mirrors on the test server: name -> data."""
    return {
        m["metadata"]["name"]: m.get("data") for m in server.list_objects(CONFIGMAPS, MIRROR_NS)
    }


async def demo() -> None:
    """On the embedded test server: two replicas, a few changes, the mirrors printed."""
    from informer.testing import ApiServer

    async with ApiServer() as server:
        for ns in ("team-a", "team-b"):
            server.create(NAMESPACES, {"metadata": {"name": ns}})
        api = server.api_client()
        replicas = [asyncio.create_task(operator(api, identity=f"replica-{i}")) for i in (1, 2)]
        try:
            client = Client(api)
            for i, ns in enumerate(("team-a", "team-b", "team-a")):
                meta = {"name": f"settings-{i}", "namespace": ns, "labels": {"mirror": "true"}}
                await client.create(CONFIGMAPS, {"metadata": meta, "data": {"v": str(i)}})
            await client.patch(CONFIGMAPS, "settings-0", {"data": {"v": "2"}}, namespace="team-a")
            await client.delete(CONFIGMAPS, "settings-1", "team-b")
            want = {"team-a.settings-0": {"v": "2"}, "team-a.settings-2": {"v": "2"}}
            # until the mirrors are as wanted (checked after every request the server answers)
            await server.wait_for_requests(lambda _: mirrored(server) == want, timeout=30)
            for name, data in mirrored(server).items():
                print(f"{MIRROR_NS}/{name}: {data}")
        finally:
            for task in replicas:
                task.cancel()
            await asyncio.gather(*replicas, return_exceptions=True)
            await api.close()


async def main(cluster: bool) -> None:
    if not cluster:
        await demo()
        return
    api = await connect()
    try:
        await operator(api)
    finally:
        await api.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cluster", action="store_true", help="use kubeconfig / in-cluster")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(parser.parse_args().cluster))
