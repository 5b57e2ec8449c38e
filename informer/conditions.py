"""Status conditions (``metav1.Condition``), kept as apimachinery's ``meta.SetStatusCondition``
keeps them.

Objects are read-only, so a reconcile takes a mutable copy of the conditions, changes it and
writes it back only when something changed::

    conditions = conditions_of(obj)
    if set_condition(
        conditions, "Ready", True, "Mirrored", observed_generation=obj["metadata"]["generation"]
    ):
        await client.patch_status(RESOURCE, obj.name, {"conditions": conditions}, namespace=ns)

``set_condition`` adds the condition, or updates the one of that ``type``: ``lastTransitionTime``
changes only when the status changes (so it says since when the condition has been what it is),
``reason``, ``message`` and ``observedGeneration`` follow the new values. It returns whether
anything changed, so an unchanged status is not written again (every write is an event for
every watcher of the object, and a new resourceVersion). A JSON merge patch replaces the whole
list, which is what a status writer owning its conditions wants.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "conditions_of",
    "find_condition",
    "is_condition_false",
    "is_condition_true",
    "remove_condition",
    "set_condition",
]

_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")  # metav1.Condition's pattern
_STATUSES = ("True", "False", "Unknown")


def conditions_of(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A mutable copy of ``obj``'s ``status.conditions`` (empty when it has none)."""
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    if not isinstance(conditions, Sequence) or isinstance(conditions, str):
        return []
    return [_thaw(c) for c in conditions if isinstance(c, Mapping)]


def find_condition(
    conditions: Sequence[Mapping[str, Any]] | None, type: str
) -> Mapping[str, Any] | None:
    """The condition of ``type``, or None."""
    for condition in conditions or ():
        if isinstance(condition, Mapping) and condition.get("type") == type:
            return condition
    return None


def is_condition_true(conditions: Sequence[Mapping[str, Any]] | None, type: str) -> bool:
    """Whether the condition of ``type`` is there with status ``True``."""
    found = find_condition(conditions, type)
    return found is not None and found.get("status") == "True"


def is_condition_false(conditions: Sequence[Mapping[str, Any]] | None, type: str) -> bool:
    """Whether the condition of ``type`` is there with status ``False``."""
    found = find_condition(conditions, type)
    return found is not None and found.get("status") == "False"


def set_condition(
    conditions: list[dict[str, Any]],
    type: str,
    status: bool | str,
    reason: str,
    message: str = "",
    *,
    observed_generation: int | None = None,
    now: datetime | None = None,
) -> bool:
    """Add or update the condition of ``type`` in ``conditions`` (in place); True if anything
    changed.

    ``status``: ``True``/``False`` or ``"True"``, ``"False"``, ``"Unknown"``. ``reason`` is a
    CamelCase word (``metav1.Condition``'s pattern), ``message`` free text (it is stored in the
    object, never logged). ``lastTransitionTime`` is set to ``now`` (default: the current UTC
    time, in seconds) when the condition is added or its status changes, and kept otherwise.
    ``observed_generation`` (the ``metadata.generation`` the status was computed from) is set
    when given, and left as it is when None. Raises ``ValueError`` on an invalid type, status or
    reason (the server would refuse the write).
    """
    if not isinstance(type, str) or not type:
        raise ValueError("a condition needs a type")
    value = ("True" if status else "False") if isinstance(status, bool) else status
    if value not in _STATUSES:
        raise ValueError(f"status must be True, False or Unknown, not {status!r}")
    if not isinstance(reason, str) or len(reason) > 1024 or not _REASON.match(reason):
        raise ValueError(f"reason must be a CamelCase word (metav1.Condition): {reason!r}")
    stamp = _timestamp(now)
    existing = next((c for c in conditions if c.get("type") == type), None)
    if existing is None:
        condition: dict[str, Any] = {"type": type, "status": value}
        if observed_generation is not None:
            condition["observedGeneration"] = observed_generation
        condition.update(lastTransitionTime=stamp, reason=reason, message=message)
        conditions.append(condition)
        return True
    changed = False
    if existing.get("status") != value:
        existing["status"] = value
        existing["lastTransitionTime"] = stamp
        changed = True
    elif not existing.get("lastTransitionTime"):
        existing["lastTransitionTime"] = stamp  # required by the API: repair a missing one
        changed = True
    for key, new in (("reason", reason), ("message", message)):
        if existing.get(key) != new:
            existing[key] = new
            changed = True
    if observed_generation is not None and existing.get("observedGeneration") != (
        observed_generation
    ):
        existing["observedGeneration"] = observed_generation
        changed = True
    return changed


def remove_condition(conditions: list[dict[str, Any]], type: str) -> bool:
    """Remove the condition of ``type`` from ``conditions`` (in place); True if it was there."""
    kept = [c for c in conditions if c.get("type") != type]
    removed = len(kept) != len(conditions)
    conditions[:] = kept
    return removed


def _timestamp(now: datetime | None) -> str:
    """RFC 3339 in UTC, in seconds (``metav1.Time``'s wire form)."""
    moment = now or datetime.now(UTC)
    if moment.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _thaw(value: Any) -> Any:
    """A plain, mutable copy of a (possibly read-only) JSON value."""
    if isinstance(value, Mapping):
        return {str(k): _thaw(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_thaw(v) for v in value]
    return copy.copy(value)
