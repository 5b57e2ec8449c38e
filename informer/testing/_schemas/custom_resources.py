"""A custom resource version's structural schema applied to writes, as the apiextensions server
applies it: decoding (pruning unknown fields, with ``fieldValidation`` deciding whether they are
refused, reported or dropped silently; defaulting), then validation of the stored form (the
OpenAPI schema, list types, CEL rules) into one 422 with every cause.

On update, validation ratchets (``CRDValidationRatcheting``, on by default since v1.30): an
error at a path whose value the update did not change is not reported.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from informer.resource import Resource
from informer.testing import _status as st
from informer.testing._query.write_options import WriteOptions
from informer.testing._schemas import structural
from informer.testing._schemas.cel_rules import evaluate_rules
from informer.testing._schemas.embedded import embedded_errors
from informer.testing._schemas.list_types import list_type_errors
from informer.testing._schemas.openapi_validation import FieldError, SchemaValidator

__all__ = ["CustomResourceSchema"]

Json = dict[str, Any]
_MISSING = object()


class CustomResourceSchema:
    """The ``openAPIV3Schema`` of one served version of a CRD, ready to apply."""

    def __init__(self, resource: Resource, schema: Json) -> None:
        self.resource = resource
        self.schema = schema
        self._validator = SchemaValidator(schema)
        self.has_defaults = '"default"' in json.dumps(schema)
        """Whether any node has a ``default`` (reads need defaulting)."""

    def decode(self, obj: Json, options: WriteOptions | None) -> Json:
        """``obj`` pruned and defaulted. With ``options`` (an HTTP write): an unknown field is a
        400 under ``fieldValidation=Strict`` (422 for a patch) and a warning under ``Warn``."""
        pruned, unknown = structural.prune(obj, self.schema)
        problems = options.field_problems(unknown) if options is not None else []
        if problems and options is not None:
            # without the parameter a real v1.36 server pruned silently (write-semantics)
            mode = options.field_validation if options.field_validation_given else "Ignore"
            if options.apply:
                mode = options.field_validation
            if mode == "Strict":
                kind = self.resource.kind
                listed = ", ".join(problems)
                if options.patch_type:  # the patched object is what is decoded: 422
                    patched = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
                    raise st.invalid_patch(patched, f"strict decoding error: {listed}")
                raise st.bad_request(
                    f'{kind} in version "{self.resource.version}" cannot be handled as a '
                    f"{kind}: strict decoding error: {listed}"
                )
            if mode == "Warn":
                options.warnings.extend(problems)
        result = structural.default(copy.deepcopy(pruned), self.schema)
        assert isinstance(result, dict)
        return result

    def default(self, obj: Json) -> Json:
        """``obj`` with defaults applied (as read from storage)."""
        result = structural.default(copy.deepcopy(obj), self.schema)
        assert isinstance(result, dict)
        return result

    def check(self, data: Json, old: Json | None, options: WriteOptions) -> None:
        """422 Invalid with every cause when ``data`` (the object to store) breaks the schema,
        a list type or a CEL rule; CEL rules that cannot be evaluated here add warnings."""
        errors = self._validator.validate(data)
        errors.extend(embedded_errors(self.schema, data))
        errors.extend(list_type_errors(self.schema, data))
        outcome = evaluate_rules(self.schema, data, old if old is not None else _MISSING)
        errors.extend(outcome.errors)
        options.warnings.extend(outcome.warnings)
        if old is not None:
            errors = [e for e in errors if not _unchanged(e, data, old)]
        if errors:
            name = str((data.get("metadata") or {}).get("name") or "")
            raise st.invalid_object(self.resource, self.resource.kind, name, errors)


def _unchanged(error: FieldError, new: Json, old: Json) -> bool:
    """Whether the value an error is about is the same in ``old`` (ratcheting)."""
    path = error[1]
    if not path or path == "<nil>":
        return False
    return bool(_lookup(new, path) == _lookup(old, path))


def _lookup(obj: Any, path: str) -> Any:
    node = obj
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("[") and part.endswith("]"):
            try:
                index = int(part[1:-1])
            except ValueError:
                return _MISSING
            if not isinstance(node, list) or index >= len(node):
                return _MISSING
            node = node[index]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return _MISSING
    return node
