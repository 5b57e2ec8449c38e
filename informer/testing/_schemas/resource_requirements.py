"""Container resources as ``validateResourceRequirements`` (v1.36) checks them: resource
names (standard ones unprefixed, extended ones not under ``requests.``), amounts never negative
and whole for extended resources, requests at most their limits, and equal to them (and
limited) for resources that cannot be overcommitted (extended resources, huge pages), huge
pages only beside cpu or memory. The amounts are the decoded ones (canonical strings)."""

from __future__ import annotations

from typing import Any, Final

from informer.testing import _status as st
from informer.testing._schemas.quantity import Quantity, QuantityError, parse_quantity

__all__ = ["resource_errors"]

Error = tuple[str, str, str]

_COMPUTE: Final = frozenset({"cpu", "memory"})
_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_HUGE_PAGES: Final = "hugepages-"


def resource_errors(resources: Any, path: str, pod: bool) -> list[Error]:
    """The errors of one container's ``resources`` at ``path``; ``pod``: validated as a Pod
    is, after its defaulters made the limits its requests where none are named."""
    if not isinstance(resources, dict):
        return []
    errors: list[Error] = []
    limits: dict[str, Quantity] = {}
    compute = huge_pages = False
    given_limits = _mapping(resources.get("limits"))
    requests = dict(_mapping(resources.get("requests")))
    if pod:
        for name, value in given_limits.items():
            requests.setdefault(name, value)
    lists = {"limits": given_limits, "requests": requests}
    for kind in ("limits", "requests"):
        at = f"{path}.{kind}"
        for name, text in lists[kind].items():
            where = f"{at}[{name}]"
            errors.extend(_resource_name_errors(str(name), where))
            quantity = _parsed(text)
            if quantity is None:
                continue
            if quantity.sign() < 0:
                errors.append(_invalid(where, str(quantity), "must be greater than or equal to 0"))
            if _counted(name) and not quantity.milli_whole():
                errors.append(_invalid(where, str(quantity), "must be an integer"))
            compute = compute or name in _COMPUTE
            huge_pages = huge_pages or str(name).startswith(_HUGE_PAGES)
            if kind == "limits":
                limits[name] = quantity
                continue
            limit = limits.get(name)
            overcommit = _overcommit_allowed(str(name))
            if limit is None:
                if not overcommit:
                    errors.append(
                        (
                            "FieldValueRequired",
                            f"{path}.limits",
                            "Required value: Limit must be set for non overcommitable resources",
                        )
                    )
            elif quantity.compare(limit) != 0 and not overcommit:
                errors.append(
                    _invalid(at, str(quantity), f"must be equal to {name} limit of {limit}")
                )
            elif quantity.compare(limit) > 0:
                errors.append(
                    _invalid(
                        at, str(quantity), f"must be less than or equal to {name} limit of {limit}"
                    )
                )
    if huge_pages and not compute:
        errors.append(st.forbidden(path, "HugePages require cpu or memory"))
    return errors


def _parsed(value: Any) -> Quantity | None:
    try:
        return parse_quantity(value) if isinstance(value, str) else None
    except QuantityError:
        return None


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _counted(name: Any) -> bool:
    """``IsIntegerResourceName`` for a container's resources: extended resources."""
    return isinstance(name, str) and not _native(name) and not name.startswith("requests.")


def _overcommit_allowed(name: str) -> bool:
    return _native(name) and not name.startswith(_HUGE_PAGES)


def _resource_name_errors(name: str, where: str) -> list[Error]:
    if "/" not in name:
        if name not in _CONTAINER_RESOURCES and not name.startswith(_HUGE_PAGES):
            return [_invalid(where, name, "must be a standard resource for containers")]
    elif not _native(name) and name.startswith("requests."):
        return [_invalid(where, name, "doesn't follow extended resource name standard")]
    return []


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _invalid(field: str, value: str, detail: str) -> Error:
    return ("FieldValueInvalid", field, f'Invalid value: "{value}": {detail}')
