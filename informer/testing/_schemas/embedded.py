"""``x-kubernetes-embedded-resource`` objects of custom resources: they need ``apiVersion`` and
``kind`` (strings, a parseable group/version, a DNS-1035 kind in any case), as the
apiextensions server's embedded-resource validation requires (``metadata`` may be absent)."""

from __future__ import annotations

import re
from typing import Any, Final

from informer.testing._schemas.go_format import bad_value
from informer.testing._schemas.openapi_validation import FieldError, path_string
from informer.testing._schemas.walk import walk

__all__ = ["embedded_errors"]

_DNS1035: Final = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def embedded_errors(schema: Any, value: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    for node, item, path in walk(schema, value):
        if isinstance(item, dict) and node.get("x-kubernetes-embedded-resource"):
            _check(item, path, errors)
    return errors


def _check(obj: dict[str, Any], path: list[Any], errors: list[FieldError]) -> None:
    for key in ("apiVersion", "kind"):
        where = path_string([*path, key])
        if key not in obj:
            errors.append(("FieldValueRequired", where, "Required value: must not be empty"))
            continue
        value = obj[key]
        if not isinstance(value, str):
            errors.append(
                ("FieldValueInvalid", where, f"Invalid value: {bad_value(value)}: must be a string")
            )
        elif not value:
            errors.append(("FieldValueInvalid", where, 'Invalid value: "": must not be empty'))
        elif key == "apiVersion" and value.count("/") > 1:
            errors.append(
                (
                    "FieldValueInvalid",
                    where,
                    f"Invalid value: {bad_value(value)}: unexpected GroupVersion string: {value}",
                )
            )
        elif key == "kind" and not _DNS1035.match(value.lower()):
            errors.append(
                (
                    "FieldValueInvalid",
                    where,
                    f"Invalid value: {bad_value(value)}: may have mixed case, but should "
                    "otherwise match: a DNS-1035 label must consist of lower case alphanumeric "
                    "characters or '-', start with an alphabetic character, and end with an "
                    "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
                    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                )
            )
