"""A kopf operator for the interop test (run as ``kopf run --standalone``): its create handler
marks the object's status, its delete handler leaves a ConfigMap behind as evidence."""

from __future__ import annotations

from typing import Any

import kopf
from kubernetes import client, config


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.watching.server_timeout = 30
    settings.posting.level = 0


@kopf.on.create("kopf.dev", "v1", "kopfexamples")
def created(spec: Any, **_: Any) -> dict[str, Any]:
    return {"seen": spec.get("field", "")}  # kopf stores it in status.created


@kopf.on.delete("kopf.dev", "v1", "kopfexamples")
def deleted(name: str, namespace: str, **_: Any) -> None:
    config.load_kube_config()
    with client.ApiClient() as api:
        client.CoreV1Api(api).create_namespaced_config_map(
            namespace,
            {"metadata": {"name": f"deleted-{name}"}, "data": {"by": "kopf"}},
        )
