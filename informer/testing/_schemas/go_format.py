"""Values printed as the apiserver's Go code prints them in validation messages."""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["bad_value", "go_float", "go_print", "go_value", "json_type"]


def go_float(value: float) -> str:
    """``fmt``'s ``%v`` of a float64: the shortest representation, ``%e`` form when the decimal
    exponent is below -4 or at least 6 (``1e+06``, ``1.5``, ``0``)."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == 0:
        return "0"
    text = repr(float(value))
    mantissa, _, exponent = text.partition("e")
    digits = mantissa.lstrip("-").replace(".", "").lstrip("0") or "0"
    if exponent:
        exp = int(exponent)
    else:
        whole, _, _ = mantissa.lstrip("-").partition(".")
        exp = len(whole.lstrip("0")) - 1 if whole.strip("0") else _leading_zeros(mantissa)
    if exp < -4 or exp >= 6:
        digits = digits.rstrip("0") or "0"
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        sign = "-" if value < 0 else ""
        return f"{sign}{head}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _leading_zeros(mantissa: str) -> int:
    fraction = mantissa.lstrip("-").partition(".")[2]
    return -(len(fraction) - len(fraction.lstrip("0")) + 1)


def go_value(value: Any) -> str:
    """``%v`` of a number (int64 or float64 as the unstructured decoder makes them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    return str(value)


def bad_value(value: Any) -> str:
    """A ``field.Error``'s bad value in its message: numbers and booleans bare, strings quoted,
    anything else as JSON."""
    if isinstance(value, bool | int | float):
        return go_value(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def json_type(value: Any) -> str:
    """The JSON type name of decoded data (``schemaInfoForType``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def go_print(value: Any) -> str:
    """``fmt``'s ``%+v`` of decoded JSON (``map[spec:map[paused:true replicas:2]]``): maps with
    their keys sorted, slices in brackets, strings bare, null as ``<nil>``."""
    if value is None:
        return "<nil>"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_print(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_print(item) for item in value) + "]"
    if isinstance(value, str):
        return value
    return go_value(value)
