"""Owner references and finalizers on plain objects, as controller-runtime's ``controllerutil``.

Pure functions over mappings (no I/O): ``set_controller_reference`` makes an object a dependent
of its controller (garbage collected with it, and mapped back to it by ``Controller(owns=...)``);
``has_finalizer`` / ``is_being_deleted`` read the deletion state. The writes that add or remove a
finalizer are ``Client.add_finalizer`` / ``Client.remove_finalizer``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "AlreadyOwned",
    "has_finalizer",
    "is_being_deleted",
    "owner_reference",
    "set_controller_reference",
]


class AlreadyOwned(ValueError):
    """The object already has a controller reference to another owner (one controller only)."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def owner_reference(
    owner: Mapping[str, Any], *, controller: bool = True, block_owner_deletion: bool = True
) -> dict[str, Any]:
    """An ``ownerReferences`` entry naming ``owner`` (which must carry kind, apiVersion, name
    and uid: an object read from the server)."""
    meta = _meta(owner)
    ref = {
        "apiVersion": owner.get("apiVersion"),
        "kind": owner.get("kind"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
    }
    missing = [k for k, v in ref.items() if not v]
    if missing:
        raise ValueError(
            f"the owner lacks {', '.join(missing)}: use the object the server returned"
        )
    ref["controller"] = controller
    ref["blockOwnerDeletion"] = block_owner_deletion
    return ref


def set_controller_reference(obj: dict[str, Any], owner: Mapping[str, Any]) -> dict[str, Any]:
    """Make ``owner`` the controller of ``obj`` (a dict, changed in place and returned).

    A reference to the same owner (by uid) is updated; a controller reference to another owner
    raises ``AlreadyOwned``. A namespaced owner must be in ``obj``'s namespace, and a
    cluster-scoped object cannot have a namespaced owner (``ValueError``): the garbage collector
    would delete the dependent at once.
    """
    ref = owner_reference(owner)
    meta = obj.setdefault("metadata", {})
    owner_ns = _meta(owner).get("namespace") or ""
    if owner_ns and owner_ns != (meta.get("namespace") or ""):
        raise ValueError(
            "a namespaced owner must be in the namespace of its dependent "
            f"({owner_ns!r} != {meta.get('namespace') or 'cluster scope'!r})"
        )
    refs = [dict(r) for r in meta.get("ownerReferences") or ()]
    for existing in refs:
        if existing.get("controller") and existing.get("uid") != ref["uid"]:
            raise AlreadyOwned(
                f"already controlled by {existing.get('kind')} {existing.get('name')!r}"
            )
    refs = [r for r in refs if r.get("uid") != ref["uid"]]
    refs.append(ref)
    meta["ownerReferences"] = refs
    return obj


def has_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    """Whether ``metadata.finalizers`` holds ``finalizer``."""
    return finalizer in (_meta(obj).get("finalizers") or ())


def is_being_deleted(obj: Mapping[str, Any]) -> bool:
    """Whether the object was deleted and waits for its finalizers (``deletionTimestamp``)."""
    return bool(_meta(obj).get("deletionTimestamp"))
