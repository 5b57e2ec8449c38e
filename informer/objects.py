"""Kubernetes objects as read-only mappings over their raw JSON.

A ``KubeObject`` holds the object's raw JSON bytes and its decoded metadata (name, namespace, uid,
resourceVersion, labels); the rest is decoded on first access. This keeps a cache of 100,000 objects
small and its sync fast, while callers read it like a plain ``dict`` (but cannot mutate it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, overload

import msgspec

__all__ = ["KubeObject", "ObjectMeta", "freeze"]


class ObjectMeta(msgspec.Struct, frozen=True, rename="camel"):
    """The part of ``metadata`` the cache needs without a full decode."""

    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = {}
    deletion_timestamp: str | None = None


class _Head(msgspec.Struct, frozen=True, rename="camel"):
    kind: str | None = None  # None: the key is absent
    api_version: str | None = None
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


_head_decoder = msgspec.json.Decoder(_Head)
_any_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


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


class KubeObject(Mapping[str, Any]):
    """One Kubernetes object: raw JSON plus decoded metadata, the rest decoded on access."""

    __slots__ = ("_decoded", "api_version", "kind", "metadata_", "raw")

    def __init__(self, raw: bytes, meta: ObjectMeta, kind: str = "", api_version: str = "") -> None:
        self.raw = raw
        self.metadata_ = meta
        self.kind = kind
        self.api_version = api_version
        self._decoded: dict[str, Any] | None = None

    @classmethod
    def from_raw(cls, raw: bytes) -> KubeObject:
        """Decode the envelope and metadata of one JSON object (raises ``msgspec.DecodeError``)."""
        head = _head_decoder.decode(raw)
        return cls(bytes(raw), head.metadata, head.kind or "", head.api_version or "")

    @classmethod
    def from_list_item(cls, raw: bytes, kind: str, api_version: str) -> KubeObject:
        """Like ``from_raw``, adding the ``kind``/``apiVersion`` that list items lack."""
        head = _head_decoder.decode(raw)
        if head.kind and head.api_version:
            return cls(bytes(raw), head.metadata, head.kind, head.api_version)
        if head.kind is not None or head.api_version is not None:
            # Rare: one of them present or empty. Re-encode so the raw JSON has no duplicate key.
            obj: dict[str, Any] = _any_decoder.decode(raw)
            obj["kind"] = head.kind or kind
            obj["apiVersion"] = head.api_version or api_version
            return cls(_encoder.encode(obj), head.metadata, obj["kind"], obj["apiVersion"])
        rest = bytes(raw).lstrip()[1:]
        sep = b"" if rest.lstrip().startswith(b"}") else b","
        prefix = b'{"kind":%s,"apiVersion":%s' % (
            _encoder.encode(kind),
            _encoder.encode(api_version),
        )
        return cls(prefix + sep + rest, head.metadata, kind, api_version)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> KubeObject:
        """Encode a plain object (e.g. a write's response) into a ``KubeObject``."""
        if isinstance(obj, KubeObject):
            return obj
        return cls.from_raw(_encoder.encode(_plain(obj)))

    # -- metadata without decoding -------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.metadata_.name

    @property
    def namespace(self) -> str:
        return self.metadata_.namespace

    @property
    def uid(self) -> str:
        return self.metadata_.uid

    @property
    def resource_version(self) -> str:
        return self.metadata_.resource_version

    @property
    def labels(self) -> Mapping[str, str]:
        return MappingProxyType(self.metadata_.labels)

    @property
    def key(self) -> str:
        """``namespace/name``, or ``name`` for cluster-scoped objects."""
        m = self.metadata_
        return f"{m.namespace}/{m.name}" if m.namespace else m.name

    # -- the full object ---------------------------------------------------------------------
    def _full(self) -> dict[str, Any]:
        d = self._decoded
        if d is None:
            d = self._decoded = _any_decoder.decode(self.raw)
        return d

    def __getitem__(self, key: str) -> Any:
        return freeze(self._full()[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._full())

    def __len__(self) -> int:
        return len(self._full())

    def __contains__(self, key: object) -> bool:
        return key in self._full()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KubeObject):
            return self.raw == other.raw or bool(self._full() == other._full())
        if isinstance(other, Mapping):
            return bool(self._full() == _plain(other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        """A fresh, mutable deep copy of the object."""
        result: dict[str, Any] = _any_decoder.decode(self.raw)
        return result

    def __repr__(self) -> str:
        return f"KubeObject({self.kind or '?'} {self.key} rv={self.resource_version})"


def _plain(value: Any) -> Any:
    if isinstance(value, KubeObject):
        return value.to_dict()
    if isinstance(value, _FrozenDict):
        return _plain(value._d)
    if isinstance(value, _FrozenList):
        return [_plain(v) for v in value._l]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
