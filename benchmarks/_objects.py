"""The objects the benchmarks serve.

``make_items``: ~6.6 KB Pods generated from one template with a few tokens varied (moved
unchanged from the former ``store_sync.py`` so the bytes of the existing rows stay the same from
run to run, comparable with earlier results). ``make_real_items``: Pods of 60 distinct workloads
with every per-Pod high-entropy field at its real length (issue 22), for the compression rows,
which the template set would flatter (a dictionary compresses it to ~100 bytes per Pod).
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


# -- the realistic set (issue 22): objects that do not flatter a compressor ----------------------
#
# The set above varies a few tokens of one template: a dictionary trained on it compresses each
# Pod to about 100 bytes, which no real cluster allows. The set below is built from WORKLOADS
# distinct workloads (Deployments), each with its own images and digests, command, env,
# volumes, labels, annotations and resource sizes, one to three containers (sidecars), and
# gives every Pod the high-entropy fields a real Pod carries, at their real lengths: uid (36),
# pod-template-hash (9-10) and the name suffix (5), containerIDs (64 hex each), imageIDs
# (sha256 digests), pod and host IPs, the node's name, and every timestamp (creation, start,
# each condition, each container's start, each managedFields entry) at its own second.

WORKLOADS = 60
_HASH_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # what the ReplicaSet controller's names use
_WORDS = (
    "api gateway billing checkout payments orders search catalog inventory auth users profile "
    "notifications mailer scheduler worker ingest pipeline metrics exporter cache session "
    "ledger fraud recommender feed media thumbnails uploader audit reporting analytics "
    "geo pricing shipping tax invoices webhook events stream sync backup restore admin "
    "frontend backend graphql grpc proxy router config secrets vault kafka consumer producer"
).split()
_REGISTRIES = (
    "registry.example.com",
    "ghcr.io/acme-corp",
    "123456789012.dkr.ecr.eu-west-1.amazonaws.com",
    "europe-docker.pkg.dev/acme-prod/services",
    "docker.io/library",
    "quay.io/acme",
)


def _hex(rng: Any, n: int) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def _uid(rng: Any) -> str:
    h = _hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[rng.randrange(4)]}{h[17:20]}-{h[20:]}"


def _stamp(t: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _workload(rng: Any, w: int) -> dict[str, Any]:
    """One Deployment's pod template and the fields its ReplicaSet shares."""
    name = f"{rng.choice(_WORDS)}-{rng.choice(_WORDS)}" + (f"-{w}" if rng.random() < 0.5 else "")
    team = f"team-{rng.choice(_WORDS)}"
    containers = []
    for c in range(rng.choice((1, 1, 1, 2, 2, 3))):
        cname = (
            name
            if c == 0
            else rng.choice(
                (
                    "istio-proxy",
                    "log-shipper",
                    "oauth2-proxy",
                    "cloud-sql-proxy",
                    "vault-agent",
                    "envoy",
                )
            )
        )
        reg = rng.choice(_REGISTRIES)
        tag = f"{rng.randrange(0, 4)}.{rng.randrange(0, 40)}.{rng.randrange(0, 20)}"
        digest = _hex(rng, 64)
        env = []
        for _ in range(rng.randrange(2, 16)):
            key = "_".join(rng.choice(_WORDS).upper() for _ in range(rng.randrange(1, 4)))
            r = rng.random()
            if r < 0.5:
                val = rng.choice(
                    (
                        str(rng.randrange(1, 100000)),
                        "true",
                        "false",
                        f"http://{rng.choice(_WORDS)}"
                        f".{team}.svc.cluster.local:{rng.randrange(80, 9999)}",
                        _hex(rng, rng.choice((8, 16, 32))),
                        f"/etc/{rng.choice(_WORDS)}/conf.yaml",
                    )
                )
                env.append({"name": key, "value": val})
            elif r < 0.8:
                env.append(
                    {
                        "name": key,
                        "valueFrom": {
                            "secretKeyRef": {
                                "name": f"{name}-{rng.choice(_WORDS)}",
                                "key": rng.choice(_WORDS),
                            }
                        },
                    }
                )
            else:
                env.append(
                    {
                        "name": key,
                        "valueFrom": {
                            "fieldRef": {
                                "apiVersion": "v1",
                                "fieldPath": rng.choice(
                                    (
                                        "metadata.name",
                                        "metadata.namespace",
                                        "status.podIP",
                                        "spec.nodeName",
                                    )
                                ),
                            }
                        },
                    }
                )
        cpu = rng.choice(("50m", "100m", "250m", "500m", "1", "2", "4"))
        mem = rng.choice(("64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi", "8Gi"))
        port = rng.randrange(1024, 20000)
        container: dict[str, Any] = {
            "name": cname,
            "image": f"{reg}/{cname}:{tag}@sha256:{digest}",
            "command": [rng.choice(("/bin/", "/usr/local/bin/", "/app/")) + cname],
            "args": [
                f"--{rng.choice(_WORDS)}={rng.choice(_WORDS)}" for _ in range(rng.randrange(0, 8))
            ],
            "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
            "env": env,
            "resources": {
                "limits": {"cpu": cpu, "memory": mem},
                "requests": {"cpu": cpu, "memory": mem},
            },
            "volumeMounts": [],
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": rng.choice(("File", "FallbackToLogsOnError")),
            "imagePullPolicy": rng.choice(("IfNotPresent", "Always")),
        }
        if rng.random() < 0.7:
            container["readinessProbe"] = {
                "httpGet": {
                    "path": rng.choice(("/ready", "/readyz", "/health/ready")),
                    "port": port,
                    "scheme": "HTTP",
                },
                "timeoutSeconds": rng.randrange(1, 5),
                "periodSeconds": rng.choice((5, 10, 15)),
                "successThreshold": 1,
                "failureThreshold": 3,
            }
        containers.append((container, reg, cname, tag, digest))
    volumes: list[dict[str, Any]] = []
    for v in range(rng.randrange(0, 5)):
        vname = f"{rng.choice(_WORDS)}-{v}"
        kind = rng.choice(("configMap", "secret", "emptyDir", "persistentVolumeClaim"))
        if kind == "configMap":
            volumes.append(
                {"name": vname, "configMap": {"name": f"{name}-{vname}", "defaultMode": 420}}
            )
        elif kind == "secret":
            volumes.append(
                {"name": vname, "secret": {"secretName": f"{name}-{vname}", "defaultMode": 420}}
            )
        elif kind == "emptyDir":
            volumes.append({"name": vname, "emptyDir": {}})
        else:
            volumes.append({"name": vname, "persistentVolumeClaim": {"claimName": f"data-{name}"}})
        containers[0][0]["volumeMounts"].append(
            {"name": vname, "mountPath": f"/var/lib/{vname}", "readOnly": kind != "emptyDir"}
        )
    labels = {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/part-of": team,
        "app.kubernetes.io/version": containers[0][3],
    }
    for _ in range(rng.randrange(0, 5)):
        labels[f"{rng.choice(('acme.io', 'team', 'cost-center'))}/{rng.choice(_WORDS)}"] = (
            rng.choice(_WORDS)
        )
    annotations = {}
    if rng.random() < 0.6:
        annotations["prometheus.io/scrape"] = "true"
        annotations["prometheus.io/port"] = str(containers[0][0]["ports"][0]["containerPort"])
    if rng.random() < 0.4:
        annotations["kubectl.kubernetes.io/restartedAt"] = _stamp(
            1_760_000_000 + rng.randrange(10**7)
        )
    if rng.random() < 0.3:
        annotations["checksum/config"] = _hex(rng, 64)
    return {
        "name": name,
        "namespace": f"{team}-{rng.choice(('prod', 'staging', 'dev'))}",
        "hash": "".join(rng.choice(_HASH_ALPHABET) for _ in range(rng.choice((9, 10)))),
        "rs_uid": _uid(rng),
        "containers": containers,
        "volumes": volumes,
        "labels": labels,
        "annotations": annotations,
        "sa": rng.choice((name, "default")),
        "born": 1_760_000_000 + rng.randrange(10**7),
    }


