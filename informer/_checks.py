"""Argument checks for the public constructors: wrong use raises ``ConfigurationError`` at once.

A value that cannot work (a zero page size, a backoff of zero, a watch timeout range upside down)
would otherwise surface inside a reflector's loop, logged and retried forever.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from informer.errors import ConfigurationError


def _number(owner: str, name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ConfigurationError(f"{owner}.{name} must be a number: {value!r}")
    return float(value)


def positive(owner: str, name: str, value: object, *, infinite: bool = False) -> None:
    """``value`` > 0 (and finite unless ``infinite``)."""
    v = _number(owner, name, value)
    if v <= 0 or (math.isinf(v) and not infinite):
        raise ConfigurationError(f"{owner}.{name} must be > 0 and finite: {value!r}")


def non_negative(owner: str, name: str, value: object, *, infinite: bool = False) -> None:
    """``value`` >= 0 (and finite unless ``infinite``)."""
    v = _number(owner, name, value)
    if v < 0 or (math.isinf(v) and not infinite):
        raise ConfigurationError(f"{owner}.{name} must be >= 0 and finite: {value!r}")


def integer(owner: str, name: str, value: object, *, minimum: int) -> None:
    """An ``int`` (not a bool) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{owner}.{name} must be an int >= {minimum}: {value!r}")


def one_of(owner: str, name: str, value: object, choices: Iterable[str]) -> None:
    choices = tuple(choices)
    if value not in choices:
        raise ConfigurationError(f"{owner}.{name} must be one of {choices}: {value!r}")


def callable_or_none(owner: str, name: str, value: object) -> None:
    if value is not None and not callable(value):
        raise ConfigurationError(f"{owner}.{name} must be callable or None: {value!r}")


def str_or_none(owner: str, name: str, value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise ConfigurationError(f"{owner}.{name} must be a str or None: {value!r}")
