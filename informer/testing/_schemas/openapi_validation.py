"""OpenAPI v3 value validation of custom resources, answered as the apiextensions server does.

The engine is ``jsonschema`` (Draft 4: the keywords and boolean ``exclusiveMinimum`` of OpenAPI
v3.0): the CRD's schema is translated once (``nullable`` as a ``null`` type,
``x-kubernetes-int-or-string`` as ``integer,string``, only the string formats the apiserver
supports), and each error is mapped to the ``field.Error`` that kube-openapi's validator and
``kubeOpenAPIResultToFieldErrors`` produce: the same cause type, field path
(``spec.list[0].name``) and message (``spec.replicas in body must be of type integer:
"string"``), in the validator's order (a value's own checks, then its properties by name, then
the missing required ones). An object over ``maxProperties`` or under ``minProperties`` is not
looked into further, as kube-openapi stops there.
"""

from __future__ import annotations

import base64
import ipaddress
import re
from collections.abc import Callable, Iterator
from datetime import date, datetime
from functools import cache
from typing import Any, Final

from informer.testing._schemas.go_format import bad_value, go_value, json_type

__all__ = ["FieldError", "SchemaValidator", "path_string"]

Json = dict[str, Any]
FieldError = tuple[str, str, str]
"""(cause type, field path, message body) as ``field.Error`` gives them."""

_TYPE_KEY: Final = "x-informer-type"
_VALUE_KEYWORDS: Final = (
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "required",
)
_RANK: Final = {
    "type": 0,
    "allOf": 1,
    "anyOf": 1,
    "oneOf": 1,
    "not": 1,
    "minLength": 2,
    "maxLength": 2,
    "pattern": 2,
    "format": 3,
    "multipleOf": 4,
    "maximum": 4,
    "minimum": 4,
    "minItems": 5,
    "maxItems": 5,
    "uniqueItems": 5,
    "enum": 6,
    "minProperties": 7,
    "maxProperties": 7,
    "additionalProperties": 8,
}


