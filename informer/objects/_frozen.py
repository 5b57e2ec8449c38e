"""Read-only views of decoded JSON values (dicts and lists wrapped lazily on access)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload


class _FrozenDict(Mapping[str, Any]):
    __slots__ = ("_d",)

    def __init__(self, d: dict[str, Any]) -> None:
        self._d = d

    def __getitem__(self, key: str) -> Any:
        return freeze(self._d[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __repr__(self) -> str:
        return repr(self._d)


class _FrozenList(Sequence[Any]):
    __slots__ = ("_l",)

    def __init__(self, items: list[Any]) -> None:
        self._l = items

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return _FrozenList(self._l[index])
        return freeze(self._l[index])

    def __len__(self) -> int:
        return len(self._l)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _FrozenList):
            return self._l == other._l
        if isinstance(other, list | tuple):
            return self._l == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._l)


def freeze(value: Any) -> Any:
    """A read-only view of a decoded JSON value (dicts and lists wrapped lazily)."""
    if isinstance(value, dict):
        return _FrozenDict(value)
    if isinstance(value, list):
        return _FrozenList(value)
    return value
