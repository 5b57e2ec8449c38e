"""What the server's bytes decode to: LIST pages (``ListPage``) and WATCH lines (``WatchEvent``).

A LIST body's envelope is decoded with msgspec structs (its items when the page's ``items`` is
read), a watch line once into its event type and the ``KubeObject`` the store keeps. A body or
line that is not what it should be raises ``MalformedResponse`` or ``MalformedWatchLine``, and a
Status in its place (an ``ERROR`` event, a proxy's answer) the typed error of ``informer.errors``.
``_decode_list`` runs per page and ``_decode_line`` per watch line: their decoders are module
globals here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import msgspec

from informer.errors import (
    MalformedResponse,
    MalformedWatchLine,
    WatchStreamError,
    status_error,
)
from informer.objects import Known, KubeObject, PagePacking, Trim
from informer.resource import Resource

__all__ = ["INITIAL_EVENTS_END", "ListPage", "WatchEvent"]

INITIAL_EVENTS_END = "k8s.io/initial-events-end"

EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
_EVENT_TYPES: frozenset[str] = frozenset(("ADDED", "MODIFIED", "DELETED", "BOOKMARK"))


class _ListMeta(msgspec.Struct, gc=False, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(name="continue", default="")
    remaining_item_count: int | None = None
    # any JSON: an odd shardInfo (not an object, no string selector) means "not filtered",
    # never a failed list
    shard_info: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)


class _ListBody(msgspec.Struct, gc=False):
    kind: str = ""
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[msgspec.Raw] | None = None


class _Envelope(msgspec.Struct, gc=False):
    type: str
    object: msgspec.Raw


class _BookmarkMeta(msgspec.Struct, gc=False, rename="camel"):
    resource_version: str = ""
    annotations: dict[str, str] | None = None


class _BookmarkObject(msgspec.Struct, gc=False):
    metadata: _BookmarkMeta = msgspec.field(default_factory=_BookmarkMeta)


class _Bookmark(msgspec.Struct, gc=False):
    object: _BookmarkObject


# what decoding server bytes may raise: RecursionError for JSON nested deeper than msgspec's limit
_DECODE_ERRORS = (msgspec.DecodeError, UnicodeError, RecursionError)

_list_decoder = msgspec.json.Decoder(_ListBody)
_envelope_decoder = msgspec.json.Decoder(_Envelope)
_bookmark_decoder = msgspec.json.Decoder(_Bookmark)


class ListPage:
    """One page of a LIST: items, the ListMeta RV, ``continue`` and ``remainingItemCount``.

    ``shard_info`` is ``metadata.shardInfo.selector`` (KEP-5866): the shard selector the server
    applied, in its own spelling; None when the server did not filter by shard (it ignored the
    parameter, or none was sent). With a shard selector, ``remaining_item_count`` counts the
    unfiltered collection: an over-estimate of the shard's rest.

    A page read from a server builds its items from the page's JSON when ``items`` is first
    read (a malformed item raises ``MalformedResponse`` there), so a pager can send the request
    for the next page before doing that work; ``item_count`` needs no build.
    """

    __slots__ = (
        "_build",
        "_count",
        "_items",
        "continue_",
        "remaining_item_count",
        "resource_version",
        "shard_info",
    )

    def __init__(
        self,
        items: list[KubeObject],
        resource_version: str,
        continue_: str | None,
        remaining_item_count: int | None,
        shard_info: str | None = None,
    ) -> None:
        self._items: list[KubeObject] | None = items
        self._build: Callable[[], list[KubeObject]] | None = None
        self._count = len(items)
        self.resource_version = resource_version
        self.continue_ = continue_
        self.remaining_item_count = remaining_item_count
        self.shard_info = shard_info

    @classmethod
    def _deferred(
        cls,
        build: Callable[[], list[KubeObject]],
        count: int,
        resource_version: str,
        continue_: str | None,
        remaining_item_count: int | None,
        shard_info: str | None = None,
    ) -> ListPage:
        page = cls([], resource_version, continue_, remaining_item_count, shard_info)
        page._items, page._build, page._count = None, build, count
        return page

    @property
    def items(self) -> list[KubeObject]:
        items = self._items
        if items is None:
            assert self._build is not None
            items = self._items = self._build()
            self._build = None
        return items

    @property
    def item_count(self) -> int:
        """How many items the page holds (without building them)."""
        return self._count

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ListPage):
            return NotImplemented
        return (self.resource_version, self.continue_, self.remaining_item_count, self.items) == (
            other.resource_version,
            other.continue_,
            other.remaining_item_count,
            other.items,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"ListPage({self._count} items, resource_version={self.resource_version!r}, "
            f"continue_={self.continue_!r}, remaining_item_count={self.remaining_item_count!r})"
        )


class WatchEvent(msgspec.Struct, frozen=True, gc=False):
    """One watch event. For a BOOKMARK only ``object.resource_version`` is meaningful."""

    type: EventType
    object: KubeObject
    initial_events_end: bool = False


def _decode_list(
    body: bytes,
    resource: Resource,
    path: str,
    known: Known | None = None,
    trim: Trim | None = None,
    pack: PagePacking | None = None,
) -> ListPage:
    """A 2xx LIST body: a ``ListPage``, else ``MalformedResponse`` (or the ``ApiError`` of a
    Status in its place). The envelope is decoded here, the items when the page's ``items`` is
    read (``pack``: for a store that packs them, ``KubeObject._to_pack_items``)."""
    try:
        decoded = _list_decoder.decode(body)
    except _DECODE_ERRORS as exc:
        raise MalformedResponse(f"GET {path}: list body is not a list: {exc}") from exc
    if decoded.kind == "Status":
        # A 2xx Status (a proxy, an odd server) is not an empty list at RV "".
        err = status_error(None, body)
        if err.status.get("status") == "Success" or 200 <= err.code < 300:
            raise MalformedResponse(f"GET {path}: a {err.code} Status instead of a list")
        raise err
    raws = decoded.items or []

    def build() -> list[KubeObject]:
        try:
            if pack is not None:
                return KubeObject._to_pack_items(
                    raws, resource.kind, resource.api_version, known, trim, pack.labels
                )
            return KubeObject._from_list_items(
                raws, resource.kind, resource.api_version, known, trim
            )
        except _DECODE_ERRORS as exc:
            raise MalformedResponse(f"GET {path}: list body is not a list: {exc}") from exc

    meta = decoded.metadata
    shard_info = _shard_selector_of(meta.shard_info) if meta.shard_info else None
    return ListPage._deferred(
        build,
        len(raws),
        meta.resource_version,
        meta.continue_ or None,
        meta.remaining_item_count,
        shard_info,
    )


class _ShardInfo(msgspec.Struct, gc=False):
    selector: str


_shard_info_decoder = msgspec.json.Decoder(_ShardInfo)


def _shard_selector_of(raw: msgspec.Raw) -> str | None:
    """``metadata.shardInfo.selector``, or None when it is not a string in an object."""
    try:
        return _shard_info_decoder.decode(raw).selector
    except _DECODE_ERRORS:
        return None


def _decode_last_line(
    line: bytes, offset: int, path: str, trim: Trim | None = None, pack: bool = False
) -> WatchEvent | None:
    """The unterminated line a stream ended with: an event when complete, else an error."""
    if not line.strip():
        return None
    try:
        msgspec.json.decode(line)
    except _DECODE_ERRORS as exc:
        raise WatchStreamError(
            f"watch {path}: stream ended inside a line at byte {offset}"
        ) from exc
    return _decode_line(line, offset, trim, pack)


def _decode_line(
    view: bytes | memoryview, offset: int, trim: Trim | None = None, pack: bool = False
) -> WatchEvent | None:
    """One watch line, decoded once into the event type and the object the store keeps
    (``trim``: cut from the object's bytes in that decode; ``pack``: for a store that packs
    its objects, ``KubeObject._from_event_line_to_pack``)."""
    if pack and trim is None:
        packable = KubeObject._from_event_line_to_pack(view)
        if packable is not None and packable[1].resource_version:
            return WatchEvent(packable[0], packable[1])  # type: ignore[arg-type]
    # (``view``: a view of the network read for a packing store, ``WatchStream``)
    line = view if type(view) is bytes else bytes(view)
    try:
        if trim is None:
            kind, obj = KubeObject.from_event_line(line)
        else:
            kind, obj = KubeObject.from_trimmed_event_line(line, trim)
    except _DECODE_ERRORS as exc:
        if not line.strip():
            return None
        return _decode_bad_line(line, offset, exc)
    if kind not in _EVENT_TYPES:
        if kind == "ERROR":
            raise status_error(None, obj.raw)
        raise MalformedWatchLine(offset, f"unknown event type {kind!r}", line)
    if not obj.resource_version:
        raise MalformedWatchLine(offset, "object has no metadata.resourceVersion", line)
    if kind == "BOOKMARK":
        try:
            meta = _bookmark_decoder.decode(line).object.metadata
        except _DECODE_ERRORS as exc:
            raise MalformedWatchLine(offset, f"bad object: {exc}", line) from exc
        end = (meta.annotations or {}).get(INITIAL_EVENTS_END) == "true"
        return WatchEvent("BOOKMARK", obj, end)
    return WatchEvent(kind, obj)  # type: ignore[arg-type]


def _decode_bad_line(line: bytes, offset: int, exc: Exception) -> WatchEvent | None:
    """A line the one-pass decode refused: classify it (rare, so decoded again step by step)."""
    try:
        env = _envelope_decoder.decode(line)
    except _DECODE_ERRORS as exc2:
        if isinstance(exc2, msgspec.ValidationError) and _is_status(line):
            # A Status where an event belongs (an odd server or proxy): classify it.
            raise status_error(None, line) from None
        raise MalformedWatchLine(offset, str(exc2), line) from exc2
    if env.type == "ERROR":
        raise status_error(None, bytes(env.object))
    if env.type not in _EVENT_TYPES:
        raise MalformedWatchLine(offset, f"unknown event type {env.type!r}", line)
    raise MalformedWatchLine(offset, f"bad object: {exc}", line) from exc


class _Kind(msgspec.Struct):
    kind: str | None = None


_kind_decoder = msgspec.json.Decoder(_Kind)


def _is_status(line: bytes) -> bool:
    try:
        return _kind_decoder.decode(line).kind == "Status"
    except _DECODE_ERRORS:
        return False
