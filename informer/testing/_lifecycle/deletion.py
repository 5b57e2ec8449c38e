"""Object lifecycle rules of the generic registry: graceful deletion, finalizers, propagation
policies, and the namespace rules of the NamespaceLifecycle admission plugin.

- A DELETE of an object with finalizers (its own, or ``orphan``/``foregroundDeletion`` added by
  the propagation policy) does not remove it: it gets ``deletionTimestamp`` (now) and
  ``deletionGracePeriodSeconds: 0`` and stays, a MODIFIED event, until its last finalizer is
  removed by an update; then it goes (DELETED). A second DELETE changes nothing.
- Pods bound to a node are deleted gracefully: ``deletionTimestamp`` = now + the grace period
  (``gracePeriodSeconds``, else ``spec.terminationGracePeriodSeconds``, else 30). There is no
  kubelet here: such a pod stays Terminating until deleted with ``gracePeriodSeconds=0``.
- Once being deleted, an object accepts no new finalizer (422) and keeps its deletion stamps.
- Namespaces get ``spec.finalizers: [kubernetes]``, ``status.phase: Active`` and the
  ``kubernetes.io/metadata.name`` label; a DELETE makes them Terminating (the namespace
  controller in ``controllers`` empties them); ``default``, ``kube-system`` and ``kube-public``
  may not be deleted (403).
- Creating into a missing namespace is 404 ``namespaces "x" not found``; into a Terminating one
  403 Forbidden with the NamespaceTerminating cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal

from informer.resource import NAMESPACES, PODS, Resource
from informer.testing import _status as st
from informer.testing._catalog.specs import ResourceSpec
from informer.testing._lifecycle.finalizers import FOREGROUND, NAMESPACE_FINALIZER, ORPHAN

__all__ = [
    "IMMORTAL_NAMESPACES",
    "INITIAL_NAMESPACES",
    "DeleteOptions",
    "deletion_state",
    "namespace_object",
    "prepare_namespace",
    "update_rules",
]

Json = dict[str, Any]

INITIAL_NAMESPACES: Final = ("default", "kube-node-lease", "kube-public", "kube-system")
IMMORTAL_NAMESPACES: Final = frozenset({"default", "kube-system", "kube-public"})
_DELETION_STAMPS: Final = ("deletionTimestamp", "deletionGracePeriodSeconds")
_PROPAGATIONS: Final = ("Orphan", "Background", "Foreground")


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class DeleteOptions:
    """What a DELETE asks for (query parameters or a DeleteOptions body)."""

    propagation: Literal["Orphan", "Background", "Foreground"] | None = None
    grace_period: int | None = None
    resource_version: str | None = None
    uid: str | None = None

    @classmethod
    def parse(cls, query: dict[str, str], body: Any) -> DeleteOptions:
        """From a request's query and DeleteOptions body (the body wins, as in the real
        server's decoding order); 400/422 for values the real server refuses."""
        body = body if isinstance(body, dict) else {}
        pre = body.get("preconditions")
        pre = pre if isinstance(pre, dict) else {}
        propagation = body.get("propagationPolicy") or query.get("propagationPolicy")
        orphan = body.get("orphanDependents")
        if orphan is None and "orphanDependents" in query:
            orphan = query["orphanDependents"] in ("true", "True", "1")
        if propagation is not None and propagation not in _PROPAGATIONS:
            raise st.invalid_object(
                Resource("meta.k8s.io", "v1", "deleteoptions", "DeleteOptions"),
                "DeleteOptions",
                "",
                [st.not_supported("propagationPolicy", str(propagation), list(_PROPAGATIONS))],
            )
        if propagation is None and orphan is not None:
            propagation = "Orphan" if orphan else "Background"
        grace: Any = body.get("gracePeriodSeconds")
        if grace is None and query.get("gracePeriodSeconds"):
            try:
                grace = int(query["gracePeriodSeconds"])
            except ValueError:
                raise st.bad_request(
                    f'strconv.ParseInt: parsing "{query["gracePeriodSeconds"]}": invalid syntax'
                ) from None
        return cls(
            propagation,  # type: ignore[arg-type]  # checked against _PROPAGATIONS above
            int(grace) if grace is not None else None,
            pre.get("resourceVersion"),
            pre.get("uid"),
        )


