"""The order of the keys in the objects the apiserver answers with, as Go's encoders write them.

- Built-in objects are Go structs: ``encoding/json`` writes a struct's fields in the order the
  struct declares them, and a Go map (``metadata.labels``, ``annotations``, a ConfigMap's
  ``data``, ``nodeSelector``, ``resources.limits``, a CRD schema's ``properties``) with its keys
  sorted (byte order of their UTF-8 form, the order of Python's ``sorted``).
- Custom resources are ``map[string]interface{}`` (unstructured): every object is a Go map, so
  every key at every level is sorted, metadata and list envelopes included.

Which fields of a built-in are maps is read from the published schemas the strict decoder uses
(``known_fields``: an ``additionalProperties`` node is a map, ``properties`` a struct); a
type's plan is compiled once, visits only the paths under which a map can be, and is turned
into straight-line Python functions (``_Generator``), one per type.

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
from informer.testing._schemas.structural import OBJECT_META_ORDER

__all__ = ["Order", "builtin_order", "sorted_copy"]

Json = dict[str, Any]
Order = Callable[[Json], Json]

_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1."
_GO_ORDER: Final[dict[str, tuple[str, ...]]] = {
    _META + "ObjectMeta": OBJECT_META_ORDER,
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


class _Generator:
    """Turns plans into Python functions, one per plan (written out and compiled once, so an
    object is walked by straight-line code: a generic walk over the plans cost about twice as
    much). Each answers its value itself when it is already in order (the common case of a
    stored object written again), else a copy of what changed (copy on write)."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {}
        self.names: dict[int, str] = {}

    def function(self, plan: _Plan) -> Callable[[Any], Any]:
        name = self._name(plan)
        generated: Callable[[Any], Any] = self.namespace[name]
        return generated

    def _name(self, plan: _Plan) -> str:
        name = self.names.get(id(plan))
        if name is not None:
            return name
        name = self.names[id(plan)] = f"_f{len(self.names)}"
        lines = [f"def {name}(v):"]
        if plan.items is not None:
            lines += self._list(plan.items)
        elif plan.sort:
            lines += self._map(plan.values)
        else:
            lines += self._struct(name, plan)
        exec("\n".join(lines), self.namespace)  # source written above from the plan alone
        return name

    def _list(self, items: _Plan) -> list[str]:
        each = self._name(items)
        return [
            "    if type(v) is not list:",
            "        return v",
            "    c = None",
            "    for i, x in enumerate(v):",
            f"        y = {each}(x)",
            "        if y is not x:",
            "            if c is None:",
            "                c = list(v)",
            "            c[i] = y",
            "    return v if c is None else c",
        ]

    def _map(self, values: _Plan | None) -> list[str]:
        head = [
            "    if type(v) is not dict:",
            "        return v",
            "    k = list(v)",
            "    o = sorted(k)",
        ]
        if values is None:
            return [*head, "    if o == k:", "        return v", "    return {q: v[q] for q in o}"]
        each = self._name(values)
        return [
            *head,
            "    c = o != k",
            "    out = {}",
            "    for q in o:",
            "        x = v[q]",
            f"        out[q] = y = {each}(x)",
            "        if y is not x:",
            "            c = True",
            "    return out if c else v",
        ]

    def _struct(self, name: str, plan: _Plan) -> list[str]:
        lines = ["    if type(v) is not dict:", "        return v", "    c = None"]
        if plan.rank is not None:
            self.namespace[f"{name}_rank"] = plan.rank.__getitem__
            lines += [
                "    k = list(v)",
                f"    o = sorted(k, key={name}_rank)",
                "    if o != k:",
                "        c = {q: v[q] for q in o}",
            ]
        for key, field in plan.fields:
            lines += [f"    x = v.get({key!r})", "    if x is not None:"]
            if field.leaf:  # a map of scalars (labels, data): sorted here, no call
                lines += [
                    "        if type(x) is dict:",
                    "            kk = list(x)",
                    "            oo = sorted(kk)",
                    "            if oo != kk:",
                    "                if c is None:",
                    "                    c = dict(v)",
                    f"                c[{key!r}] = {{q: x[q] for q in oo}}",
                ]
            else:
                lines += [
                    f"        y = {self._name(field)}(x)",
                    "        if y is not x:",
                    "            if c is None:",
                    "                c = dict(v)",
                    f"            c[{key!r}] = y",
                ]
        return [*lines, "    return v if c is None else c"]


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
    generated = _generator().function(plan)

    def order(data: Json) -> Json:
        ordered: Json = generated(data)
        return ordered

    return order


@functools.cache
def _generator() -> _Generator:
    return _Generator()


def _identity(data: Json) -> Json:
    return data
