"""The msgspec structs and decoders that read an object's head, lazy metadata and envelope.

The decode structs hold only strings, a dict of strings or raw bytes (no cycle is possible):
gc=False keeps the garbage collector from tracking the two or three made per item.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgspec


class ObjectMeta(msgspec.Struct, frozen=True, rename="camel"):
    """The metadata fields an object exposes as attributes (``KubeObject.metadata_``)."""

    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = {}
    deletion_timestamp: str | None = None


class _Meta(msgspec.Struct, gc=False, rename="camel"):
    """Decoded for every object: what the cache's key and RV checks need."""

    name: str = ""
    namespace: str = ""
    resource_version: str = ""


class _Head(msgspec.Struct, gc=False, rename="camel"):
    kind: str | None = None  # None: the key is absent
    api_version: str | None = None
    metadata: _Meta | None = None


class _RVMeta(msgspec.Struct, gc=False, rename="camel"):
    resource_version: str = ""


class _RVHead(msgspec.Struct, gc=False):
    """The RV alone (an object that does not hold it: ``KubeObject.resource_version``)."""

    metadata: _RVMeta | None = None


class _RVEvent(msgspec.Struct, gc=False):
    object: _RVHead


class _Event(msgspec.Struct, gc=False):
    """A watch line, decoded once: its type and the object's head (the rest is skipped)."""

    type: str
    object: _Head


class _LazyMeta(msgspec.Struct, gc=False, frozen=True, rename="camel"):
    """Decoded on first access to ``uid``/``labels``/``deletion_timestamp``, then kept (in the
    object's ``_lazy``, with its RV: the object holds it here from then on)."""

    uid: str = ""
    labels: dict[str, str] = {}
    deletion_timestamp: str | None = None
    resource_version: str = ""


class _PackMeta(msgspec.Struct, gc=False, rename="camel"):
    """``_Meta`` and ``_LazyMeta`` in one pass: a list item about to be packed needs both."""

    name: str = ""
    namespace: str = ""
    resource_version: str = ""
    uid: str = ""
    labels: dict[str, str] = {}
    deletion_timestamp: str | None = None


class _PackHead(msgspec.Struct, gc=False, rename="camel"):
    kind: str | None = None
    api_version: str | None = None
    metadata: _PackMeta | None = None


_event_heads = itertools.count()
"""Numbers each ``_PackEventHead`` decoded (``next`` of a count is atomic: threads share it)."""


class _PackEventHead(_PackHead, gc=False):
    """``_PackHead`` of a watch line's ``object`` member: counts itself as it is decoded, so a
    line with that member twice at its top level (``JSON`` allows it; msgspec keeps the last)
    is told from one with it once without scanning the line (``_from_event_line_to_pack``)."""

    def __post_init__(self) -> None:
        next(_event_heads)


class _PackEvent(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """A watch line for a store that packs its objects: the head and the lazy metadata in one
    decode, and nothing but ``type`` and ``object`` (so the object can be cut from the line by
    its shape: ``KubeObject._from_event_line_to_pack``)."""

    type: str
    object: _PackEventHead


class _PackedMeta(msgspec.Struct, gc=False, frozen=True):
    """``_LazyMeta`` of a compressed object: its uid as ``informer.objects._uid`` holds it
    (and its RV: read on the hot paths without decompressing)."""

    uid: int | str
    labels: dict[str, str]
    deletion_timestamp: str | None
    resource_version: str


class _LazyHead(msgspec.Struct, gc=False):
    metadata: _LazyMeta | None = None


class _LazyEvent(msgspec.Struct, gc=False):
    object: _LazyHead


class _RawEvent(msgspec.Struct, gc=False):
    object: msgspec.Raw


class _DictEvent(msgspec.Struct, gc=False):
    object: dict[str, Any]


_head_decoder = msgspec.json.Decoder(_Head)
_rv_decoder = msgspec.json.Decoder(_RVHead)
_rv_event_decoder = msgspec.json.Decoder(_RVEvent)
_event_decoder = msgspec.json.Decoder(_Event)
_lazy_decoder = msgspec.json.Decoder(_LazyHead)
_pack_head_decoder = msgspec.json.Decoder(_PackHead)
_pack_event_decoder = msgspec.json.Decoder(_PackEvent)
_lazy_event_decoder = msgspec.json.Decoder(_LazyEvent)
_raw_event_decoder = msgspec.json.Decoder(_RawEvent)
_dict_event_decoder = msgspec.json.Decoder(_DictEvent)
_any_decoder = msgspec.json.Decoder()
_str_decoder = msgspec.json.Decoder(str)
_dict_decoder = msgspec.json.Decoder(dict[str, Any])
_encoder = msgspec.json.Encoder()
_NO_META = _Meta()
_NO_RV_META = _RVMeta()
_NO_LAZY = _LazyMeta()
_NO_PACK_META = _PackMeta()
