"""The order of the keys in the objects the apiserver answers with, as Go's encoders write them.

- Built-in objects are Go structs: ``encoding/json`` writes a struct's fields in the order the
  struct declares them, and a Go map (``metadata.labels``, ``annotations``, a ConfigMap's
  ``data``, ``nodeSelector``, ``resources.limits``, a CRD schema's ``properties``) with its keys
  sorted (byte order of their UTF-8 form, the order of Python's ``sorted``).
- Custom resources are ``map[string]interface{}`` (unstructured): every object is a Go map, so
  every key at every level is sorted, metadata and list envelopes included.

Which fields of a built-in are maps is read from the published schemas the strict decoder uses
(``known_fields``: an ``additionalProperties`` node is a map, ``properties`` a struct); a
type's plan is compiled once and visits only the paths under which a map can be.

The published schemas list a struct's properties alphabetically, not in the Go declaration
order, so that order is not known for every struct: a built-in's struct fields keep the order
the write gave them (the client's, then the server's defaulting, which adds fields in their
Go order), except the metadata types every object carries, whose Go order is written below
(``ObjectMeta``, ``OwnerReference``, ``ManagedFieldsEntry``, from k8s.io/apimachinery's
``types.go``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

import msgspec

from informer.testing._schemas.known_fields import ANY, QUANTITY, Node, definition_node, type_node

__all__ = ["Order", "builtin_order", "sorted_copy"]

Json = dict[str, Any]
Order = Callable[[Json], Json]

_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1."
_GO_ORDER: Final[dict[str, tuple[str, ...]]] = {
    _META + "ObjectMeta": (
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    ),
    _META + "OwnerReference": (
        "apiVersion",
        "kind",
        "name",
        "uid",
        "controller",
        "blockOwnerDeletion",
    ),
    _META + "ManagedFieldsEntry": (
        "manager",
        "operation",
        "apiVersion",
        "time",
        "fieldsType",
        "fieldsV1",
        "subresource",
    ),
}
"""Go declaration order of the metadata structs (the schemas list them alphabetically)."""

_sorted_encode = msgspec.json.Encoder(order="sorted").encode
_decode = msgspec.json.decode


def sorted_copy(value: Json) -> Json:
    """``value`` with every key at every level sorted (a custom resource as the apiserver
    writes it)."""
    copied: Json = _decode(_sorted_encode(value))
    return copied


class _Rank(dict[str, int]):
    """Positions of a struct's fields in Go order; a field the type does not declare goes
    after them (``sorted`` is stable: such fields keep the order they were given in)."""

    def __missing__(self, key: str) -> int:
        return len(self)


class _Plan:
    """What to do to a value of one type: a map's keys sorted (``sort``, with its values'
    plan), a struct's fields put in Go order (``rank``) and the ``fields`` with work below them
    done, or a list's ``items``. Only types under which there is something to do get a plan."""

    __slots__ = ("fields", "items", "leaf", "rank", "sort", "values")

    def __init__(self) -> None:
        self.sort = False
        self.leaf = False
        """A map whose values have no plan (``sort`` and no ``values``)."""
        self.values: _Plan | None = None
        self.rank: _Rank | None = None
        self.fields: tuple[tuple[str, _Plan], ...] = ()
        self.items: _Plan | None = None


