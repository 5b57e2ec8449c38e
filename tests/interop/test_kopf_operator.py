"""A kopf operator (``kopf run --standalone``) against ``informer serve``: its create handler
runs on a custom resource of a CRD created over HTTP, and its delete handler runs before the
object goes (kopf's finalizer holds it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.interop.conftest import REPO_ROOT, Kubectl, Served

GUARD = 60  # seconds: a hung client fails the test instead of hanging it (not a timing check)

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "kopfexamples.kopf.dev"},
    "spec": {
        "group": "kopf.dev",
        "names": {
            "plural": "kopfexamples",
            "singular": "kopfexample",
            "kind": "KopfExample",
            "shortNames": ["kex"],
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def test_kopf_create_and_delete_handlers_run(
    served: Served, kubectl: Kubectl, namespace: str
) -> None:
    kubectl("apply", "-f", "-", input=json.dumps(CRD))
    operator = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kopf",
            "run",
            "--standalone",
            "-n",
            namespace,
            str(Path(__file__).with_name("kopf_operator.py")),
        ],
        env={**os.environ, "KUBECONFIG": str(served.kubeconfig), "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        example = {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "ex", "namespace": namespace},
            "spec": {"field": "value"},
        }
        kubectl("apply", "-f", "-", input=json.dumps(example))
        kubectl(
            "wait",
            "kex/ex",
            "-n",
            namespace,
            "--for=jsonpath={.status.created.seen}=value",
            f"--timeout={GUARD}s",
        )
        held = kubectl.json("get", "kex", "ex", "-n", namespace)
        assert held["metadata"]["finalizers"] == ["kopf.zalando.org/KopfFinalizerMarker"]
        kubectl("delete", "kex", "ex", "-n", namespace, f"--timeout={GUARD}s")
        evidence = kubectl.json("get", "configmap", "deleted-ex", "-n", namespace)
        assert evidence["data"] == {"by": "kopf"}
    finally:
        operator.terminate()
        try:
            _, _errors = operator.communicate(timeout=GUARD)
        except subprocess.TimeoutExpired:
            operator.kill()
            operator.communicate()
