"""An operator: ConfigMaps labelled ``mirror=true`` in any namespace are copied into namespace
``mirror`` and kept in sync; mirrors whose source vanished (or lost the label) are deleted.

A Manager runs two informers, a Controller (read-your-own-writes) and leader election: run
several replicas, one reconciles, the others keep warm caches and take over. It serves
``/healthz``, ``/readyz`` and ``/metrics`` on one port and stops gracefully on SIGTERM (in-flight
reconciles finish, the Lease is released).

python examples/configmap_mirror.py             # on the embedded test API server, with a demo
python examples/configmap_mirror.py --cluster   # on the cluster of your kubeconfig (Ctrl-C)
python examples/configmap_mirror.py --cluster --metrics-port 8080   # probes and metrics there
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from typing import Any

from informer import (
    CONFIGMAPS,
    NAMESPACES,
    Client,
    KubeObject,
    LeaderElector,
    Manager,
    NotFound,
    ReflectorOptions,
    Request,
    connect,
)
from informer.log_config import configure_logging
from informer.manager import pod_namespace

MIRROR_NS = "mirror"
FROM_NS, FROM_NAME = "mirror.example.com/namespace", "mirror.example.com/name"


def source_of(mirror: KubeObject) -> list[Request]:
    """The source a mirror was copied from (its labels say)."""
    labels = mirror.labels
    return [Request(labels[FROM_NAME], labels[FROM_NS])] if FROM_NAME in labels else []


def operator(
    api: Any,
    *,
    identity: str | None = None,
    options: ReflectorOptions | None = None,
    port: int | None = None,
    close_client: bool = True,
    **election: float,
) -> Manager:
    """One replica, ready to ``run()`` (``election``: LeaderElector timings; ``port``: where to
    serve the probes and metrics, None for nowhere)."""
    client = Client(api, field_manager="configmap-mirror")
    elector = LeaderElector(
        client, "configmap-mirror", pod_namespace(), identity=identity, **election
    )
    manager = Manager(
        api,
        client=client,
        leader_election=elector,
        options=options,
        port=port,
        close_client=close_client,
    )
    sources = manager.informer(CONFIGMAPS, label_selector="mirror=true")
    mirrors = manager.informer(CONFIGMAPS, namespace=MIRROR_NS, label_selector=FROM_NAME)

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

    manager.controller(  # reads its own writes: never reconciles on a cache older than them
        reconcile,
        for_=sources,
        watches=[(mirrors, source_of)],
        workers=4,
        shutdown_timeout=1.0,  # stop well within the lease when leadership is lost
    )
    return manager


def mirrored(server: Any) -> dict[str, Any]:
    """The mirrors on the test server: name -> data."""
    return {
        m["metadata"]["name"]: m.get("data") for m in server.list_objects(CONFIGMAPS, MIRROR_NS)
    }


async def demo() -> None:
    """On the embedded test server: two replicas, a few changes, the mirrors printed."""
    from informer.testing import ApiServer

    async with ApiServer() as server:
        for ns in ("team-a", "team-b", MIRROR_NS):
            server.create(NAMESPACES, {"metadata": {"name": ns}})
        api = server.api_client()
        managers = [operator(api, identity=f"replica-{i}", close_client=False) for i in (1, 2)]
        replicas = [asyncio.create_task(m.run(handle_signals=False)) for m in managers]
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


async def main(cluster: bool, port: int) -> None:
    if not cluster:
        await demo()
        return
    configure_logging("info")
    # Until SIGTERM or SIGINT (a second one exits at once); the namespace "mirror" must exist.
    await operator(await connect(), port=port).run()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cluster", action="store_true", help="use kubeconfig / in-cluster")
    parser.add_argument(
        "--metrics-port", type=int, default=8080, help="/healthz, /readyz, /metrics (--cluster)"
    )
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(args.cluster, args.metrics_port))