def _real_pod(rng: Any, wl: dict[str, Any], rv: int) -> dict[str, Any]:
    taken = wl.setdefault("suffixes", set())
    while (suffix := "".join(rng.choice(_HASH_ALPHABET) for _ in range(5))) in taken:
        pass  # the ReplicaSet controller's names are unique too (the server refuses a duplicate)
    taken.add(suffix)
    name = f"{wl['name']}-{wl['hash']}-{suffix}"
    uid = _uid(rng)
    created = wl["born"] + rng.randrange(10**6)
    scheduled = created + rng.randrange(0, 3)
    started = scheduled + rng.randrange(1, 20)
    ready = started + rng.randrange(1, 90)
    node_ip = f"10.{rng.randrange(0, 64)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    pod_ip = f"10.{rng.randrange(64, 128)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    node = rng.choice(
        (
            lambda: f"ip-{node_ip.replace('.', '-')}.eu-west-1.compute.internal",
            lambda: f"gke-prod-pool-{rng.randrange(1, 5)}-{_hex(rng, 8)}-{_hex(rng, 4)}",
            lambda: f"aks-nodepool1-{rng.randrange(10**7, 10**8)}-vmss{rng.randrange(36**6):06x}",
        )
    )()
    labels = {**wl["labels"], "pod-template-hash": wl["hash"]}
    containers = [c[0] for c in wl["containers"]]
    statuses = []
    for c, reg, cname, tag, digest in wl["containers"]:
        restarts = rng.choice((0, 0, 0, 0, 1, 2, 7))
        status: dict[str, Any] = {
            "name": c["name"],
            "state": {"running": {"startedAt": _stamp(started + rng.randrange(0, 5))}},
            "lastState": {},
            "ready": True,
            "restartCount": restarts,
            "image": f"{reg}/{cname}:{tag}",
            "imageID": f"{reg}/{cname}@sha256:{digest}",
            "containerID": f"containerd://{_hex(rng, 64)}",
            "started": True,
        }
        if restarts:
            status["lastState"] = {
                "terminated": {
                    "exitCode": rng.choice((1, 137, 143)),
                    "reason": rng.choice(("Error", "OOMKilled")),
                    "startedAt": _stamp(started - rng.randrange(100, 10**5)),
                    "finishedAt": _stamp(started - rng.randrange(1, 100)),
                    "containerID": f"containerd://{_hex(rng, 64)}",
                }
            }
        statuses.append(status)
    cond_times = {
        "PodReadyToStartContainers": started,
        "Initialized": scheduled,
        "Ready": ready,
        "ContainersReady": ready,
        "PodScheduled": scheduled,
    }
    f_containers = {
        f'k:{{"name":"{c["name"]}"}}': {
            ".": {},
            "f:args": {},
            "f:command": {},
            "f:env": {},
            "f:image": {},
            "f:imagePullPolicy": {},
            "f:name": {},
            "f:ports": {},
            "f:resources": {},
            "f:volumeMounts": {},
        }
        for c in containers
    }
    managed = [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": _stamp(created),
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {
                    "f:generateName": {},
                    "f:labels": {".": {}, **{f"f:{k}": {} for k in labels}},
                    "f:ownerReferences": {".": {}, f'k:{{"uid":"{wl["rs_uid"]}"}}': {}},
                },
                "f:spec": {
                    "f:containers": f_containers,
                    "f:dnsPolicy": {},
                    "f:enableServiceLinks": {},
                    "f:restartPolicy": {},
                    "f:schedulerName": {},
                    "f:securityContext": {},
                    "f:serviceAccount": {},
                    "f:serviceAccountName": {},
                    "f:terminationGracePeriodSeconds": {},
                    "f:volumes": {},
                },
            },
        },
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": _stamp(ready + rng.randrange(0, 3)),
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
                        for t in cond_times
                    },
                    "f:containerStatuses": {},
                    "f:hostIP": {},
                    "f:hostIPs": {},
                    "f:phase": {},
                    "f:podIP": {},
                    "f:podIPs": {".": {}, f'k:{{"ip":"{pod_ip}"}}': {".": {}, "f:ip": {}}},
                    "f:startTime": {},
                }
            },
        },
    ]
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "generateName": f"{wl['name']}-{wl['hash']}-",
            "namespace": wl["namespace"],
            "uid": uid,
            "resourceVersion": str(rv),
            "creationTimestamp": _stamp(created),
            "labels": labels,
            "annotations": wl["annotations"],
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{wl['name']}-{wl['hash']}",
                    "uid": wl["rs_uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": managed,
        },
        "spec": {
            "volumes": [
                *wl["volumes"],
                {
                    "name": f"kube-api-access-{suffix}",
                    "projected": {
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
                        "defaultMode": 420,
                    },
                },
            ],
            "containers": containers,
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": wl["sa"],
            "serviceAccount": wl["sa"],
            "nodeName": node,
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": f"node.kubernetes.io/{k}",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
                for k in ("not-ready", "unreachable")
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
                    "lastTransitionTime": _stamp(s),
                }
                for t, s in cond_times.items()
            ],
            "hostIP": node_ip,
            "hostIPs": [{"ip": node_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": _stamp(scheduled),
            "containerStatuses": statuses,
            "qosClass": "Guaranteed",
        },
    }


def make_real_items(count: int, first_rv: int = 1_000_000, seed: int = 22) -> list[bytes]:
    """``count`` realistic Pods (see above) of WORKLOADS workloads, in a fixed order for a seed:
    the same bytes on every run."""
    import random

    rng = random.Random(seed)
    workloads = [_workload(rng, w) for w in range(WORKLOADS)]
    weights = [rng.paretovariate(1.2) for _ in workloads]  # a few large, many small workloads
    picks = rng.choices(workloads, weights, k=count)
    encode = msgspec.json.encode
    return [encode(_real_pod(rng, wl, first_rv + i)) for i, wl in enumerate(picks)]
