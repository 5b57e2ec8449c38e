"""The Kubernetes CEL libraries that ``cel-python`` lacks, as functions it can call.

Strings (``lowerAscii``, ``upperAscii``, ``trim``, ``replace``, ``split``, ``join``,
``indexOf``, ``lastIndexOf``, ``charAt``, ``substring``), lists (``isSorted``, ``sum``, ``min``,
``max``), regular expressions (``find``, ``findAll``), quantities (``quantity``,
``isQuantity``, ``compareTo``, ``isGreaterThan``, ``isLessThan``, ``add``, ``sub``,
``asInteger``, ``asApproximateFloat``, ``isInteger``, ``sign``) and URLs (``url``, ``isURL``,
``getScheme``, ``getHost``, ``getHostname``, ``getPort``, ``getEscapedPath``, ``getQuery``),
with the semantics of the apiserver's ``k8s.io/apiserver/pkg/cel/library``; and indexing
(``_[_]``) that propagates errors as cel-go does.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from celpy import celtypes
from celpy.evaluation import CELEvalError

from informer.testing._schemas.quantity import QuantityError, parse_quantity

__all__ = ["FUNCTIONS"]


class Quantity:
    """A ``resource.Quantity`` value, exact."""

    __slots__ = ("value",)

    def __init__(self, value: Decimal) -> None:
        self.value = value


def _parse_quantity(text: str) -> Quantity | None:
    try:
        parsed = parse_quantity(text)
    except QuantityError:
        return None
    return Quantity(Decimal(parsed.unscaled).scaleb(parsed.exponent))


def _quantity(text: Any) -> Any:
    """``quantity(s)``: ``resource.ParseQuantity`` exactly (``"1.G"``, ``"+"`` and ``"0.1n"``
    parse); a malformed one is an evaluation error worded as Go's parser words it."""
    try:
        parsed = parse_quantity(str(text))
    except QuantityError as error:
        return CELEvalError(str(error), ValueError, (str(text),))
    return Quantity(Decimal(parsed.unscaled).scaleb(parsed.exponent))


def _number(other: Any) -> Decimal:
    return other.value if isinstance(other, Quantity) else Decimal(int(other))


def _compare(a: Quantity, b: Any) -> int:
    other = _number(b)
    return (a.value > other) - (a.value < other)


def _as_integer(q: Quantity) -> Any:
    if q.value != q.value.to_integral_value():
        raise ValueError("cannot convert value to integer")
    return celtypes.IntType(int(q.value))


def _url(text: Any) -> Any:
    parts = urlsplit(str(text))
    if not parts.scheme and not str(text).startswith("/"):
        raise ValueError(f"URL must be an absolute URL or an absolute path: {text}")
    return parts


def _is_url(text: Any) -> Any:
    try:
        _url(text)
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _find_all(text: Any, pattern: Any, limit: Any = -1) -> Any:
    found = re.findall(str(pattern), str(text))
    values = [m if isinstance(m, str) else m[0] for m in found]
    if int(limit) >= 0:
        values = values[: int(limit)]
    return celtypes.ListType([celtypes.StringType(v) for v in values])


def _find(text: Any, pattern: Any) -> Any:
    match = re.search(str(pattern), str(text))
    return celtypes.StringType(match.group(0) if match else "")


def _split(text: Any, sep: Any, limit: Any = None) -> Any:
    if limit is None or int(limit) < 0:
        parts = str(text).split(str(sep))
    elif int(limit) == 0:
        parts = []
    else:
        parts = str(text).split(str(sep), int(limit) - 1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _is_sorted(items: Any) -> Any:
    return celtypes.BoolType(all(a <= b for a, b in itertools.pairwise(list(items))))


def _index_of(text: Any, sub: Any, start: Any = 0) -> Any:
    if isinstance(text, list):
        return celtypes.IntType(next((i for i, v in enumerate(text) if v == sub), -1))
    return celtypes.IntType(str(text).find(str(sub), int(start)))


def _last_index_of(text: Any, sub: Any) -> Any:
    if isinstance(text, list):
        found = [i for i, v in enumerate(text) if v == sub]
        return celtypes.IntType(found[-1] if found else -1)
    return celtypes.IntType(str(text).rfind(str(sub)))


def _index(member: Any, index: Any) -> Any:
    """``_[_]`` with CEL's error propagation: an operand that is an error is the result
    (cel-python's own reports a type mismatch of the error instead), a missing key is cel-go's
    ``no such key: <key>``."""
    if isinstance(member, CELEvalError):
        return member
    if isinstance(index, CELEvalError):
        return index
    try:
        return member[index]
    except KeyError:
        return CELEvalError(f"no such key: {index}", KeyError, (index,))


def _s(value: str) -> Any:
    return celtypes.StringType(value)


FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    "_[_]": _index,
    "lowerAscii": lambda t: _s(str(t).lower()),
    "upperAscii": lambda t: _s(str(t).upper()),
    "trim": lambda t: _s(str(t).strip()),
    "replace": lambda t, a, b, n=-1: _s(str(t).replace(str(a), str(b), int(n))),
    "split": _split,
    "join": lambda items, sep="": _s(str(sep).join(str(x) for x in items)),
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "charAt": lambda t, n: _s(str(t)[int(n)] if int(n) < len(str(t)) else ""),
    "substring": lambda t, a, b=None: _s(str(t)[int(a) : None if b is None else int(b)]),
    "isSorted": _is_sorted,
    "sum": lambda items: sum(items[1:], items[0]) if len(items) else celtypes.IntType(0),
    "min": lambda items: min(items),
    "max": lambda items: max(items),
    "find": _find,
    "findAll": _find_all,
    "quantity": _quantity,
    "isQuantity": lambda t: celtypes.BoolType(_parse_quantity(str(t)) is not None),
    "compareTo": lambda a, b: celtypes.IntType(_compare(a, b)),
    "isGreaterThan": lambda a, b: celtypes.BoolType(_compare(a, b) > 0),
    "isLessThan": lambda a, b: celtypes.BoolType(_compare(a, b) < 0),
    "add": lambda a, b: Quantity(a.value + _number(b)),
    "sub": lambda a, b: Quantity(a.value - _number(b)),
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: celtypes.DoubleType(float(q.value)),
    "isInteger": lambda q: celtypes.BoolType(q.value == q.value.to_integral_value()),
    "sign": lambda q: celtypes.IntType((q.value > 0) - (q.value < 0)),
    "url": _url,
    "isURL": _is_url,
    "getScheme": lambda u: _s(u.scheme),
    "getHost": lambda u: _s(u.netloc.rsplit("@", 1)[-1]),
    "getHostname": lambda u: _s(u.hostname or ""),
    "getPort": lambda u: _s(str(u.port) if u.port is not None else ""),
    "getEscapedPath": lambda u: _s(u.path),
    "getQuery": lambda u: celtypes.MapType(
        {
            celtypes.StringType(k): celtypes.ListType([celtypes.StringType(x) for x in v])
            for k, v in parse_qs(u.query).items()
        }
    ),
}
