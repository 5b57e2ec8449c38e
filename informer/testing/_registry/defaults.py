"""Built-in defaulting, as the apiserver's generated defaulters (``pkg/apis/*/v1/defaults.go``)
and the admission plugins every cluster runs fill in what a client left out.

Applied to writes over HTTP (create, update, patch: the object is defaulted when decoded, so
``managedFields`` of an update name the defaulted fields and list keys such as
``k:{"containerPort":80,"protocol":"TCP"}``, as on a cluster); the Python API stores what a
test gives it. Covered: pod specs wherever they appear (Pods, templates of workloads, Jobs and
CronJobs), Deployments, StatefulSets, DaemonSets, ReplicaSets, ReplicationControllers, Jobs,
CronJobs, Services (type, ports, a cluster IP from 10.96.0.0/12, IP families, traffic
policies), PersistentVolumes and claims, Endpoints and EndpointSlices, HorizontalPodAutoscalers
(their ``behavior`` too), LimitRanges, RBAC bindings' subjects and admission webhook
configurations. PodDisruptionBudgets (policy/v1) and Ingresses (networking.k8s.io/v1) have no
defaulters: they are stored as given (their status as the strategies set it).
"""

from __future__ import annotations

import copy
import ipaddress
import itertools
from collections.abc import Callable, Iterator
from typing import Any, Final

__all__ = ["ClusterIPs", "allocate_service", "apply_defaults", "job_selector", "pod_spec"]

Json = dict[str, Any]

_SERVICE_RANGE: Final = ipaddress.IPv4Network("10.96.0.0/12")


class ClusterIPs:
    """The service range's allocator: the next free address after the range's first (which the
    ``kubernetes`` Service holds on a cluster)."""

    def __init__(self) -> None:
        self._next: Iterator[int] = itertools.count(10)
        self._taken: set[str] = set()
        self._ports: Iterator[int] = itertools.count(30000)

    def node_port(self) -> int:
        """The next node port of the default range (30000-32767)."""
        return 30000 + (next(self._ports) - 30000) % 2768

    def allocate(self) -> str:
        while True:
            address = str(_SERVICE_RANGE.network_address + next(self._next))
            if address not in self._taken:
                self._taken.add(address)
                return address


def _dict(parent: Json, key: str) -> Json:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def _items(value: Any) -> list[Json]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _pull_policy(image: Any) -> str:
    """``Always`` for an untagged or ``:latest`` image, else ``IfNotPresent`` (by digest too)."""
    if not isinstance(image, str):
        return "IfNotPresent"
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.rpartition(":")[2] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    http = probe.get("httpGet")
    if isinstance(http, dict):
        http.setdefault("path", "/")
        http.setdefault("scheme", "HTTP")


