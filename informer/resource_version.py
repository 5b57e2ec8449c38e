"""Comparable resource versions (KEP-5504).

Resource versions of one resource are decimal integers without leading zeros, so they compare as
strings: the longer is larger, equal lengths compare character by character. ``"0"`` is not a real
version (it means "any" in requests) and is not comparable. Nothing here converts to ``int``: there
is no size limit.
"""

from __future__ import annotations

__all__ = [
    "InvalidResourceVersion",
    "compare_resource_versions",
    "is_comparable",
    "rv_sort_key",
]

_DIGITS = frozenset("0123456789")


class InvalidResourceVersion(ValueError):
    """A resource version that is not a comparable KEP-5504 version."""

    def __init__(self, value: object, why: str) -> None:
        super().__init__(f"invalid resource version {value!r}: {why}")
        self.value = value
        self.why = why


def _why_invalid(rv: object) -> str | None:
    if not isinstance(rv, str):
        return f"expected str, got {type(rv).__name__}"
    if not rv:
        return "empty"
    if not _DIGITS.issuperset(rv):
        return "not a string of ASCII decimal digits"
    if rv[0] == "0":
        return '"0" means "any", not a version' if rv == "0" else "leading zero"
    return None


def is_comparable(rv: str) -> bool:
    """True when ``rv`` is a well-formed KEP-5504 resource version."""
    # the hot path of every event: three C calls (isdigit alone accepts non-ASCII digits)
    if type(rv) is str and rv.isdigit() and rv.isascii():
        return rv[0] != "0"
    return _why_invalid(rv) is None


def _check(rv: str) -> None:
    why = _why_invalid(rv)
    if why is not None:
        raise InvalidResourceVersion(rv, why)


def compare_resource_versions(a: str, b: str) -> int:
    """Compare two resource versions of one resource: -1, 0 or 1.

    Raises ``InvalidResourceVersion`` naming the first malformed value.
    """
    _check(a)
    _check(b)
    if len(a) != len(b):
        return -1 if len(a) < len(b) else 1
    if a == b:
        return 0
    return -1 if a < b else 1


def rv_sort_key(rv: str) -> tuple[int, str]:
    """A key that orders comparable resource versions (for heaps and ``max``)."""
    _check(rv)
    return (len(rv), rv)
