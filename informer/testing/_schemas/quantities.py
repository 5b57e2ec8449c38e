"""The ``resource.Quantity`` fields of a built-in object, as decoding it into the Go types
leaves them: each one parsed and printed canonically (``cpu: 1000m`` is stored as ``"1"``),
wherever the published schemas put one (containers' resources, LimitRanges, ResourceQuotas,
claims, volumes' size limits, node capacity, ...).

As the Go decoder does: a JSON string is parsed without its surrounding white space, any other
JSON value by its text (``0.5`` is ``"500m"``, ``true`` or an object is malformed), ``null`` in a
resource list is zero (``"0"``); a map of quantities comes out in key order (Go sorts map keys);
a ``resourceFieldRef`` without ``divisor`` gets ``"0"`` (a struct field without ``omitempty``).
The first malformed quantity in the body's order raises ``QuantityError``: the decoder stops
there. Custom resources are unstructured: nothing in them is a quantity.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Final

from informer.testing._schemas.known_fields import QUANTITY, Node, definition_node
from informer.testing._schemas.quantity import canonical, parse_quantity, round_up

__all__ = ["canonical_quantities"]

_GO_SPACE: Final = (
    " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""``unicode.IsSpace``, which ``strings.TrimSpace`` strips."""
_FIELD_SELECTOR: Final = "io.k8s.api.core.v1.ResourceFieldSelector"


def canonical_quantities(value: Any, node: Node, *, round_lists: bool = False) -> Any:
    """``value`` (an object of the type ``node`` describes) with its quantities canonical; a
    new container wherever something changed, ``value`` itself when nothing did.
    ``round_lists``: the type's defaulters round its resource lists up to 1m (core, apps, batch:
    ``SetDefaults_ResourceList``, so ``cpu: 1n`` is stored as ``"1m"``)."""
    if not _reaches(node):
        return value
    return _walk(value, node, round_lists)


def _walk(value: Any, node: Node, milli: bool) -> Any:
    if node is QUANTITY:
        return _quantity(value)
    fields = node.fields
    if fields is not None:
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] | None = None
        for key, sub in value.items():
            child = fields.get(key)
            if child is None or sub is None or not _reaches(child):
                continue
            new = _walk(sub, child, milli)
            if new is not sub:
                if out is None:
                    out = dict(value)
                out[key] = new
        if node is _field_selector() and "divisor" not in value:
            out = {**(out if out is not None else value), "divisor": "0"}
        return out if out is not None else value
    values = node.values
    if values is not None:
        if not isinstance(value, dict):
            return value
        if values is QUANTITY:
            changed = {key: _quantity(sub, in_map=True, milli=milli) for key, sub in value.items()}
            ordered = dict(sorted(changed.items()))
            if list(ordered.items()) == list(value.items()):
                return value
            return ordered
        mapped = {
            key: _walk(sub, values, milli) if sub is not None else sub for key, sub in value.items()
        }
        same = all(mapped[key] is sub for key, sub in value.items())
        return value if same else mapped
    items = node.items
    if items is not None and isinstance(value, list):
        walked = [_walk(item, items, milli) if item is not None else item for item in value]
        return value if all(a is b for a, b in zip(walked, value, strict=True)) else walked
    return value


def _quantity(value: Any, *, in_map: bool = False, milli: bool = False) -> Any:
    """One quantity's canonical string (raises ``QuantityError``); ``milli``: rounded up to 1m
    first."""
    if value is None:
        return "0" if in_map else None
    if isinstance(value, str):
        text = value.strip(_GO_SPACE)
    elif isinstance(value, bool) or not isinstance(value, int | float):
        text = json.dumps(value, separators=(",", ":"))
    else:
        text = repr(value) if isinstance(value, float) else str(value)
    printed = _printed(text, milli)
    return value if printed == value else printed


@functools.lru_cache(maxsize=4096)
def _printed(text: str, milli: bool) -> str:
    """The stored form of a quantity written as ``text`` (few distinct ones: cached)."""
    parsed = parse_quantity(text)
    return canonical(round_up(parsed, -3) if milli else parsed)


@functools.cache
def _field_selector() -> Node | None:
    return definition_node(_FIELD_SELECTOR)


_REACHES: dict[Node, bool] = {}
"""Whether a type holds a quantity anywhere below it (most do not: they are not walked)."""


def _reaches(node: Node) -> bool:
    found = _REACHES.get(node)
    if found is not None:
        return found
    # every type below ``node`` (types refer to themselves), then a fixpoint over them
    below: list[Node] = []
    seen: set[Node] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if current in seen or current in _REACHES:
            continue
        seen.add(current)
        below.append(current)
        pending.extend(_children(current))
    reach = {n: n is QUANTITY for n in below}
    changed = True
    while changed:
        changed = False
        for n in below:
            if not reach[n] and any(
                child is QUANTITY or reach.get(child) or _REACHES.get(child)
                for child in _children(n)
            ):
                reach[n] = changed = True
    _REACHES.update(reach)
    return _REACHES[node]


def _children(node: Node) -> list[Node]:
    children: list[Node] = []
    if node.fields:
        children.extend(node.fields.values())
    if node.values is not None:
        children.append(node.values)
    if node.items is not None:
        children.append(node.items)
    return children
