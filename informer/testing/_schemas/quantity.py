"""``resource.Quantity`` as a v1.36 apiserver parses and prints it (k8s.io/apimachinery
``pkg/api/resource``): what a built-in object's ``cpu: 1000m`` reads back as (``"1"``).

No maintained Python package prints the canonical form (the official client's
``parse_quantity`` only parses, to a Decimal), so this follows the Go code step by step:

- parsing: the scanner of ``parseQuantityString`` (``"+"``, ``"."`` and ``"00"`` are zero; ``"1.G"``
  is one billion), the suffix table (``n u m "" k M G T P E``, ``Ki``..``Ei``, ``e``/``E`` with a
  signed exponent), a non-zero value rounded away from zero to a multiple of 1n, a binary one
  capped at 2^63-1, the three errors worded as Go words them;
- the parser's shortcut: an input already in canonical form is kept verbatim, and its test is
  Go's, so ``"+1"``, ``"01Ki"`` and ``"1.500"`` read back as written;
- printing (``CanonicalizeBytes``): no fractional digits, the largest suffix that loses nothing;
  a binary quantity below 1024 or not whole prints in decimal (``"0.5Gi"`` -> ``"512Mi"``,
  ``"1.1Ki"`` -> ``"1126400m"``). A decimal value needing a suffix past ``E`` prints its digits
  alone (``"1000E"`` reads back as ``"1"``): v1.36 does (fixed upstream later), and a test should
  see what the cluster it stands for does.

Values are held as an integer times a power of ten, so no float ever enters (and an absurd
exponent costs nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "ERR_FORMAT",
    "ERR_NUMERIC",
    "ERR_SUFFIX",
    "Quantity",
    "QuantityError",
    "canonical",
    "parse_quantity",
    "round_up",
]

Format = Literal["DecimalSI", "BinarySI", "DecimalExponent"]

ERR_FORMAT: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
ERR_SUFFIX: Final = "unable to parse quantity's suffix"

_MAX_INT64: Final = (1 << 63) - 1
_MAX_INT64_FACTORS: Final = 18
_NANO: Final = -9
_SUFFIX_LETTERS: Final = frozenset("eEinumkKMGTP")
_DECIMAL_SUFFIXES: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_NAMES: Final = {exponent: name for name, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_NAMES: Final = {exponent // 10: name for name, exponent in _BINARY_SUFFIXES.items()}


class QuantityError(ValueError):
    """A string that is no quantity; ``str()`` is Go's error text."""


@dataclass(frozen=True, slots=True)
class Quantity:
    """``unscaled * 10**exponent``, the format it prints in, and the input when kept as is;
    ``decimal``: held as Go holds a value its fast path could not (an ``inf.Dec``)."""

    unscaled: int
    exponent: int
    format: Format
    text: str | None = None
    decimal: bool = False

    def sign(self) -> int:
        return (self.unscaled > 0) - (self.unscaled < 0)

    def compare(self, other: Quantity) -> int:
        """-1, 0 or 1 as ``self`` is less than, equal to or greater than ``other``."""
        low = min(self.exponent, other.exponent)
        a = self.unscaled * _ten(self.exponent - low)
        b = other.unscaled * _ten(other.exponent - low)
        return (a > b) - (a < b)

    def milli_whole(self) -> bool:
        """Whether the value, rounded up to a multiple of 1m, is whole (``MilliValue() % 1000``
        is 0; validation's "must be an integer")."""
        digits, exponent = self.unscaled, self.exponent + 3
        if exponent < 0:
            digits = _round_away(digits, -exponent)
            exponent = 0
        return (digits * _ten(exponent)) % 1000 == 0 if exponent < 3 else True

    def __str__(self) -> str:
        return canonical(self)


def parse_quantity(text: str) -> Quantity:
    """``resource.ParseQuantity``; raises ``QuantityError`` with Go's message."""
    if not text:
        raise QuantityError(ERR_FORMAT)
    if text == "0":
        return Quantity(0, 0, "DecimalSI", "0")
    positive, value, num, denom, suffix = _scan(text)
    base, exponent, fmt = _interpret(suffix)
    precision, scale, mantissa = 0, 0, 1
    if fmt == "BinarySI":
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    if precision >= 0:
        scale -= len(denom)
        if scale >= _NANO:
            shifted = num + denom
            amount = int(shifted)
            result = amount * mantissa
            if result <= _MAX_INT64:  # int64Multiply did not overflow
                if fmt == "BinarySI":
                    keep = exponent % 10 == 0 and amount & 0x07 != 0
                else:
                    keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return Quantity(result if positive else -result, scale, fmt, text if keep else None)
    unscaled, exponent10 = _decimal(value)
    if base == 10:
        exponent10 += exponent
    else:
        unscaled <<= exponent
    negative = unscaled < 0
    unscaled = abs(unscaled)
    if unscaled and exponent10 < _NANO:  # round up to 1n: some resources, not none
        unscaled = _round_away(unscaled, _NANO - exponent10)
        exponent10 = _NANO
    if fmt == "BinarySI" and _above(unscaled, exponent10, _MAX_INT64):
        unscaled, exponent10 = _MAX_INT64, 0
    if fmt == "BinarySI" and unscaled and _below_one(unscaled, exponent10):
        fmt = "DecimalSI"
    return Quantity(-unscaled if negative else unscaled, exponent10, fmt, decimal=True)


