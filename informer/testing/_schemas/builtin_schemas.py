"""The published OpenAPI schemas of the built-in types, from the ``kubernetes-validate`` package
(the ``openapi`` extra): Kubernetes v1.36's definitions as JSON Schema, turned back into the
OpenAPI form the apiserver serves (single ``type``, ``$ref`` into ``definitions`` or
``components/schemas``, IntOrString and Quantity as strings), so ``kubectl explain`` and
client-side validation see the real fields. Without the package the server serves skeletons.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any, Final

import msgspec

__all__ = ["BuiltinSchemas", "builtin_schemas"]

Json = dict[str, Any]
_VERSION: Final = "v1.36.0-local"
_DEFS: Final = "#/$defs/"


class BuiltinSchemas:
    """The definitions, indexed by the group, version and kind they describe."""

    def __init__(self, definitions: dict[str, Json]) -> None:
        self.definitions = definitions
        self.by_gvk: dict[tuple[str, str, str], str] = {}
        for name, schema in definitions.items():
            for gvk in schema.get("x-kubernetes-group-version-kind") or []:
                key = (gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))
                self.by_gvk.setdefault(key, name)

    def name_of(self, group: str, version: str, kind: str) -> str | None:
        return self.by_gvk.get((group, version, kind))

    def closure(self, names: list[str], ref_prefix: str) -> dict[str, Json]:
        """The named definitions and every one they reference, in OpenAPI form."""
        found: dict[str, Json] = {}
        pending = list(names)
        while pending:
            name = pending.pop()
            if name in found or name not in self.definitions:
                continue
            refs: list[str] = []
            found[name] = _openapi(name, self.definitions[name], ref_prefix, refs)
            pending.extend(refs)
        return found


def _openapi(name: str, schema: Json, ref_prefix: str, refs: list[str]) -> Json:
    if "oneOf" in schema:  # IntOrString, Quantity: strings in the apiserver's documents
        converted: Json = {"type": "string"}
        if name.endswith("IntOrString"):
            converted["format"] = "int-or-string"
        if "description" in schema:
            converted["description"] = schema["description"]
        return converted
    converted = _convert(schema, ref_prefix, refs)
    assert isinstance(converted, dict)
    return converted


def _convert(node: Any, ref_prefix: str, refs: list[str]) -> Any:
    if isinstance(node, list):
        return [_convert(item, ref_prefix, refs) for item in node]
    if not isinstance(node, dict):
        return node
    out: Json = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str) and value.startswith(_DEFS):
            target = value[len(_DEFS) :]
            refs.append(target)
            out[key] = ref_prefix + target
        elif key == "type" and isinstance(value, list):
            kinds = [t for t in value if t != "null"]
            if kinds:
                out[key] = kinds[0]
        elif key in ("properties", "$defs", "patternProperties"):
            out[key] = {k: _convert(v, ref_prefix, refs) for k, v in value.items()}
        else:
            out[key] = _convert(value, ref_prefix, refs)
    return out


@functools.cache
def builtin_schemas() -> BuiltinSchemas | None:
    """The schemas, read once; None when ``kubernetes-validate`` is not installed."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"
    path = root / _VERSION / "_definitions.json"
    if not path.exists():
        candidates = sorted(root.glob("v*-local/_definitions.json"))
        if not candidates:
            return None
        path = candidates[-1]
    document = msgspec.json.decode(path.read_bytes())
    definitions = document.get("$defs") if isinstance(document, dict) else None
    if not isinstance(definitions, dict):
        return None
    return BuiltinSchemas(definitions)
