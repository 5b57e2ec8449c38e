"""``meta.k8s.io/v1`` Table answers (``kubectl get``): the columns kubectl shows per type.

A client asks for a Table with ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``; rows
carry the cells and, by default (``includeObject=Metadata``), the object's metadata as a
``PartialObjectMetadata``. Cells are computed as the real printers compute them
(pkg/printers/internalversion); ages use ``duration.HumanDuration``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import msgspec

from informer.testing._catalog.specs import Column, ResourceSpec
from informer.testing._serving.content import prefers

__all__ = ["TableEvents", "human_duration", "table", "wants_table"]

Json = dict[str, Any]
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


def wants_table(accept: str) -> bool:
    """Whether an Accept header asks for a meta.k8s.io/v1 Table first."""
    return prefers(accept, "Table", "meta.k8s.io", "v1")


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = (s % 3600) // 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _path(obj: Json, path: str) -> Any:
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _age(obj: Json, now: datetime) -> str:
    stamp = _path(obj, "metadata.creationTimestamp")
    if not isinstance(stamp, str):
        return "<unknown>"
    try:
        created = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<unknown>"
    return human_duration((now - created).total_seconds())


def _containers(obj: Json) -> tuple[list[Any], list[Any]]:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return list(spec.get("containers") or []), list(status.get("containerStatuses") or [])


def _pod_ready(obj: Json, now: datetime) -> str:
    containers, statuses = _containers(obj)
    ready = sum(1 for s in statuses if isinstance(s, dict) and s.get("ready"))
    return f"{ready}/{len(containers)}"


def _pod_status(obj: Json, now: datetime) -> str:
    status = obj.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for s in status.get("containerStatuses") or []:
        state = (s or {}).get("state") or {}
        waiting = state.get("waiting") or {}
        if waiting.get("reason"):
            reason = waiting["reason"]
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def _pod_restarts(obj: Json, now: datetime) -> int:
    _, statuses = _containers(obj)
    return sum(int((s or {}).get("restartCount") or 0) for s in statuses)


def _data_count(obj: Json, now: datetime) -> int:
    return len(obj.get("data") or {}) + len(obj.get("binaryData") or obj.get("stringData") or {})


def _ready_of_replicas(obj: Json, now: datetime) -> str:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    wanted = spec.get("replicas", 1)
    return f"{status.get('readyReplicas') or 0}/{wanted}"


def _service_type(obj: Json, now: datetime) -> str:
    return str((obj.get("spec") or {}).get("type") or "ClusterIP")


def _service_external(obj: Json, now: datetime) -> str:
    spec = obj.get("spec") or {}
    ips = list(spec.get("externalIPs") or [])
    if spec.get("type") == "ExternalName":
        return str(spec.get("externalName") or "<none>")
    if spec.get("type") == "LoadBalancer":
        ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        ips += [i.get("ip") or i.get("hostname") for i in ingress if isinstance(i, dict)]
        return ",".join(str(i) for i in ips) if ips else "<pending>"
    return ",".join(str(i) for i in ips) if ips else "<none>"


def _service_ports(obj: Json, now: datetime) -> str:
    ports = []
    for port in (obj.get("spec") or {}).get("ports") or []:
        text = f"{port.get('port')}"
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        ports.append(f"{text}/{port.get('protocol') or 'TCP'}")
    return ",".join(ports) if ports else "<none>"


def _job_status(obj: Json, now: datetime) -> str:
    status = obj.get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("status") == "True" and condition.get("type") in ("Complete", "Failed"):
            return str(condition["type"])
    return "Running"


def _job_completions(obj: Json, now: datetime) -> str:
    spec = obj.get("spec") or {}
    succeeded = (obj.get("status") or {}).get("succeeded") or 0
    wanted = spec.get("completions")
    return f"{succeeded}/{wanted if wanted is not None else 1}"


_COMPUTED: dict[str, Callable[[Json, datetime], Any]] = {
    "@age": _age,
    "@pod-ready": _pod_ready,
    "@pod-status": _pod_status,
    "@pod-restarts": _pod_restarts,
    "@data-count": _data_count,
    "@ready-of-replicas": _ready_of_replicas,
    "@service-type": _service_type,
    "@service-external-ips": _service_external,
    "@service-ports": _service_ports,
    "@job-status": _job_status,
    "@job-completions": _job_completions,
}


def _cell(column: Column, obj: Json, now: datetime) -> Any:
    computed = _COMPUTED.get(column.path)
    if computed is not None:
        return computed(obj, now)
    value = _path(obj, column.path.lstrip("."))
    if value is None:
        return {"string": "<none>", "integer": 0}.get(column.type)
    return value


def _partial(obj: Json) -> Json:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def table(
    spec: ResourceSpec,
    objects: Iterable[Json],
    list_meta: Json,
    include_object: str = "Metadata",
    now: datetime | None = None,
    headers: bool = True,
) -> Json:
    """A Table of ``objects`` with ``spec``'s columns; ``list_meta`` is the list's metadata;
    without ``headers`` the column definitions are left out (watch events after the first)."""
    now = now or datetime.now(UTC)
    columns = spec.columns
    rows = []
    for obj in objects:
        row: Json = {"cells": [_cell(c, obj, now) for c in columns]}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = _partial(obj)
        rows.append(row)
    if not headers:
        return {
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": list_meta,
            "columnDefinitions": None,
            "rows": rows,
        }
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": [
            {
                "name": c.name,
                "type": c.type,
                "format": c.format,
                "description": c.description,
                "priority": c.priority,
            }
            for c in columns
        ],
        "rows": rows,
    }


class TableEvents:
    """Re-encodes watch lines for a client that asked for Tables (``kubectl get -w``): each
    event's object becomes a one-row Table, with column definitions in the first event only."""

    def __init__(self, spec: ResourceSpec, include_object: str = "Metadata") -> None:
        self.spec = spec
        self.include_object = include_object
        self.first = True

    def __call__(self, lines: list[bytes]) -> list[bytes]:
        converted = []
        for line in lines:
            event = _decode(line)
            obj = event.get("object") or {}
            if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                meta = {"resourceVersion": (obj.get("metadata") or {}).get("resourceVersion", "")}
                event["object"] = table(
                    self.spec, [obj], meta, self.include_object, headers=self.first
                )
                self.first = False
            converted.append(_encode(event) + b"\n")
        return converted
