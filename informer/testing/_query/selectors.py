"""Label and field selectors with the Kubernetes syntax and matching rules.

Labels: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k`` (exists), ``!k``.
``!=`` and ``notin`` also match objects without the label, as in apimachinery.
Fields: ``=``, ``==``, ``!=`` on the field labels of the kind (``field_labels``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from informer.resource import Resource
from informer.testing._query.field_labels import FieldLabels, field_labels
from informer.testing._status import bad_request

__all__ = ["Selector", "parse_field_selector", "parse_label_selector"]

Predicate = Callable[[Mapping[str, Any]], bool]

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_KEY = re.compile(rf"^({_NAME}/)?{_NAME}$")
_VALUE = re.compile(r"^(([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?)$")


class Selector:
    """A conjunction of requirements on an object's labels and fields; empty matches all."""

    __slots__ = ("_checks", "empty")

    def __init__(self, checks: list[Predicate]) -> None:
        self._checks = checks
        self.empty = not checks

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all(check(obj) for check in self._checks)

    def __and__(self, other: Selector) -> Selector:
        return Selector(self._checks + other._checks)


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    meta = obj.get("metadata") or {}
    labels = meta.get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def _check_key(key: str, text: str) -> str:
    if not _KEY.match(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise bad_request(f'unable to parse requirement: invalid label key "{key}" in "{text}"')
    return key


def _check_value(value: str, text: str) -> str:
    if not _VALUE.match(value) or len(value) > 63:
        raise bad_request(
            f'unable to parse requirement: invalid label value: "{value}" in "{text}"'
        )
    return value


_SET_OP = re.compile(r"^\s*(\S+)\s+(in|notin)\s*\((.*)\)\s*$")


def _label_requirement(term: str, text: str) -> Predicate:
    term = term.strip()
    if not term:
        raise bad_request(
            f"unable to parse requirement: found '', expected: identifier in \"{text}\""
        )
    match = _SET_OP.match(term)
    if match:
        key = _check_key(match.group(1), text)
        values = frozenset(_check_value(v.strip(), text) for v in match.group(3).split(","))
        if match.group(2) == "in":
            return lambda o: _labels(o).get(key) in values
        return lambda o: _labels(o).get(key) not in values
    for op in ("!=", "==", "=", ">", "<"):
        if op in term:
            key, _, value = term.partition(op)
            key = _check_key(key.strip(), text)
            value = _check_value(value.strip(), text)
            if op == "!=":
                return lambda o: _labels(o).get(key) != value
            if op in ("=", "=="):
                return lambda o: _labels(o).get(key) == value
            try:
                bound = int(value)
            except ValueError:
                raise bad_request(
                    f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an "
                    f'integer in "{text}"'
                ) from None
            return _compare(key, bound, op == ">")
    if term.startswith("!"):
        key = _check_key(term[1:].strip(), text)
        return lambda o: key not in _labels(o)
    key = _check_key(term, text)
    return lambda o: key in _labels(o)


def _compare(key: str, bound: int, greater: bool) -> Predicate:
    def compare(o: Mapping[str, Any]) -> bool:
        got = _labels(o).get(key)
        try:
            number = int(got) if got is not None else None
        except ValueError:
            return False
        if number is None:
            return False
        return number > bound if greater else number < bound

    return compare


def _field_check(getter: Callable[[Mapping[str, Any]], str], value: str, equal: bool) -> Predicate:
    if equal:
        return lambda o: getter(o) == value
    return lambda o: getter(o) != value


def parse_label_selector(text: str) -> Selector:
    """Parse ``labelSelector``; raises a 400 ``BadRequest`` when malformed."""
    if not text.strip():
        return Selector([])
    return Selector([_label_requirement(term, text) for term in _split_top(text)])


def _split_field_terms(text: str) -> list[str]:
    """Split on commas not escaped with a backslash (``fields.splitTerms``)."""
    terms: list[str] = []
    current: list[str] = []
    escaped = False
    for ch in text:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\":
            current.append(ch)
            escaped = True
        elif ch == ",":
            terms.append("".join(current))
            current = []
        else:
            current.append(ch)
    terms.append("".join(current))
    return terms


def _split_field_term(term: str) -> tuple[str, str, str] | None:
    """``lhs``, operator, ``rhs`` at the first operator (``!=``, ``==``, ``=``)."""
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def _unescape_field_value(value: str) -> str:
    """``fields.UnescapeValue``: ``\\\\``, ``\\,`` and ``\\=`` escapes; a bare ``,`` or ``=``
    is refused."""
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise bad_request(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise bad_request(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaped:
        raise bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(text: str, labels: FieldLabels | None = None) -> Selector:
    """Parse ``fieldSelector`` as ``fields.ParseSelector`` does, then convert each label with
    the kind's field labels (``labels``; ``metadata.name``/``metadata.namespace`` when None):
    400 ``BadRequest`` when malformed or for a label the kind does not support."""
    labels = labels or _META_LABELS
    checks: list[Predicate] = []
    for term in sorted(_split_field_terms(text)):
        if not term:
            continue
        split = _split_field_term(term)
        if split is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        field, op, raw = split
        value = _unescape_field_value(raw)
        getter = labels.getter(field)
        if getter is None:
            raise bad_request(labels.unsupported(field))
        checks.append(_field_check(getter, value, op != "!="))
    return Selector(checks)


_META_LABELS: Final = field_labels(Resource("", "v1", "configmaps", "ConfigMap"))