def _graceful_period(resource: Resource, data: Json, options: DeleteOptions) -> int:
    """The grace period of this deletion: 0 but for pods bound to a node and still running."""
    if resource != PODS:
        return 0
    spec = data.get("spec") or {}
    phase = (data.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Failed", "Succeeded"):
        return 0
    if options.grace_period is not None:
        return max(options.grace_period, 0)
    return int(spec.get("terminationGracePeriodSeconds", 30))


def gc_finalizers(spec: ResourceSpec, finalizers: list[str], options: DeleteOptions) -> list[str]:
    """The finalizers a DELETE leaves (``deletionFinalizersForGarbageCollection``): an explicit
    policy decides; without one the object's own ``orphan`` or ``foregroundDeletion`` finalizer
    does (so a second plain DELETE keeps them); else the resource's default policy."""
    policy = options.propagation
    if policy is None:
        for finalizer in finalizers:
            if finalizer == ORPHAN:
                policy = "Orphan"
                break
            if finalizer == FOREGROUND:
                policy = "Foreground"
                break
        else:
            policy = "Orphan" if spec.propagation == "Orphan" else "Background"
    kept = [f for f in finalizers if f not in (ORPHAN, FOREGROUND)]
    if policy == "Orphan":
        kept.append(ORPHAN)
    elif policy == "Foreground":
        kept.append(FOREGROUND)
    return finalizers if set(kept) == set(finalizers) else kept


def deletion_state(
    spec: ResourceSpec, data: Json, options: DeleteOptions, now: datetime | None = None
) -> Json | None:
    """The object to store for this DELETE (being deleted), or None to remove it now.

    ``data`` is a copy of the current object; it is changed in place and returned.
    """
    resource = spec.resource
    meta = data["metadata"]
    moment = now or datetime.now(UTC)
    if meta.get("deletionTimestamp"):
        # already being deleted: a pending graceful deletion only takes a shorter grace period
        # (its finalizers stay); otherwise the finalizers follow the options again, and it goes
        # once neither a grace period nor a finalizer holds it
        pending = int(meta.get("deletionGracePeriodSeconds") or 0)
        if pending > 0:
            if options.grace_period is None or max(options.grace_period, 0) >= pending:
                return data
            started = _parse_stamp(meta["deletionTimestamp"]) - timedelta(seconds=pending)
            pending = max(options.grace_period, 0)
            meta["deletionGracePeriodSeconds"] = pending
            meta["deletionTimestamp"] = _stamp(started + timedelta(seconds=pending))
        finalizers = gc_finalizers(spec, list(meta.get("finalizers") or []), options)
        if pending == 0 and not finalizers:
            return None
        _set_finalizers(meta, finalizers)
        return data
    finalizers = gc_finalizers(spec, list(meta.get("finalizers") or []), options)
    if resource == NAMESPACES:
        if meta["name"] in IMMORTAL_NAMESPACES:
            raise st.forbidden_object(NAMESPACES, meta["name"], "this namespace may not be deleted")
        spec_finalizers = (data.get("spec") or {}).get("finalizers") or []
        if not spec_finalizers and not finalizers:
            return None
        data.setdefault("status", {})["phase"] = "Terminating"
    grace = _graceful_period(resource, data, options)
    if not finalizers and grace == 0 and resource != NAMESPACES:
        return None
    meta["deletionTimestamp"] = _stamp(moment + timedelta(seconds=grace))
    meta["deletionGracePeriodSeconds"] = grace
    if "generation" in meta:  # BeforeDelete / markAsDeleting bump it
        meta["generation"] = int(meta["generation"]) + 1
    _set_finalizers(meta, finalizers)
    return data


def _set_finalizers(meta: Json, finalizers: list[str]) -> None:
    if finalizers:
        meta["finalizers"] = finalizers
    else:
        meta.pop("finalizers", None)


def _parse_stamp(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _go_strings(values: list[str]) -> str:
    """A Go ``%#v`` of a []string, as the real message prints it."""
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def update_rules(resource: Resource, new: Json, old: Json) -> bool:
    """Apply the lifecycle rules of an update to ``new`` (in place); True when the update
    removed the last finalizer of an object being deleted (it must go now)."""
    old_meta = old["metadata"]
    meta = new["metadata"]
    if not old_meta.get("deletionTimestamp"):
        for key in _DELETION_STAMPS:
            meta.pop(key, None)
        return False
    for key in _DELETION_STAMPS:
        if key in old_meta:
            meta[key] = old_meta[key]
    added = [f for f in meta.get("finalizers") or [] if f not in (old_meta.get("finalizers") or [])]
    if added:
        raise st.invalid_object(
            resource,
            resource.kind,
            meta["name"],
            [
                st.forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {_go_strings(added)}",
                )
            ],
        )
    if meta.get("finalizers"):
        return False
    meta.pop("finalizers", None)
    if resource == NAMESPACES and ((new.get("spec") or {}).get("finalizers") or []):
        return False
    return int(meta.get("deletionGracePeriodSeconds") or 0) == 0


def prepare_namespace(data: Json) -> None:
    """What the namespace strategy sets on create: the ``kubernetes`` finalizer, phase Active,
    the ``kubernetes.io/metadata.name`` label."""
    meta = data["metadata"]
    labels = dict(meta.get("labels") or {})
    labels["kubernetes.io/metadata.name"] = meta["name"]
    meta["labels"] = labels
    spec = data.get("spec")
    spec = dict(spec) if isinstance(spec, dict) else {}
    spec.setdefault("finalizers", [NAMESPACE_FINALIZER])
    data["spec"] = spec
    data["status"] = {"phase": "Active"}


def namespace_object(name: str, created: str, uid: str) -> Json:
    """A fresh namespace as the server holds it (for the initial ones)."""
    data: Json = {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {"name": name, "uid": uid, "resourceVersion": "", "creationTimestamp": created},
    }
    prepare_namespace(data)
    return data
