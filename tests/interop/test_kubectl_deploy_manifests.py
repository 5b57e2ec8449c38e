"""The manifests of ``examples/deploy/`` apply with kubectl to ``python -m informer serve``:
first with ``--dry-run=server`` (nothing stored), then for real, so a schema typo (kubectl sends
``fieldValidation=Strict``: an unknown field is refused) fails here. They also say what the
example operator needs: probes on the Manager's endpoints and port, a grace period longer than
the Manager's shutdown bound, RBAC naming exactly the verbs the operator uses.

Every document is applied, RBAC included (a misspelt apiVersion or kind is refused as a cluster
refuses it), and the RBAC is also checked against what the operator's code calls. The test
server does not know every field of every built-in (it stores an unknown ``spec.replica`` of a
Deployment or ``verb`` of a PolicyRule without a word), so each document is also validated,
strictly, against the published OpenAPI schemas of Kubernetes v1.36 (``kubernetes-validate``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import yaml

from informer import Manager
from tests.interop.conftest import Kubectl

DEPLOY = Path(__file__).resolve().parents[2] / "examples" / "deploy"


def manifests() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def stream(docs: list[dict[str, Any]]) -> str:
    """A YAML stream of these documents (JSON is YAML), as ``kubectl apply -f`` reads a file."""
    return "\n---\n".join(json.dumps(d) for d in docs)


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [d for d in manifests() if d["kind"] == kind]


def test_the_deploy_manifests_apply_with_kubectl(kubectl: Kubectl) -> None:
    applicable = manifests()
    kinds = {d["kind"] for d in applicable}
    assert kinds >= {"Namespace", "ServiceAccount", "ClusterRole", "Role", "Deployment"}
    body = stream(applicable)

    # the namespaces first: a server-side dry run of objects in a namespace not yet created is 404
    namespaces = [d for d in applicable if d["kind"] == "Namespace"]
    ns_body = stream(namespaces)
    kubectl("apply", "--dry-run=server", "-f", "-", input=ns_body)
    kubectl("apply", "-f", "-", input=ns_body)
    kubectl("apply", "--dry-run=server", "-f", "-", input=body)
    before = kubectl("get", "deployment", "configmap-mirror", "-n", "configmap-mirror", check=False)
    assert before.returncode != 0 and "NotFound" in before.stderr  # the dry run stored nothing

    kubectl("apply", "-f", "-", input=body)
    kubectl("apply", "-f", "-", input=body)  # again: unchanged, as a CD pipeline re-applies
    for doc in applicable:
        meta = doc["metadata"]
        scope = ["-n", meta["namespace"]] if "namespace" in meta else []
        resource = f"{doc['kind'].lower()}.{doc['apiVersion'].split('/')[0]}"
        if "/" not in doc["apiVersion"]:
            resource = doc["kind"].lower()
        stored = kubectl.json("get", resource, meta["name"], *scope)
        assert stored["metadata"]["name"] == meta["name"]
    deployment = kubectl.json("get", "deployment", "configmap-mirror", "-n", "configmap-mirror")
    assert deployment["spec"]["replicas"] >= 2


def test_the_deploy_manifests_follow_the_kubernetes_schemas() -> None:
    for doc in manifests():  # strict: an unknown field is an error, as kubectl's Strict is
        kubernetes_validate.validate(doc, "1.36.0", strict=True)


def test_the_deployment_fits_the_manager() -> None:
    (deployment,) = of_kind("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    command = container["command"]
    assert command[:2] == ["python", "examples/configmap_mirror.py"] and "--cluster" in command
    port = int(command[command.index("--metrics-port") + 1])
    (named,) = [p for p in container["ports"] if p["containerPort"] == port]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path and get["port"] in (port, named["name"])
    # the Manager's whole stop is bounded by its shutdown_timeout; the kubelet kills after the
    # grace period: it must be longer, with a margin
    shutdown = Manager.__init__.__kwdefaults__["shutdown_timeout"]
    assert pod["terminationGracePeriodSeconds"] >= shutdown + 5
    (account,) = of_kind("ServiceAccount")
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    assert deployment["spec"]["replicas"] >= 2


def rules_for(role_kind: str, binding_kind: str) -> dict[str | None, set[tuple[str, str, str]]]:
    """(group, resource, verb) granted to the example's ServiceAccount, per namespace (None:
    cluster-wide)."""
    (account,) = of_kind("ServiceAccount")
    subject = {
        "kind": "ServiceAccount",
        "name": account["metadata"]["name"],
        "namespace": account["metadata"]["namespace"],
    }
    roles = {(r["metadata"].get("namespace"), r["metadata"]["name"]): r for r in of_kind(role_kind)}
    granted: dict[str | None, set[tuple[str, str, str]]] = {}
    for binding in of_kind(binding_kind):
        assert subject in binding["subjects"]
        ns = binding["metadata"].get("namespace")
        role = roles[(ns, binding["roleRef"]["name"])]
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        assert "*" not in (group, resource, verb)
                        granted.setdefault(ns, set()).add((group, resource, verb))
    return granted


def test_the_rbac_grants_what_the_example_uses_and_no_more() -> None:
    cluster = rules_for("ClusterRole", "ClusterRoleBinding")
    namespaced = rules_for("Role", "RoleBinding")
    (deployment,) = of_kind("Deployment")
    own = deployment["metadata"]["namespace"]
    assert cluster == {None: {("", "configmaps", "list"), ("", "configmaps", "watch")}}
    assert namespaced == {
        "mirror": {("", "configmaps", v) for v in ("create", "update", "delete")},
        own: {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")},
    }
    source = (DEPLOY.parent / "configmap_mirror.py").read_text()
    assert 'MIRROR_NS = "mirror"' in source  # the namespace the writes are granted in
    assert "pod_namespace()" in source  # the Lease lives in the operator's own namespace
    for call in ("create", "replace", "delete"):
        assert f"client.{call}(CONFIGMAPS" in source
    for unused in ("client.patch(", "client.apply(", "EventRecorder", "SECRETS"):
        assert unused not in source.split("async def demo")[0]  # the operator, not its demo
