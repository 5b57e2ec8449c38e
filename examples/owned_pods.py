"""An operator for a custom resource that owns Pods: a ``PodSet`` (example.com/v1) keeps
``spec.replicas`` Pods running ``spec.image``, reports them in its status, and on deletion removes
its Pods before it goes (a finalizer).

Shows ``owns`` (Pod changes reconcile their controller), owner references, a store index,
finalizers, status updates through the /status subresource and requeue-after. The CRD is created
if missing, on the embedded test server as on a cluster.

python examples/owned_pods.py             # on the embedded test API server, with a demo
python examples/owned_pods.py --cluster   # on the cluster of your kubeconfig (Ctrl-C)
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
    Controller,
    Informer,
    KubeObject,
    LeaderElector,
    NotFound,
    ReflectorOptions,
    Request,
    Resource,
    connect,
    is_being_deleted,
    set_controller_reference,
)

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
    **election: float,
) -> None:
    """Run one replica until cancelled (``election``: LeaderElector timings)."""
    client = Client(api, field_manager="podset-controller")
    with contextlib.suppress(AlreadyExists):
        await client.create(CRDS, CRD)
    podsets = Informer(api, PODSETS, options=options)
    pods = Informer(api, PODS, label_selector="example.com/podset", options=options)
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

    controller = Controller(reconcile, for_=podsets, owns=[pods], client=client, workers=4)
    elector = LeaderElector(client, "podset-controller", "default", identity=identity, **election)
    async with podsets, pods:  # warm standby: caches sync whether or not we lead
        await elector.run(on_started_leading=controller.run)


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