def path_string(parts: Iterator[Any] | list[Any] | tuple[Any, ...]) -> str:
    """kube-openapi's path of a value: ``spec.list[0].name`` (``""`` for the root)."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text = f"{text}.{part}" if text else str(part)
    return text


# -- formats ----------------------------------------------------------------------------------

_HOSTNAME: Final = re.compile(
    r"^([a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}"
    r"[a-zA-Z0-9])?)*\.?$"
)
_EMAIL: Final = re.compile(r"^[^@\s]+@[^@\s]+$")
_MAC: Final = re.compile(
    r"^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$|^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}$"
    r"|^([0-9A-Fa-f]{2}[:-]){7}([0-9A-Fa-f]{2})$|^([0-9A-Fa-f]{2}[:-]){19}([0-9A-Fa-f]{2})$"
)
_UUID: Final = {
    "uuid": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid3": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid4": re.compile(
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
    ),
    "uuid5": re.compile(
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
    ),
}
_DURATION: Final = re.compile(
    r"^(([+-]?\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$"
    r"|^\d+\s?(ns|us|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|"
    r"hours?|days?|weeks?)$"
)
_HEXCOLOR: Final = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_RGBCOLOR: Final = re.compile(
    r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])"
    r"\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$"
)
_SSN: Final = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")
_BSON: Final = re.compile(r"^[0-9a-fA-F]{24}$")
_DATETIME: Final = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$"
)
_DNS1123_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _matcher(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda text: bool(pattern.match(text))


def _uri(text: str) -> bool:
    # net/url.ParseRequestURI: an absolute URI or an absolute path
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:\S*$|^/\S*$", text))


def _ip(version: int) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            return ipaddress.ip_address(text).version == version
        except ValueError:
            return False

    return check


def _cidr(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


def _byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except ValueError:
        return False
    return True


def _date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def _datetime(text: str) -> bool:
    if not _DATETIME.match(text):
        return False
    try:
        datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00").replace("t", "T"))
    except ValueError:
        return False
    return True


def _isbn(text: str, lengths: tuple[int, ...]) -> bool:
    digits = re.sub(r"[\s-]", "", text)
    if len(digits) == 10 and 10 in lengths and re.fullmatch(r"\d{9}[\dX]", digits):
        total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(digits))
        return total % 11 == 0
    if len(digits) == 13 and 13 in lengths and digits.isdigit():
        total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(digits))
        return total % 10 == 0
    return False


def _creditcard(text: str) -> bool:
    digits = re.sub(r"\D", "", text)
    return bool(
        re.fullmatch(
            r"(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}"
            r"|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})",
            digits,
        )
    )


def _k8s_short_name(text: str) -> bool:
    return len(text) <= 63 and bool(_DNS1123_LABEL.match(text))


def _k8s_long_name(text: str) -> bool:
    return len(text) <= 253 and all(_DNS1123_LABEL.match(p) for p in text.split("."))


FORMATS: Final[dict[str, Callable[[str], bool]]] = {
    "bsonobjectid": lambda t: bool(_BSON.match(t)),
    "uri": _uri,
    "email": lambda t: bool(_EMAIL.match(t)),
    "hostname": lambda t: len(t) <= 255 and bool(_HOSTNAME.match(t)),
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "cidr": _cidr,
    "mac": lambda t: bool(_MAC.match(t)),
    **{name: _matcher(pattern) for name, pattern in _UUID.items()},
    "isbn": lambda t: _isbn(t, (10, 13)),
    "isbn10": lambda t: _isbn(t, (10,)),
    "isbn13": lambda t: _isbn(t, (13,)),
    "creditcard": _creditcard,
    "ssn": lambda t: bool(_SSN.match(t)),
    "hexcolor": lambda t: bool(_HEXCOLOR.match(t)),
    "rgbcolor": lambda t: bool(_RGBCOLOR.match(t)),
    "byte": _byte,
    "password": lambda t: True,
    "date": _date,
    "duration": lambda t: bool(_DURATION.match(t)),
    "datetime": _datetime,
    "k8sshortname": _k8s_short_name,
    "k8slongname": _k8s_long_name,
}
"""The string formats the apiextensions server validates (``formats.go``, names without
dashes); any other format is ignored, as the apiserver strips it."""


def _normal_format(name: str) -> str:
    return name.replace("-", "")


def _format_check(check: Callable[[str], bool]) -> Callable[[Any], bool]:
    return lambda value: not isinstance(value, str) or check(value)


@cache
def _engine() -> tuple[Any, Any]:
    """The jsonschema validator class and format checker (``jsonschema`` is imported on first
    use: it is the optional ``schemas`` extra)."""
    from jsonschema import Draft4Validator, FormatChecker, validators

    checker = FormatChecker(formats=())
    for name, check in FORMATS.items():
        checker.checks(name)(_format_check(check))
    validator = validators.extend(
        Draft4Validator,
        type_checker=Draft4Validator.TYPE_CHECKER.redefine("integer", _is_integer),
    )
    return validator, checker


# -- the schema -------------------------------------------------------------------------------


def _translate(node: Any) -> Any:
    """A CRD schema node as a Draft 4 schema (value keywords only; the rest is structure)."""
    if not isinstance(node, dict):
        return {}
    out: Json = {}
    types: list[str] = []
    if node.get("x-kubernetes-int-or-string"):
        types = ["integer", "string"]
    elif isinstance(node.get("type"), str) and node["type"]:
        types = [node["type"]]
    if types:
        out[_TYPE_KEY] = ",".join(types)
        out["type"] = [*types, "null"] if node.get("nullable") else types
    for key in _VALUE_KEYWORDS:
        if key in node:
            out[key] = node[key]
    if "format" in out:
        name = _normal_format(str(out["format"]))
        if name not in FORMATS or types not in ([], ["string"]):
            del out["format"]
        else:
            out["format"] = name
            out["x-informer-format"] = node["format"]
    if "enum" in node and isinstance(node["enum"], list):
        out["enum"] = [*node["enum"], None] if node.get("nullable") else node["enum"]
    props = node.get("properties")
    if isinstance(props, dict):
        out["properties"] = {k: _translate(v) for k, v in props.items()}
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out["additionalProperties"] = _translate(extra)
    elif extra is False:
        out["additionalProperties"] = False
    if isinstance(node.get("items"), dict):
        out["items"] = _translate(node["items"])
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            out[key] = [_translate(n) for n in node[key]]
    if isinstance(node.get("not"), dict):
        out["not"] = _translate(node["not"])
    return out


def _is_integer(_: Any, value: Any) -> bool:
    """An int, or a float with an integral value (``isFloatInt``); never a bool."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


class SchemaValidator:
    """Validates objects against one CRD version's ``openAPIV3Schema``."""

    def __init__(self, schema: Json) -> None:
        validator, checker = _engine()
        self._validator = validator(_translate(schema), format_checker=checker)

    def validate(self, obj: Any, root: str = "") -> list[FieldError]:
        """The field errors of ``obj`` (empty when valid), in kube-openapi's order; ``root``:
        the path of ``obj`` itself (a CRD's ``default`` value)."""
        found: list[tuple[tuple[Any, ...], FieldError]] = []
        closed: list[tuple[Any, ...]] = []  # objects over/under their property counts
        for error in self._validator.iter_errors(obj):
            path = tuple(error.absolute_path)
            keyword = str(error.validator)
            if keyword in ("minProperties", "maxProperties"):
                closed.append(path)
            for key, field_error in _field_errors(error, path, keyword, root):
                found.append((key, field_error))
        if closed:
            found = [
                (key, err) for key, err in found if not any(_below(key, path) for path in closed)
            ]
        found.sort(key=lambda item: item[0])
        result: list[FieldError] = []
        for _, err in found:
            if err not in result:
                result.append(err)
        return result


