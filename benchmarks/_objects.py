"""The objects the benchmarks serve: realistic ~6.6 KB Pods, generated from one template.

Moved unchanged from the former ``store_sync.py`` so the bytes every benchmark serves stay the
same from run to run (and comparable with earlier results).
"""

from __future__ import annotations

from typing import Any

import msgspec

TARGET_SIZE = 6600


def _pod_template() -> bytes:
    """A Pod as a real API server returns it, with @TOKENS@ to vary per item."""
    container = {
        "name": "app",
        "image": "registry.example.com/team/app:1.42.0@sha256:" + "ab" * 32,
        "command": ["/app/server"],
        "args": ["--port=8080", "--metrics-port=9090", "--log-level=info", "--config=/etc/app"],
        "ports": [
            {"name": "http", "containerPort": 8080, "protocol": "TCP"},
            {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
        ],
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {
                "name": "POD_NAMESPACE",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
            },
            {"name": "GOMAXPROCS", "value": "2"},
            {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel-collector:4317"},
        ],
        "resources": {
            "limits": {"cpu": "2", "memory": "1Gi"},
            "requests": {"cpu": "250m", "memory": "512Mi"},
        },
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/app", "readOnly": True},
            {
                "name": "kube-api-access-x7k2p",
                "readOnly": True,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            },
        ],
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
            "initialDelaySeconds": 10,
            "timeoutSeconds": 1,
            "periodSeconds": 10,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": 8080, "scheme": "HTTP"},
            "timeoutSeconds": 1,
            "periodSeconds": 5,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    managed = {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-01-15T10:21:33Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {
                "f:generateName": {},
                "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                "f:ownerReferences": {".": {}, 'k:{"uid":"@UID@"}': {}},
            },
            "f:spec": {
                "f:containers": {
                    'k:{"name":"app"}': {
                        ".": {},
                        "f:args": {},
                        "f:command": {},
                        "f:env": {},
                        "f:image": {},
                        "f:ports": {},
                        "f:resources": {},
                        "f:volumeMounts": {},
                    }
                },
                "f:dnsPolicy": {},
                "f:restartPolicy": {},
                "f:schedulerName": {},
                "f:securityContext": {},
                "f:terminationGracePeriodSeconds": {},
                "f:volumes": {},
            },
        },
    }
    kubelet = {
        "manager": "kubelet",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-01-15T10:21:41Z",
        "fieldsType": "FieldsV1",
        "subresource": "status",
        "fieldsV1": {
            "f:status": {
                "f:conditions": {
                    f'k:{{"type":"{t}"}}': {
                        ".": {},
                        "f:lastProbeTime": {},
                        "f:lastTransitionTime": {},
                        "f:status": {},
                        "f:type": {},
                    }
                    for t in ("ContainersReady", "Initialized", "Ready")
                },
                "f:containerStatuses": {},
                "f:hostIP": {},
                "f:phase": {},
                "f:podIP": {},
                "f:podIPs": {".": {}, 'k:{"ip":"@IP@"}': {".": {}, "f:ip": {}}},
                "f:startTime": {},
            }
        },
    }
    pod: dict[str, Any] = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "@NAME@",
            "generateName": "app-7d9f8c6b5-",
            "namespace": "@NS@",
            "uid": "@UID@",
            "resourceVersion": "@RV@",
            "creationTimestamp": "2026-01-15T10:21:33Z",
            "labels": {"app": "@APP@", "pod-template-hash": "7d9f8c6b5", "tier": "backend"},
            "annotations": {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "example.com/padding": "@PAD@",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "app-7d9f8c6b5",
                    "uid": "@UID@",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [managed, kubelet],
        },
        "spec": {
            "volumes": [
                {"name": "config", "configMap": {"name": "app-config", "defaultMode": 420}},
                {
                    "name": "kube-api-access-x7k2p",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                },
            ],
            "containers": [container],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "app",
            "serviceAccount": "app",
            "nodeName": "@NODE@",
            "securityContext": {"runAsUser": 1000, "fsGroup": 2000},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": "2026-01-15T10:21:41Z",
                }
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "hostIP": "10.0.3.17",
            "podIP": "@IP@",
            "podIPs": [{"ip": "@IP@"}],
            "startTime": "2026-01-15T10:21:33Z",
            "containerStatuses": [
                {
                    "name": "app",
                    "state": {"running": {"startedAt": "2026-01-15T10:21:40Z"}},
                    "lastState": {},
                    "ready": True,
                    "restartCount": 0,
                    "image": "registry.example.com/team/app:1.42.0",
                    "imageID": "registry.example.com/team/app@sha256:" + "cd" * 32,
                    "containerID": "containerd://" + "ef" * 32,
                    "started": True,
                }
            ],
            "qosClass": "Burstable",
        },
    }
    raw = msgspec.json.encode(pod)
    pad = TARGET_SIZE - (len(raw) - len(b"@PAD@")) - 40  # room for the varying fields
    return raw.replace(b"@PAD@", b"x" * max(pad, 0))


def make_items(count: int, first_rv: int = 1_000_000) -> list[bytes]:
    template = _pod_template()
    items = []
    for i in range(count):
        items.append(
            template.replace(b"@NAME@", b"app-7d9f8c6b5-%07d" % i)
            .replace(b"@NS@", b"team-%03d" % (i % 200))
            .replace(b"@UID@", b"6f1c2a3e-%04x-4b5c-9d0e-%012x" % (i % 65536, i))
            .replace(b"@RV@", b"%d" % (first_rv + i))
            .replace(b"@APP@", b"app-%d" % (i % 50))
            .replace(b"@NODE@", b"node-%04d" % (i % 1000))
            .replace(b"@IP@", b"10.%d.%d.%d" % (i >> 16 & 255, i >> 8 & 255, i & 255))
        )
    return items
