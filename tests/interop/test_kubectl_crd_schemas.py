"""kubectl against ``python -m informer serve`` with a CRD's structural schema: a manifest that
breaks the schema is refused with the apiserver's 422, an unknown field under kubectl's default
``--validate=strict`` is refused, ``--validate=false`` prunes it, and ``default:`` values are
stored."""

from __future__ import annotations

import json
from typing import Any

from .conftest import Kubectl


def crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"websites.{group}"},
        "spec": {
            "group": group,
            "names": {"plural": "websites", "singular": "website", "kind": "Website"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "required": ["image"],
                                    "properties": {
                                        "image": {"type": "string", "minLength": 1},
                                        "replicas": {
                                            "type": "integer",
                                            "minimum": 0,
                                            "default": 1,
                                        },
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }


def site(group: str, name: str, **spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": f"{group}/v1",
            "kind": "Website",
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec,
        }
    )


def test_kubectl_meets_the_schema(kubectl: Kubectl, unique_name: str) -> None:
    group = f"{unique_name}.example.com"
    kubectl("apply", "-f", "-", input=json.dumps(crd(group)))
    bad = kubectl("create", "-f", "-", input=site(group, "bad", replicas=-1), check=False)
    assert bad.returncode != 0
    assert "spec.replicas: Invalid value: -1" in bad.stderr, bad.stderr
    assert "spec.image: Required value" in bad.stderr
    unknown = kubectl(
        "create", "-f", "-", input=site(group, "strict", image="nginx", colour="red"), check=False
    )
    assert unknown.returncode != 0
    assert 'unknown field "spec.colour"' in unknown.stderr, unknown.stderr
    kubectl(
        "create",
        "--validate=false",
        "-f",
        "-",
        input=site(group, "pruned", image="nginx", colour="red"),
    )
    stored = kubectl.json("get", f"websites.{group}", "pruned")
    assert stored["spec"] == {"image": "nginx", "replicas": 1}


def test_kubectl_scale_of_a_custom_resource(kubectl: Kubectl, unique_name: str) -> None:
    group = f"{unique_name}.example.com"
    definition = crd(group)
    definition["spec"]["versions"][0]["subresources"] = {
        "status": {},
        "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
    }
    kubectl("apply", "-f", "-", input=json.dumps(definition))
    kubectl("create", "-f", "-", input=site(group, "web", image="nginx"))
    kubectl("scale", f"websites.{group}/web", "--replicas=3")
    stored = kubectl.json("get", f"websites.{group}", "web")
    assert stored["spec"]["replicas"] == 3


def test_kubectl_explain_reads_the_crd_schema(kubectl: Kubectl, unique_name: str) -> None:
    group = f"{unique_name}.example.com"
    kubectl("apply", "-f", "-", input=json.dumps(crd(group)))
    explained = kubectl("explain", "websites.spec.replicas", f"--api-version={group}/v1")
    assert "integer" in explained.stdout, explained.stdout
