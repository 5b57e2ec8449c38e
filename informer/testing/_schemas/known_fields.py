"""The fields of the built-in types, from their published schemas (``builtin_schemas``), and the
two ways the apiserver finds fields that are not theirs:

- ``strict_problems``: the strict JSON decoder's complaints (``unknown field "spec.replicass"``,
  ``duplicate field "spec.replicas"``), in the order the decoder meets them in the body, each
  once, at most 100 (sigs.k8s.io/json); the value of an unknown field is not looked into, nor
  are the opaque values that decode themselves (RawExtension, FieldsV1, Patch, JSON);
- ``undeclared``: server-side apply's typed conversion (structured-merge-diff), which names
  a field by its path there (``.spec.template.spec.containers[name="c"].imagePullPolcy``).

``prune`` drops unknown fields, as decoding into the Go types does. A type's tree is compiled
once from the schemas and shared (the write path walks it on every HTTP write of a built-in).
Without the ``openapi`` extra (kubernetes-validate) no type is known and nothing is checked.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Final

from informer.testing._schemas.builtin_schemas import builtin_schemas

__all__ = [
    "ANY",
    "QUANTITY",
    "Node",
    "ObjectPairs",
    "definition_node",
    "prune",
    "schema_duplicates",
    "smd_value",
    "strict_problems",
    "type_node",
    "typed_problems",
    "undeclared",
]

Json = dict[str, Any]

_DEFS: Final = "#/$defs/"
_OPAQUE: Final = frozenset(
    {
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    }
)
"""Types described as bare objects that decode themselves (any content): not empty structs."""
_MAX_PROBLEMS: Final = 100
_QUANTITY: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"


class Node:
    """One type: a struct (``fields``), a list (``items``), a map (``values``) or a value the
    decoder does not look into (``ANY``: scalars and opaque types)."""

    __slots__ = ("fields", "is_set", "items", "keys", "values")

    def __init__(self) -> None:
        self.fields: dict[str, Node] | None = None
        self.items: Node | None = None
        self.values: Node | None = None
        self.keys: tuple[str, ...] = ()
        """A list's ``x-kubernetes-list-map-keys`` (server-side apply names items by them)."""
        self.is_set = False


ANY: Final = Node()
QUANTITY: Final = Node()
"""A ``resource.Quantity``: a value to the decoders, canonicalised on write (``quantities``)."""