def _below(key: tuple[Any, ...], path: tuple[Any, ...]) -> bool:
    """Whether the error ``key`` is inside the object at ``path`` (or its ``required`` check)."""
    depth = len(path)
    prefix = tuple((1, _part(p)) for p in path)
    if key[:depth] != prefix:
        return False
    rest = key[depth:]
    return bool(rest) and rest[0][0] in (1, 2)


def _part(part: Any) -> Any:
    return (0, part, "") if isinstance(part, int) else (1, 0, str(part))


def _sort_key(path: tuple[Any, ...], keyword: str, extra: str = "") -> tuple[Any, ...]:
    """Own checks of a value first (by validator), then its children (by index or name), then
    its missing required properties."""
    steps = tuple((1, _part(p)) for p in path)
    if keyword == "required":
        return (*steps, (2, (1, 0, extra)))
    return (*steps, (0, (_RANK.get(keyword, 9), 0, extra)))


def _field_errors(
    error: Any, path: tuple[Any, ...], keyword: str, root: str = ""
) -> Iterator[tuple[tuple[Any, ...], FieldError]]:
    name = path_string(([root] if root else []) + list(path))
    schema = error.schema if isinstance(error.schema, dict) else {}
    value = error.instance
    key = _sort_key(path, keyword)
    if keyword == "type":
        type_name = str(schema.get(_TYPE_KEY) or error.validator_value)
        actual = json_type(value)
        body = f'{name} in body must be of type {type_name}: "{actual}"'
        yield key, ("FieldValueTypeInvalid", name, f'Invalid value: "{actual}": {body}')
    elif keyword == "format":
        fmt = str(schema.get("x-informer-format") or error.validator_value)
        body = f"{name} in body must be of type {fmt}: {bad_value(value)}"
        yield key, ("FieldValueTypeInvalid", name, f"Invalid value: {bad_value(value)}: {body}")
    elif keyword == "required":
        for missing in _missing(error):
            field = f"{name}.{missing}" if name else missing
            yield _sort_key(path, keyword, missing), ("FieldValueRequired", field, "Required value")
    elif keyword == "enum":
        allowed = [v for v in error.validator_value if v is not None or not schema.get("type")]
        shown = ", ".join(
            '"' + (v if isinstance(v, str) else bad_value(v)).replace('"', '\\"') + '"'
            for v in allowed
            if v is not None
        )
        body = f"Unsupported value: {bad_value(value)}"
        if shown:
            body += f": supported values: {shown}"
        yield key, ("FieldValueNotSupported", name, body)
    elif keyword == "maxLength":
        limit = int(error.validator_value)
        unit = "byte" if limit == 1 else "bytes"
        yield key, ("FieldValueTooLong", name, f"Too long: may not be more than {limit} {unit}")
    elif keyword in ("maxItems", "maxProperties"):
        limit = int(error.validator_value)
        unit = "item" if limit == 1 else "items"
        body = f"Too many: {len(value)}: must have at most {limit} {unit}"
        yield key, ("FieldValueTooMany", name, body)
    else:
        message = _message(keyword, name, error, schema)
        shown = bad_value(_invalid_value(keyword, value))
        yield key, ("FieldValueInvalid", name, f"Invalid value: {shown}: {message}")


def _missing(error: Any) -> list[str]:
    instance = error.instance if isinstance(error.instance, dict) else {}
    return [str(k) for k in error.validator_value if k not in instance]


def _invalid_value(keyword: str, value: Any) -> Any:
    if keyword in ("minItems", "minProperties"):
        return len(value)
    if keyword in ("uniqueItems", "allOf", "anyOf", "oneOf", "not"):
        return ""
    return value


def _message(keyword: str, name: str, error: Any, schema: Json) -> str:
    bound = error.validator_value
    if keyword == "minLength":
        return f"{name} in body should be at least {bound} chars long"
    if keyword == "pattern":
        return f"{name} in body should match '{bound}'"
    if keyword == "minimum":
        strict = bool(schema.get("exclusiveMinimum"))
        relation = "greater than" if strict else "greater than or equal to"
        return f"{name} in body should be {relation} {go_value(float(bound))}"
    if keyword == "maximum":
        strict = bool(schema.get("exclusiveMaximum"))
        relation = "less than" if strict else "less than or equal to"
        return f"{name} in body should be {relation} {go_value(float(bound))}"
    if keyword == "multipleOf":
        return f"{name} in body should be a multiple of {go_value(float(bound))}"
    if keyword == "minItems":
        return f"{name} in body should have at least {bound} items"
    if keyword == "minProperties":
        return f"{name} in body should have at least {bound} properties"
    if keyword == "uniqueItems":
        return f"{name} in body shouldn't contain duplicates"
    if keyword == "anyOf":
        return f'"{name}" must validate at least one schema (anyOf)'
    if keyword == "oneOf":
        return f'"{name}" must validate one and only one schema (oneOf). '
    if keyword == "allOf":
        return f'"{name}" must validate all the schemas (allOf)'
    if keyword == "not":
        return f'"{name}" must not validate the schema (not)'
    if keyword == "additionalProperties":
        return f"{name} in body is a forbidden property"
    return f"{name} in body is invalid: {error.message}"
