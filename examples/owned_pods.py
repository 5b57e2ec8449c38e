"""An operator for a custom resource that owns Pods: a ``PodSet`` (example.com/v1) keeps
``spec.replicas`` Pods running ``spec.image``, reports them in its status, and on deletion removes
its Pods before it goes (a finalizer).

Shows ``owns`` (Pod changes reconcile their controller), owner references, a store index,
finalizers, status updates through the /status subresource and requeue-after. The CRD is created
if missing, on the embedded test server as on a cluster.

python examples/owned_pods.py             # on the embedded test API server, with a demo
python examples/owned_pods.py --cluster   # on the cluster of your kubeconfig (Ctrl-C)
python examples/owned_pods.py --cluster --metrics-port 8080   # /healthz, /readyz, /metrics there
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from typing import Any

from informer import (
    PODS,
    AlreadyExists,
    Client,
    KubeObject,
    LeaderElector,
    Manager,
    NotFound,
    ReflectorOptions,
    Request,
    Resource,
    connect,
    is_being_deleted,
    set_controller_reference,
)
from informer.log_config import configure_logging

PODSETS = Resource("example.com", "v1", "podsets", "PodSet")
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
FINALIZER = "example.com/pods"
_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "podsets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "podsets", "singular": "podset", "kind": "PodSet"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {"spec": _OBJECT, "status": _OBJECT},
                    }
                },
            }
        ],
    },
}


def controller_uid(pod: KubeObject) -> list[str]:
    """Index function: the uid of the Pod's controller (its PodSet)."""
    refs = pod.get("metadata", {}).get("ownerReferences") or ()
    return [r["uid"] for r in refs if r.get("controller")]


async def operator(
    api: Any,
    *,
    identity: str | None = None,
    options: ReflectorOptions | None = None,
    port: int | None = None,
    cluster: bool = False,
    **election: float,
) -> None:
    """Run one replica until cancelled (``election``: LeaderElector timings; ``cluster``: the
    process's own replica, stopped by SIGTERM/SIGINT, closing ``api``)."""
    client = Client(api, field_manager="podset-controller")
    with contextlib.suppress(AlreadyExists):
        await client.create(CRDS, CRD)
    elector = LeaderElector(client, "podset-controller", "default", identity=identity, **election)
    manager = Manager(
        api,
        client=client,
        leader_election=elector,
        options=options,
        port=port,
        close_client=cluster,
    )
    podsets = manager.informer(PODSETS)
    pods = manager.informer(PODS, label_selector="example.com/podset")
    pods.store.add_index("controller", controller_uid)

    async def reconcile(request: Request) -> float | None:
        podset = podsets.store.get(request.name, request.namespace)
        if podset is None:
            return None  # gone: its finalizer already removed its Pods
        owned = pods.store.by_index("controller", podset.uid)
        if is_being_deleted(podset):
            for pod in owned:
                with contextlib.suppress(NotFound):
                    await client.delete(PODS, pod.name, pod.namespace, uid=pod.uid)
            if owned:
                return 1.0  # requeue-after: check again until the Pods are gone
            await client.remove_finalizer(PODSETS, podset, FINALIZER)
            return None
        podset = await client.add_finalizer(PODSETS, podset, FINALIZER)
        spec = podset.get("spec") or {}
        live = [p for p in owned if not is_being_deleted(p)]
        for _ in range(int(spec.get("replicas", 1)) - len(live)):
            pod: dict[str, Any] = {
                "metadata": {
                    "generateName": f"{podset.name}-",
                    "namespace": podset.namespace,
                    "labels": {"example.com/podset": podset.name},
                },
                "spec": {"containers": [{"name": "main", "image": spec.get("image", "busybox")}]},
            }
            await client.create(PODS, set_controller_reference(pod, podset))
        for pod in live[int(spec.get("replicas", 1)) :]:
            await client.delete(PODS, pod.name, pod.namespace, uid=pod.uid)
        status = {"pods": min(len(live), int(spec.get("replicas", 1)))}
        status["observedGeneration"] = podset["metadata"]["generation"]
        if podset.get("status") != status:
            await client.patch_status(PODSETS, podset.name, status, namespace=podset.namespace)
        return 300.0  # requeue-after: a periodic check, whatever happens meanwhile

    manager.controller(reconcile, for_=podsets, owns=[pods], workers=4)
    await manager.run(handle_signals=cluster)  # warm standby: caches sync whether or not we lead


async def demo() -> None:
    """On the embedded test server: create, scale and delete a PodSet; print the Pods."""
    from informer.testing import ApiServer

    async with ApiServer() as server:
        api = server.api_client()
        replica = asyncio.create_task(operator(api, identity="demo"))
        try:
            client = Client(api)
            web = {"metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 3}}
            await server.wait_for_requests(lambda r: r.resource == "podsets" and r.verb == "watch")
            await client.create(PODSETS, web)

            def pods() -> list[str]:
                return sorted(p["metadata"]["name"] for p in server.list_objects(PODS, "default"))

            # checked after every request the server answers
            await server.wait_for_requests(lambda _: len(pods()) == 3, timeout=30)
            print("3 replicas:", pods())
            await client.patch(PODSETS, "web", {"spec": {"replicas": 1}}, namespace="default")

            def status() -> Any:
                return (server.get(PODSETS, "web", "default") or {}).get("status", {})

            await server.wait_for_requests(lambda _: status().get("pods") == 1, timeout=30)
            print("scaled to 1:", pods(), "status:", status())
            await client.delete(PODSETS, "web", "default")
            await server.wait_for_requests(
                lambda _: server.get(PODSETS, "web", "default") is None and not pods(), timeout=30
            )
            print("deleted: no PodSet, no Pods")
        finally:
            replica.cancel()
            await asyncio.gather(replica, return_exceptions=True)
            await api.close()


async def main(cluster: bool, port: int) -> None:
    if not cluster:
        await demo()
        return
    configure_logging("info")
    api = await connect()
    try:
        await operator(api, port=port, cluster=True)  # until SIGTERM or SIGINT
    finally:
        await api.close()  # closed already, unless the CRD could not be created


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cluster", action="store_true", help="use kubeconfig / in-cluster")
    parser.add_argument(
        "--metrics-port", type=int, default=8080, help="/healthz, /readyz, /metrics (--cluster)"
    )
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(args.cluster, args.metrics_port))