def round_up(quantity: Quantity, scale: int) -> Quantity:
    """``Quantity.RoundUp(scale)``: rounded away from zero to a multiple of ``10**scale``. A
    value held as an int64 at that scale or coarser keeps its text; any other is printed anew
    (``SetDefaults_ResourceList`` rounds every resource list to 1m this way)."""
    if quantity.exponent >= scale:
        if not quantity.decimal or quantity.text is None:
            return quantity
        return Quantity(quantity.unscaled, quantity.exponent, quantity.format, decimal=True)
    magnitude = _round_away(abs(quantity.unscaled), scale - quantity.exponent)
    unscaled = magnitude if quantity.unscaled >= 0 else -magnitude
    return Quantity(unscaled, scale, quantity.format, decimal=quantity.decimal)


def canonical(quantity: Quantity) -> str:
    """``Quantity.String()``: the canonical form (or the input the parser kept)."""
    if quantity.unscaled == 0:
        return "0"
    if quantity.text is not None:
        return quantity.text
    fmt = quantity.format
    whole = 0
    if fmt == "BinarySI":
        if _below(quantity, 1024):
            fmt = "DecimalSI"
        else:
            whole, exact = _to_integer(quantity)
            if not exact:
                fmt = "DecimalSI"
    if fmt == "BinarySI":
        times = 0
        while whole and whole % 1024 == 0:
            whole //= 1024
            times += 1
        return f"{whole}{_BINARY_NAMES.get(times, '')}"
    digits, exponent = quantity.unscaled, quantity.exponent
    while digits % 10 == 0:
        digits //= 10
        exponent += 1
    while exponent % 3:
        digits *= 10
        exponent -= 1
    if fmt == "DecimalExponent":
        return f"{digits}e{exponent}" if exponent else str(digits)
    return f"{digits}{_DECIMAL_NAMES.get(exponent, '')}"


def _scan(text: str) -> tuple[bool, str, str, str, str]:
    """``parseQuantityString``: sign, the number as written (``value``), its integer digits
    without leading zeros (``num``), its fraction digits (``denom``) and the suffix."""
    positive, pos, end = True, 0, len(text)
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    if pos >= end:
        return positive, text, text[start:], "", ""
    num = text[start:pos] or "0"
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos].isascii() and text[pos].isdigit():
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_LETTERS:
        pos += 1
    if pos >= end:
        return positive, value, num, denom, text[suffix_start:]
    if text[pos] in "+-":
        pos += 1
    while pos < end and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT)
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, Format]:
    """The suffix's base, exponent and format (``quantitySuffixer.interpret``)."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], "DecimalSI"
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if not body or not (body.isascii() and body.isdigit()):
            raise QuantityError(ERR_SUFFIX)
        parsed = int(digits)
        if not -(1 << 63) <= parsed <= _MAX_INT64:  # strconv.ParseInt: out of range
            raise QuantityError(ERR_SUFFIX)
        exponent = (parsed + (1 << 31)) % (1 << 32) - (1 << 31)  # Go's int32(parsed)
        return 10, exponent, "DecimalExponent"
    raise QuantityError(ERR_SUFFIX)


def _decimal(value: str) -> tuple[int, int]:
    """``inf.Dec.SetString`` of the number as written: (unscaled, power of ten)."""
    sign = ""
    if value and value[0] in "+-":
        sign, value = value[0], value[1:]
    whole, dot, fraction = value.partition(".")
    digits = whole + fraction
    if not digits:
        raise QuantityError(ERR_NUMERIC)
    return int(sign + digits), -len(fraction) if dot else 0


def _ten(power: int) -> int:
    """``10**power`` (``power >= 0``)."""
    return int(10**power)


def _round_away(digits: int, drop: int) -> int:
    """``digits / 10**drop`` rounded away from zero (digits >= 0)."""
    if drop > len(str(digits)):
        return 1 if digits else 0
    whole, rest = divmod(digits, _ten(drop))
    return whole + 1 if rest else whole


def _above(unscaled: int, exponent: int, bound: int) -> bool:
    if exponent >= 0:
        return unscaled > 0 and (exponent > 20 or unscaled * _ten(exponent) > bound)
    return unscaled > bound * _ten(-exponent)


def _below_one(unscaled: int, exponent: int) -> bool:
    return exponent < 0 and unscaled < _ten(-exponent)


def _below(quantity: Quantity, bound: int) -> bool:
    """Whether ``-bound < quantity < bound``."""
    if quantity.exponent >= 0:
        return quantity.exponent < 5 and abs(quantity.unscaled) * _ten(quantity.exponent) < bound
    return abs(quantity.unscaled) < bound * _ten(-quantity.exponent)


def _to_integer(quantity: Quantity) -> tuple[int, bool]:
    """The value rounded away from zero to a whole number, and whether that was exact."""
    if quantity.exponent >= 0:
        return quantity.unscaled * _ten(quantity.exponent), True
    magnitude = abs(quantity.unscaled)
    whole = _round_away(magnitude, -quantity.exponent)
    exact = whole * _ten(-quantity.exponent) == magnitude
    return (whole if quantity.unscaled > 0 else -whole), exact