def _apply(value: Any, plan: _Plan) -> Any:
    """``value`` in the plan's order: ``value`` itself when it already is (the common case of
    a stored object written again), else a copy of what changed (copy on write)."""
    kind = type(value)
    if kind is dict:
        keys = list(value)
        if plan.sort:
            ordered = sorted(keys)
            sub = plan.values
            if sub is None:
                return value if ordered == keys else {key: value[key] for key in ordered}
            changed = ordered != keys
            out: dict[str, Any] = {}
            for key in ordered:
                item = value[key]
                out[key] = done = _apply(item, sub)
                changed = changed or done is not item
            return out if changed else value
        rank = plan.rank
        copied: dict[str, Any] | None = None
        if rank is not None:
            ordered = sorted(keys, key=rank.__getitem__)
            if ordered != keys:
                copied = {key: value[key] for key in ordered}
        for key, field in plan.fields:
            item = value.get(key)
            if item is not None:
                if field.leaf:  # a map of scalars (labels, data): sorted here, no call
                    if type(item) is not dict:
                        continue
                    listed_keys = list(item)
                    ordered = sorted(listed_keys)
                    if ordered == listed_keys:
                        continue
                    done = {k: item[k] for k in ordered}
                else:
                    done = _apply(item, field)
                if done is not item:
                    if copied is None:
                        copied = dict(value)
                    copied[key] = done
        return value if copied is None else copied
    if kind is list and plan.items is not None:
        items = plan.items
        listed: list[Any] | None = None
        for index, item in enumerate(value):
            done = _apply(item, items)
            if done is not item:
                if listed is None:
                    listed = list(value)
                listed[index] = done
        return value if listed is None else listed
    return value


def _children(node: Node) -> list[Node]:
    found = list(node.fields.values()) if node.fields is not None else []
    if node.items is not None:
        found.append(node.items)
    if node.values is not None:
        found.append(node.values)
    return [child for child in found if child is not ANY and child is not QUANTITY]


class _Compiler:
    def __init__(self) -> None:
        self.orders: dict[int, tuple[str, ...]] = {}
        for name, order in _GO_ORDER.items():
            known = definition_node(name)
            if known is not None:
                self.orders[id(known)] = order
        self.plans: dict[int, _Plan] = {}

    def plan(self, root: Node) -> _Plan | None:
        """The plan of ``root``'s type, None when nothing under it is a map or ordered."""
        reachable: dict[int, Node] = {}
        pending = [root]
        while pending:
            node = pending.pop()
            if id(node) not in reachable:
                reachable[id(node)] = node
                pending.extend(_children(node))
        busy = {
            key for key, node in reachable.items() if node.values is not None or key in self.orders
        }
        changed = True
        while changed:  # a type has work when one of its children has (types are recursive)
            changed = False
            for key, node in reachable.items():
                if key not in busy and any(id(c) in busy for c in _children(node)):
                    busy.add(key)
                    changed = True
        return self._build(root, busy) if id(root) in busy else None

    def _build(self, node: Node, busy: set[int]) -> _Plan:
        known = self.plans.get(id(node))
        if known is not None:
            return known
        plan = self.plans[id(node)] = _Plan()  # before its children: types refer to themselves
        if node.values is not None:
            plan.sort = True
            if id(node.values) in busy:
                plan.values = self._build(node.values, busy)
            else:
                plan.leaf = True
        elif node.items is not None:
            if id(node.items) in busy:
                plan.items = self._build(node.items, busy)
        elif node.fields is not None:
            order = self.orders.get(id(node))
            if order is not None:
                plan.rank = _Rank({key: index for index, key in enumerate(order)})
            plan.fields = tuple(
                (key, self._build(child, busy))
                for key, child in node.fields.items()
                if id(child) in busy
            )
        return plan


@functools.cache
def _compiler() -> _Compiler:
    return _Compiler()


def _meta_only() -> _Plan:
    """Without the published schemas: metadata in Go order, its labels and annotations sorted."""
    labels = _Plan()
    labels.sort = labels.leaf = True
    meta = _Plan()
    meta.rank = _Rank({key: index for index, key in enumerate(_GO_ORDER[_META + "ObjectMeta"])})
    meta.fields = (("labels", labels), ("annotations", labels))
    root = _Plan()
    root.fields = (("metadata", meta),)
    return root


@functools.cache
def builtin_order(group: str, version: str, kind: str) -> Order:
    """The reordering of a built-in kind's objects (one plan per kind, compiled once)."""
    node = type_node(group, version, kind)
    plan = _compiler().plan(node) if node is not None else _meta_only()
    if plan is None:
        return _identity
    compiled = plan

    def order(data: Json) -> Json:
        ordered: Json = _apply(data, compiled)
        return ordered

    return order


def _identity(data: Json) -> Json:
    return data