def _container(container: Json, host_network: bool) -> None:
    container.setdefault("resources", {})
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("imagePullPolicy", _pull_policy(container.get("image")))
    for port in _items(container.get("ports")):
        port.setdefault("protocol", "TCP")
        if host_network and "containerPort" in port:
            port.setdefault("hostPort", port["containerPort"])
    for env in _items(container.get("env")):
        source = env.get("valueFrom")
        if isinstance(source, dict) and isinstance(source.get("fieldRef"), dict):
            source["fieldRef"].setdefault("apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(container.get(probe))


def _volume(volume: Json) -> None:
    for source in ("secret", "configMap", "downwardAPI", "projected"):
        found = volume.get(source)
        if isinstance(found, dict):
            found.setdefault("defaultMode", 420)
    host = volume.get("hostPath")
    if isinstance(host, dict):
        host.setdefault("type", "")
    empty = volume.get("emptyDir")
    if empty is None and "emptyDir" in volume:
        volume["emptyDir"] = {}


def pod_spec(spec: Json) -> None:
    """``SetDefaults_PodSpec`` and the containers', volumes' and probes' defaulters."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    host_network = spec.get("hostNetwork") is True
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in _items(spec.get(key)):
            _container(container, host_network)
    for volume in _items(spec.get("volumes")):
        _volume(volume)


def _template(owner: Json) -> None:
    template = owner.get("template")
    if isinstance(template, dict):
        pod_spec(_dict(template, "spec"))


def _requests_from_limits(spec: Json) -> None:
    """``SetDefaults_Pod``: a container's limit is its request where it names none (a Pod's
    containers only: not a template's); the map in Go's key order."""
    for key in ("initContainers", "containers"):
        for container in _items(spec.get(key)):
            resources = container.get("resources")
            limits = resources.get("limits") if isinstance(resources, dict) else None
            if not isinstance(limits, dict) or not limits:
                continue
            assert isinstance(resources, dict)
            requests = resources.get("requests")
            requests = dict(requests) if isinstance(requests, dict) else {}
            for name, value in limits.items():
                requests.setdefault(name, value)
            resources["requests"] = dict(sorted(requests.items()))


def _pod(obj: Json) -> None:
    spec = _dict(obj, "spec")
    pod_spec(spec)
    _requests_from_limits(spec)
    spec.setdefault("enableServiceLinks", True)
    # admission: ServiceAccount, Priority, DefaultTolerationSeconds
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec.setdefault("serviceAccountName", account)
    spec.setdefault("serviceAccount", account)
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.setdefault("tolerations", [])
    if isinstance(tolerations, list):
        keys = {t.get("key") for t in _items(tolerations)}
        for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if taint not in keys:
                tolerations.append(
                    {
                        "key": taint,
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": 300,
                    }
                )


def _deployment(obj: Json) -> None:
    spec = _dict(obj, "spec")
    spec.setdefault("replicas", 1)
    strategy = _dict(spec, "strategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _template(spec)


def _statefulset(obj: Json) -> None:
    spec = _dict(obj, "spec")
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = _dict(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        _dict(strategy, "rollingUpdate").setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    retention = _dict(spec, "persistentVolumeClaimRetentionPolicy")
    retention.setdefault("whenDeleted", "Retain")
    retention.setdefault("whenScaled", "Retain")
    for claim in _items(spec.get("volumeClaimTemplates")):
        _dict(claim, "spec").setdefault("volumeMode", "Filesystem")
        claim.setdefault("status", {"phase": "Pending"})
    _template(spec)


def _daemonset(obj: Json) -> None:
    spec = _dict(obj, "spec")
    strategy = _dict(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _template(spec)


def _replicaset(obj: Json) -> None:
    spec = _dict(obj, "spec")
    spec.setdefault("replicas", 1)
    _template(spec)


def _replicationcontroller(obj: Json) -> None:
    spec = _dict(obj, "spec")
    spec.setdefault("replicas", 1)
    template = spec.get("template")
    labels = (template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None
    if isinstance(labels, dict) and labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = _dict(obj, "metadata")
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    _template(spec)


def _job_spec(spec: Json) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    if spec.get("podFailurePolicy") is None:
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    _template(spec)


def _job(obj: Json) -> None:
    _job_spec(_dict(obj, "spec"))


def _cronjob(obj: Json) -> None:
    spec = _dict(obj, "spec")
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    job_template = spec.get("jobTemplate")
    if isinstance(job_template, dict):
        _template(_dict(job_template, "spec"))


def _service(obj: Json) -> None:
    spec = _dict(obj, "spec")
    spec.setdefault("sessionAffinity", "None")
    kind = spec.setdefault("type", "ClusterIP")
    if spec["sessionAffinity"] == "ClientIP":
        config = _dict(_dict(spec, "sessionAffinityConfig"), "clientIP")
        config.setdefault("timeoutSeconds", 10800)
    for port in _items(spec.get("ports")):
        port.setdefault("protocol", "TCP")
        if port.get("targetPort") in (None, 0, "") and "port" in port:
            port["targetPort"] = port["port"]
    if kind in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    if kind != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")


def _persistentvolume(obj: Json) -> None:
    spec = _dict(obj, "spec")
    spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    spec.setdefault("volumeMode", "Filesystem")


def _persistentvolumeclaim(obj: Json) -> None:
    _dict(obj, "spec").setdefault("volumeMode", "Filesystem")


def _endpoints(obj: Json) -> None:
    for subset in _items(obj.get("subsets")):
        for port in _items(subset.get("ports")):
            port.setdefault("protocol", "TCP")


def _endpointslice(obj: Json) -> None:
    for port in _items(obj.get("ports")):
        port.setdefault("protocol", "TCP")
        port.setdefault("name", "")


def _hpa(obj: Json) -> None:
    spec = _dict(obj, "spec")
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ]
    _hpa_behavior(spec)


_SCALE_UP: Final[Json] = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
_SCALE_DOWN: Final[Json] = {
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}
_RULE_FIELDS: Final = ("stabilizationWindowSeconds", "selectPolicy", "policies", "tolerance")


def _scaling_rules(given: Any, default: Json) -> Json:
    """``copyHPAScalingRules``: the default rules with the given ones' set fields over them."""
    merged = copy.deepcopy(default)
    if isinstance(given, dict):
        for key, value in given.items():
            if value is not None:
                merged[key] = value
    return {key: merged[key] for key in _RULE_FIELDS if key in merged} | {
        key: value for key, value in merged.items() if key not in _RULE_FIELDS
    }


def _hpa_behavior(spec: Json) -> None:
    """``SetDefaults_HorizontalPodAutoscalerBehavior``: a ``behavior`` gets both directions'
    rules, each unset field from the controller's historical defaults."""
    behavior = spec.get("behavior")
    if not isinstance(behavior, dict):
        return
    spec["behavior"] = {
        "scaleUp": _scaling_rules(behavior.get("scaleUp"), _SCALE_UP),
        "scaleDown": _scaling_rules(behavior.get("scaleDown"), _SCALE_DOWN),
    }


_LIMIT_FIELDS: Final = ("type", "max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def _limitrange(obj: Json) -> None:
    """``SetDefaults_LimitRangeItem``: a Container item's default limit from its max, and its
    default request from its default limit, else its min (maps in Go's key order)."""
    limits = _dict(obj, "spec").get("limits")
    if not isinstance(limits, list):
        return
    for index, item in enumerate(limits):
        if not isinstance(item, dict) or item.get("type") != "Container":
            continue
        default = dict(item.get("default") or {})
        request = dict(item.get("defaultRequest") or {})
        for key, value in (item.get("max") or {}).items():
            default.setdefault(key, value)
        for key, value in default.items():
            request.setdefault(key, value)
        for key, value in (item.get("min") or {}).items():
            request.setdefault(key, value)
        defaulted = {**item}
        for key, values in (("default", default), ("defaultRequest", request)):
            if values:
                defaulted[key] = {k: values[k] for k in sorted(values)}
        limits[index] = {key: defaulted[key] for key in _LIMIT_FIELDS if key in defaulted} | {
            key: value for key, value in defaulted.items() if key not in _LIMIT_FIELDS
        }


def _binding(obj: Json) -> None:
    for subject in _items(obj.get("subjects")):
        if subject.get("kind") in ("User", "Group"):
            subject.setdefault("apiGroup", "rbac.authorization.k8s.io")
        elif subject.get("kind") == "ServiceAccount":
            subject.setdefault("apiGroup", "")


def _webhooks(mutating: bool) -> Callable[[Json], None]:
    def default(obj: Json) -> None:
        for hook in _items(obj.get("webhooks")):
            hook.setdefault("failurePolicy", "Fail")
            hook.setdefault("matchPolicy", "Equivalent")
            hook.setdefault("namespaceSelector", {})
            hook.setdefault("objectSelector", {})
            hook.setdefault("timeoutSeconds", 10)
            if mutating:
                hook.setdefault("reinvocationPolicy", "Never")
            for rule in _items(hook.get("rules")):
                rule.setdefault("scope", "*")
            service = (hook.get("clientConfig") or {}).get("service")
            if isinstance(service, dict):
                service.setdefault("port", 443)

    return default


_DEFAULTERS: Final[dict[tuple[str, str], Callable[[Json], None]]] = {
    ("", "pods"): _pod,
    ("", "podtemplates"): _template,
    ("", "replicationcontrollers"): _replicationcontroller,
    ("", "services"): _service,
    ("", "persistentvolumes"): _persistentvolume,
    ("", "persistentvolumeclaims"): _persistentvolumeclaim,
    ("", "endpoints"): _endpoints,
    ("", "limitranges"): _limitrange,
    ("apps", "deployments"): _deployment,
    ("apps", "statefulsets"): _statefulset,
    ("apps", "daemonsets"): _daemonset,
    ("apps", "replicasets"): _replicaset,
    ("batch", "jobs"): _job,
    ("batch", "cronjobs"): _cronjob,
    ("discovery.k8s.io", "endpointslices"): _endpointslice,
    ("autoscaling", "horizontalpodautoscalers"): _hpa,
    ("rbac.authorization.k8s.io", "rolebindings"): _binding,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): _binding,
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): _webhooks(True),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): _webhooks(False),
}


