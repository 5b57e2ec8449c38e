"""The ``shardSelector`` parameter (KEP-5866) as a v1.36 kube-apiserver answers it.

Three server shapes, chosen by ``ApiServer(shard_selectors=...)`` (``ShardSelectorMode``):

* ``on``: the ``ShardedListAndWatch`` gate on, watch cache on. LIST (every page; a continue token
  does not remember the selector, each page applies the one it carries), WATCH and streaming
  lists return only the objects whose uid (or namespace) hashes into one of the ranges; every
  filtered LIST answer carries ``metadata.shardInfo.selector``, the selector in the server's
  spelling. ``remainingItemCount`` still counts the unfiltered collection. A malformed selector
  is a 500 Status with no reason and the message ``invalid shard selector: <why>`` (LIST and
  WATCH alike, before any stream line). An empty value is the parameter absent; a
  whitespace-only one is refused.
* ``off``: the gate off (or a server older than v1.36): the parameter is ignored entirely, even a
  malformed one; no ``shardInfo``.
* ``no-watch-cache``: the gate on, ``--watch-cache=false``: LISTs as ``on``; a WATCH or streaming
  list with no label or field selector is NOT filtered (every event arrives, nothing on the wire
  says so); with any label or field selector it is filtered.

Reference: ``kep-5866-sharded-list-watch.md``. Imports only the product's leaf ``informer.shards``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from informer.shards import (
    InvalidShardSelector,
    ShardField,
    ShardSelector,
    hash_value,
    parse_selector,
)
from informer.testing._options import ShardSelectorMode
from informer.testing._query.selectors import Selector
from informer.testing._status import StatusError, status

__all__ = ["ShardFilter", "ShardSelectorMode", "list_filter", "watch_filter"]

PARAMETER = "shardSelector"

# uid/namespace -> FNV-1a 64: a value never changes its hash, and every LIST, page and watch event
# of a sharded request hashes it again (pure Python: ~3 us a uid). Bounded: cleared when full.
_HASHES: dict[str, int] = {}
_HASHES_MAX = 1 << 20


def _hash(value: str) -> int:
    h = _HASHES.get(value)
    if h is None:
        if len(_HASHES) >= _HASHES_MAX:
            _HASHES.clear()
        h = _HASHES[value] = hash_value(value)
    return h


class ShardFilter:
    """A parsed selector: which objects it keeps and the ``shardInfo`` a LIST answer carries."""

    __slots__ = ("_field", "_shards", "info", "selector")

    def __init__(self, selector: ShardSelector) -> None:
        self.selector = selector
        self.info: dict[str, str] = {"selector": str(selector)}
        self._field = "uid" if selector.field is ShardField.UID else "namespace"
        self._shards = selector.shard_set

    def matches(self, obj: Mapping[str, Any]) -> bool:
        meta = obj.get("metadata")
        value = meta.get(self._field, "") if isinstance(meta, Mapping) else ""
        return self._shards.contains(_hash(value if isinstance(value, str) else ""))

    def as_selector(self) -> Selector:
        """The filter as a label/field ``Selector`` requirement (for the watch's matching)."""
        return Selector([self.matches])


def _parse(mode: ShardSelectorMode, query: Mapping[str, str]) -> ShardFilter | None:
    value = query.get(PARAMETER, "")
    if mode is ShardSelectorMode.OFF or value == "":
        return None
    try:
        return ShardFilter(parse_selector(value))
    except InvalidShardSelector as error:
        # not a validation error: the handler's parse fails and the error becomes a bare 500
        raise StatusError(status(500, "", str(error))) from None


def list_filter(mode: ShardSelectorMode, query: Mapping[str, str]) -> ShardFilter | None:
    """The filter a LIST applies (None: unfiltered, no ``shardInfo``); 500 when malformed."""
    return _parse(mode, query)


def watch_filter(
    mode: ShardSelectorMode, query: Mapping[str, str], selector: Selector
) -> ShardFilter | None:
    """The filter a WATCH (or streaming list) applies, given its label/field ``selector``.

    Without a watch cache a watch with no label or field selector is not filtered: the parameter
    is still parsed (a malformed one is still a 500), then not applied.
    """
    shard = _parse(mode, query)
    if shard is not None and mode is ShardSelectorMode.NO_WATCH_CACHE and selector.empty:
        return None
    return shard