class ObjectPairs(dict[str, Any]):
    """A JSON object decoded with every key it names, in order, repeated ones included
    (``pairs``): the body as the strict decoder reads it."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs


class _Compiler:
    def __init__(self, definitions: dict[str, Json]) -> None:
        self.definitions = definitions
        self.named: dict[str, Node] = {}

    def definition(self, name: str) -> Node:
        node = self.named.get(name)
        if node is not None:
            return node
        if name == _QUANTITY:
            return QUANTITY
        schema = self.definitions.get(name)
        if schema is None or name in _OPAQUE or _untyped(schema):
            self.named[name] = ANY
            return ANY
        node = self.named[name] = Node()  # before its fields: types refer to themselves
        self._fill(node, schema)
        return node

    def schema(self, schema: Json) -> Node:
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFS):
            return self.definition(ref[len(_DEFS) :])
        if not any(key in schema for key in ("properties", "items", "additionalProperties")):
            return _empty_struct() if _is_object(schema) else ANY
        node = Node()
        self._fill(node, schema)
        return node

    def _fill(self, node: Node, schema: Json) -> None:
        properties = schema.get("properties")
        items = schema.get("items")
        values = schema.get("additionalProperties")
        if isinstance(properties, dict):
            node.fields = {key: self.schema(sub) for key, sub in properties.items()}
        elif isinstance(items, dict):
            node.items = self.schema(items)
            list_type = schema.get("x-kubernetes-list-type")
            node.is_set = list_type == "set"
            if list_type == "map":
                node.keys = tuple(sorted(schema.get("x-kubernetes-list-map-keys") or ()))
        elif isinstance(values, dict):
            node.values = self.schema(values)
        elif _is_object(schema):
            node.fields = {}  # an empty struct: every field is unknown


def _untyped(schema: Json) -> bool:
    """Described by neither type nor properties (IntOrString's and Quantity's ``oneOf``,
    apiextensions' JSON and JSONSchemaPropsOr*): decoded by their own code."""
    return not any(key in schema for key in ("type", "properties", "$ref"))


def _is_object(schema: Json) -> bool:
    kinds = schema.get("type")
    return kinds == "object" or (isinstance(kinds, list) and "object" in kinds)


def _empty_struct() -> Node:
    node = Node()
    node.fields = {}
    return node


@functools.cache
def _compiler() -> _Compiler | None:
    published = builtin_schemas()
    return _Compiler(published.definitions) if published is not None else None


@functools.cache
def type_node(group: str, version: str, kind: str) -> Node | None:
    """The tree of a built-in kind; None when its schema is not known."""
    compiler = _compiler()
    if compiler is None:
        return None
    published = builtin_schemas()
    assert published is not None
    name = published.name_of(group, version, kind)
    return compiler.definition(name) if name is not None else None


@functools.cache
def definition_node(name: str) -> Node | None:
    """The tree of one published definition (``io.k8s.api.core.v1.ResourceFieldSelector``)."""
    compiler = _compiler()
    if compiler is None or name not in compiler.definitions:
        return None
    return compiler.definition(name)


@functools.cache
def object_meta_node() -> Node | None:
    """ObjectMeta's tree (a custom resource's metadata is decoded into it)."""
    compiler = _compiler()
    if compiler is None:
        return None
    return compiler.definition("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")


# -- the strict decoder -----------------------------------------------------------------------


class _Found:
    __slots__ = ("problems", "seen", "unknown")

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.seen: set[str] = set()
        self.unknown = False

    def add(self, problem: str) -> None:
        if problem not in self.seen and len(self.problems) < _MAX_PROBLEMS:
            self.seen.add(problem)
            self.problems.append(problem)


def strict_problems(value: Any, node: Node, path: str = "") -> tuple[list[str], bool]:
    """The strict decoder's complaints about ``value`` (a plain decoded body, or one made of
    ``ObjectPairs`` to see its repeated keys) and whether any field is unknown."""
    found = _Found()
    _strict(value, node, path, found)
    return found.problems, found.unknown


def _strict(value: Any, node: Node, path: str, found: _Found) -> None:
    fields = node.fields
    if fields is not None:
        if not isinstance(value, dict):
            return
        ordered = isinstance(value, ObjectPairs)
        met: set[str] = set()
        for key, sub in _pairs(value):
            child = fields.get(key)
            if child is None:
                found.unknown = True
                found.add(f'unknown field "{_at(path, key)}"')
                continue
            if ordered:
                if key in met:
                    found.add(f'duplicate field "{_at(path, key)}"')
                met.add(key)
            if child is not ANY and sub is not None:
                _strict(sub, child, _at(path, key), found)
        return
    values = node.values
    if values is not None:
        if not isinstance(value, dict):
            return
        ordered = isinstance(value, ObjectPairs)
        if values is ANY and not ordered:
            return
        met = set()
        for key, sub in _pairs(value):
            at = _at(path, key)
            if ordered:
                if key in met:
                    found.add(f'duplicate field "{at}"')
                met.add(key)
            if values is not ANY and sub is not None:
                _strict(sub, values, at, found)
        return
    items = node.items
    if items is not None and items is not ANY and isinstance(value, list):
        for index, item in enumerate(value):
            _strict(item, items, f"{path}[{index}]", found)


def _pairs(value: dict[str, Any]) -> Any:
    return value.pairs if isinstance(value, ObjectPairs) else value.items()


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def prune(value: Any, node: Node) -> Any:
    """``value`` without the fields ``node`` does not have (a copy where anything is dropped)."""
    fields = node.fields
    if fields is not None:
        if not isinstance(value, dict):
            return value
        return {
            key: prune(sub, fields[key]) if fields[key] is not ANY else sub
            for key, sub in value.items()
            if key in fields
        }
    if node.values is not None and node.values is not ANY and isinstance(value, dict):
        return {key: prune(sub, node.values) for key, sub in value.items()}
    if node.items is not None and node.items is not ANY and isinstance(value, list):
        return [prune(item, node.items) for item in value]
    return value


# -- server-side apply's typed conversion -----------------------------------------------------


def undeclared(value: Any, node: Node, path: str = "") -> list[str]:
    """The paths of ``value``'s fields that ``node`` does not declare, as structured-merge-diff
    writes them (``.spec.ports[port=80,protocol="TCP"].nme``, ``.spec.args[0]``)."""
    problems = typed_problems(value, node, path, keys=False)
    return [problem.removesuffix(": field not declared in schema") for problem in problems]


def typed_problems(value: Any, node: Node, path: str = "", *, keys: bool = True) -> list[str]:
    """What structured-merge-diff's typed conversion of an applied configuration refuses, in
    the body's order: fields the type does not declare (``.spec.x: field not declared in
    schema``) and, with ``keys``, items of a keyed list or a set named twice (``.spec.containers:
    duplicate entries for key [name="c"]``; the list's path, the item as its keys name it)."""
    found: list[str] = []
    _undeclared(value, node, path, found, keys)
    return found


def _undeclared(value: Any, node: Node, path: str, found: list[str], keys: bool) -> None:
    if node.fields is not None and isinstance(value, dict):
        for key, sub in value.items():
            child = node.fields.get(key)
            if child is None:
                found.append(f"{path}.{key}: field not declared in schema")
            elif child is not ANY and sub is not None:
                _undeclared(sub, child, f"{path}.{key}", found, keys)
    elif node.values is not None and node.values is not ANY and isinstance(value, dict):
        for key, sub in value.items():
            _undeclared(sub, node.values, f"{path}.{key}", found, keys)
    elif node.items is not None and isinstance(value, list):
        seen: set[str] = set()
        for index, item in enumerate(value):
            element, keyed = _named_element(node, item, index)
            if keys and keyed:
                if element in seen:
                    found.append(f"{path}: duplicate entries for key {element}")
                seen.add(element)
            if node.items is not ANY:
                _undeclared(item, node.items, f"{path}{element}", found, keys)


_KEY_DEFAULTS: Final = {"protocol": "TCP"}
"""Defaults of list keys the apiserver's schemas declare (ports' ``protocol``): an item without
the key is named by its default (``[containerPort=80,protocol="TCP"]``)."""


def _element(node: Node, item: Any, index: int) -> str:
    return _named_element(node, item, index)[0]


def _named_element(node: Node, item: Any, index: int) -> tuple[str, bool]:
    """An item's path element: by its keys in a keyed list (those it has, else their
    defaults), by its value in a set, else by its index; and whether it is named (keyed)."""
    if node.keys and isinstance(item, dict):
        named = {
            key: item[key] if item.get(key) is not None else _KEY_DEFAULTS.get(key)
            for key in node.keys
        }
        present = {key: value for key, value in named.items() if value is not None}
        if present:
            listed = ",".join(f"{key}={smd_value(v)}" for key, v in present.items())
            return f"[{listed}]", True
    if node.is_set and item is not None and not isinstance(item, dict | list):
        return f"[={smd_value(item)}]", True
    return f"[{index}]", False


def smd_value(value: Any) -> str:
    """structured-merge-diff's ``value.ToString``: strings quoted, numbers and booleans bare."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    return str(value)


def schema_duplicates(value: Any, schema: Any, path: str = "") -> list[str]:
    """``typed_problems``' duplicate items for a value described by a structural schema (a
    custom resource's): items of an ``x-kubernetes-list-type: map`` list named twice by their
    ``x-kubernetes-list-map-keys`` (a missing key by its ``default``), values of a ``set``."""
    found: list[str] = []
    _schema_duplicates(value, schema, path, found)
    return found


def _schema_duplicates(value: Any, schema: Any, path: str, found: list[str]) -> None:
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = schema.get("additionalProperties")
        for key, sub in value.items():
            child = props.get(key, extra if key not in props else None)
            if sub is not None:
                _schema_duplicates(sub, child, f"{path}.{key}", found)
        return
    items = schema.get("items")
    if not isinstance(value, list) or not isinstance(items, dict):
        return
    list_type = schema.get("x-kubernetes-list-type")
    keys = sorted(str(k) for k in schema.get("x-kubernetes-list-map-keys") or ())
    found_props = items.get("properties")
    item_props: dict[str, Any] = found_props if isinstance(found_props, dict) else {}
    seen: set[str] = set()
    for index, item in enumerate(value):
        element = f"[{index}]"
        named = False
        if list_type == "map" and keys and isinstance(item, dict):
            present: dict[str, Any] = {}
            for key in keys:
                given = item.get(key)
                if given is None:
                    given = (item_props.get(key) or {}).get("default")
                if given is not None:
                    present[key] = given
            if present:
                listed = ",".join(f"{k}={smd_value(v)}" for k, v in present.items())
                element, named = f"[{listed}]", True
        elif list_type == "set" and item is not None and not isinstance(item, dict | list):
            element, named = f"[={smd_value(item)}]", True
        if named:
            if element in seen:
                found.append(f"{path}: duplicate entries for key {element}")
            seen.add(element)
        _schema_duplicates(item, items, f"{path}{element}", found)