def apply_defaults(group: str, plural: str, obj: Json) -> None:
    """Fill in ``obj``'s defaults in place (nothing for a resource without a defaulter)."""
    defaulter = _DEFAULTERS.get((group, plural))
    if defaulter is not None:
        defaulter(obj)


def allocate_service(obj: Json, previous: Json | None, ips: ClusterIPs) -> None:
    """The service registry's allocations: a cluster IP (kept from the stored Service on an
    update that leaves it out), ``clusterIPs``, ``ipFamilies``, ``ipFamilyPolicy`` and node
    ports for NodePort and LoadBalancer Services."""
    spec = _dict(obj, "spec")
    kind = spec.get("type", "ClusterIP")
    if kind == "ExternalName":
        return
    old = (previous or {}).get("spec") or {}
    for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if key not in spec and key in old:
            spec[key] = old[key]
    if not spec.get("clusterIP"):
        spec["clusterIP"] = ips.allocate()
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    headless_without_selector = spec["clusterIP"] == "None" and not spec.get("selector")
    spec.setdefault(
        "ipFamilyPolicy", "RequireDualStack" if headless_without_selector else "SingleStack"
    )
    if kind in ("NodePort", "LoadBalancer"):
        old_ports = {
            (p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
            for p in _items(old.get("ports"))
        }
        for port in _items(spec.get("ports")):
            if not port.get("nodePort"):
                kept = old_ports.get((port.get("port"), port.get("protocol", "TCP")))
                port["nodePort"] = kept or ips.node_port()


def job_selector(obj: Json) -> None:
    """The Job strategy's generated selector (``manualSelector`` unset): on the Job's uid, with
    the template labelled to match."""
    spec = _dict(obj, "spec")
    if spec.get("manualSelector") is True:
        return
    spec.setdefault("manualSelector", False)
    meta = obj.get("metadata") or {}
    uid, name = meta.get("uid"), meta.get("name")
    if spec.get("selector") or not uid:
        return
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    template = _dict(spec, "template")
    labels = _dict(_dict(template, "metadata"), "labels")
    for key, value in (
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name),
        ("controller-uid", uid),
        ("job-name", name),
    ):
        labels.setdefault(key, value)
