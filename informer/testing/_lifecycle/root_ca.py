"""The root CA publisher (kube-controller-manager's ``rootcacertpublisher``): every namespace has
the ``kube-root-ca.crt`` ConfigMap, ``data: {"ca.crt": <the cluster's CA, PEM>}`` with its
``kubernetes.io/description`` annotation; a deleted one is created again, a changed one is put
back (data and annotation), and a new CA is published to every namespace. A namespace being
deleted gets none (the create is refused and that is fine, as for the controller).

The CA is the server's own with ``tls=True`` (what verifies it); over plain HTTP it is a fixed
self-signed certificate (``CN=kubernetes``) that verifies nothing, as there is nothing to verify.

It runs with ``ApiServer(root_ca_configmaps=True)`` and in ``informer serve`` (a cluster for
kubectl and operators); ``ApiServer()`` leaves it out, so a namespace starts empty, as under
envtest (a real apiserver without kube-controller-manager), and the many tests that list a
namespace's ConfigMaps read only their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from informer.resource import CONFIGMAPS
from informer.testing import _status as st

if TYPE_CHECKING:
    from informer.testing._lifecycle.controllers import Cluster

__all__ = ["PLAIN_HTTP_CA", "ROOT_CA_CONFIGMAP", "RootCAPublisher", "root_ca_configmap"]

Json = dict[str, Any]

ROOT_CA_CONFIGMAP: Final = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION: Final = "kubernetes.io/description"
DESCRIPTION: Final = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)
PLAIN_HTTP_CA: Final = """-----BEGIN CERTIFICATE-----
MIIBPjCB5KADAgECAgEBMAoGCCqGSM49BAMCMBUxEzARBgNVBAMMCmt1YmVybmV0
ZXMwIBcNMjYwMTAxMDAwMDAwWhgPMjEyNTEyMDgwMDAwMDBaMBUxEzARBgNVBAMM
Cmt1YmVybmV0ZXMwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAATW1hqc2aYEYE0o
mNsc1daZiGgS2xEpzurbXmGpiSrKcNYHXwhBWhFreB9b138QdSQUkJF8wIADZWVw
cePCdr00oyMwITAPBgNVHRMBAf8EBTADAQH/MA4GA1UdDwEB/wQEAwIBpjAKBggq
hkjOPQQDAgNJADBGAiEArwZBbUI0+ByaRn/vDXTL8jqBLQrj9dRbJUK9VJ3RCo8C
IQCcA8W0VTkLr4yRceltdLsP5kAmift7zoJhQzauyMH6Bw==
-----END CERTIFICATE-----
"""
"""The CA published by a server without TLS: a valid PEM (tools parse it), signing nothing."""


def root_ca_configmap(namespace: str, ca_pem: str) -> Json:
    """The ``kube-root-ca.crt`` ConfigMap of ``namespace``, as the publisher creates it."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ROOT_CA_CONFIGMAP,
            "namespace": namespace,
            "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
        },
        "data": {"ca.crt": ca_pem},
    }


class RootCAPublisher:
    """Keeps ``kube-root-ca.crt`` in every namespace (``syncNamespace``)."""

    def __init__(self, cluster: Cluster, ca_pem: str = PLAIN_HTTP_CA) -> None:
        self.cluster = cluster
        self.ca_pem = ca_pem

    def sync(self, namespace: str) -> None:
        """Create the namespace's ConfigMap, or put its data and annotation back."""
        key = f"{namespace}/{ROOT_CA_CONFIGMAP}"
        found = self.cluster.store.objects[CONFIGMAPS].get(key)
        if found is None:
            try:
                self.cluster.create(
                    CONFIGMAPS, root_ca_configmap(namespace, self.ca_pem), namespace
                )
            except st.StatusError:
                pass  # the namespace is gone or being deleted
            return
        data = {"ca.crt": self.ca_pem}
        annotations = found.data.get("metadata", {}).get("annotations") or {}
        if found.data.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION):
            return

        def restore(obj: Json) -> None:
            obj["data"] = dict(data)
            meta = obj["metadata"]
            meta["annotations"] = {**(meta.get("annotations") or {})}
            meta["annotations"][DESCRIPTION_ANNOTATION] = DESCRIPTION

        self.cluster.edit(CONFIGMAPS, key, restore)

    def publish(self, ca_pem: str, namespaces: list[str]) -> None:
        """A new CA (the server's TLS one, made when it starts): every namespace gets it."""
        self.ca_pem = ca_pem
        for namespace in namespaces:
            self.sync(namespace)
