"""The manifests of ``examples/deploy/`` apply with kubectl to ``python -m informer serve``:
first with ``--dry-run=server`` (nothing stored), then for real, so a schema typo (kubectl sends
``fieldValidation=Strict``: an unknown field is refused) fails here. They also say what the
example operator needs: probes on the Manager's endpoints and port, a grace period longer than
the Manager's shutdown bound, RBAC naming exactly the verbs the operator uses.

Kinds the test server does not serve yet (it answers discovery as a cluster does) cannot be
applied: only those of ``MAY_BE_UNSERVED`` (exact apiVersion and kind, so that a misspelt
apiVersion is never skipped silently) are left out, and they are checked statically below.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from informer import Manager
from tests.interop.conftest import Kubectl

DEPLOY = Path(__file__).resolve().parents[2] / "examples" / "deploy"
_RBAC = "rbac.authorization.k8s.io/v1"
MAY_BE_UNSERVED = {
    ("v1", "ServiceAccount"),
    *((_RBAC, k) for k in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")),
}


def manifests() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def served_kinds(kubectl: Kubectl) -> set[tuple[str, str]]:
    """(apiVersion, kind) of every resource the server serves, from its discovery."""
    out = kubectl("api-resources", "--no-headers", "-o", "wide").stdout
    kinds = set()
    for line in out.splitlines():
        fields = line.split()
        # NAME [SHORTNAMES] APIVERSION NAMESPACED KIND VERBS [CATEGORIES]
        at = next(i for i, f in enumerate(fields) if f in ("true", "false"))
        kinds.add((fields[at - 1], fields[at + 1]))
    return kinds


def stream(docs: list[dict[str, Any]]) -> str:
    """A YAML stream of these documents (JSON is YAML), as ``kubectl apply -f`` reads a file."""
    return "\n---\n".join(json.dumps(d) for d in docs)


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [d for d in manifests() if d["kind"] == kind]


def test_the_deploy_manifests_apply_with_kubectl(kubectl: Kubectl) -> None:
    served = served_kinds(kubectl)
    docs = manifests()
    applicable = [d for d in docs if (d["apiVersion"], d["kind"]) in served]
    left_out = {(d["apiVersion"], d["kind"]) for d in docs} - served
    assert left_out <= MAY_BE_UNSERVED, f"not served by the test server: {left_out}"
    assert {d["kind"] for d in applicable} >= {"Namespace", "Deployment"}
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
