"""The store's counters as callers see them (:class:`StoreStats`, a snapshot: ``Store.stats``).

The store keeps the counts in plain integers on its hot paths and builds this snapshot only when
asked.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Counters of the store since it was created."""

    stale_dropped: int = 0
    """Events not newer than the cache RV (replays), dropped."""
    duplicates_dropped: int = 0
    """Events carrying exactly the cached copy's RV (or, without comparable RVs, a DELETED of an
    absent key), dropped."""
    events_applied: int = 0
    """Events that changed the cache (returned a Delta)."""
    bookmarks: int = 0
    """Calls to ``advance`` (bookmarks received), whether or not they moved the RV."""
    replaces: int = 0
    """Lists applied with ``replace``."""
    deletes_of_unknown: int = 0
    """DELETED events of a key the cache did not hold, with a newer RV: RV advanced, no delta."""
    index_errors: int = 0
    """Index function calls that raised (the object is then missing from that index)."""
    rv_regressions: int = 0
    """Replaces whose list RV was older than the cache RV (a server restored from backup)."""


@dataclass(frozen=True, slots=True)
class CacheSize:
    """What the cache holds, computed from its contents (not sampled from RSS): ``Store.size()``."""

    objects: int = 0
    """Objects in the cache."""
    bytes: int = 0
    """Bytes the cache holds: each object (its struct, JSON or compressed bytes, key and held RV
    strings, decoded uid and labels), the store's table and index entries, the forms its objects
    share (one per kind, apiVersion and namespace) and the compression dictionaries. Not counted:
    interned strings shared by many objects (namespaces, kinds), the
    memo of recent full decodes (process-wide, ``set_decoded_cache_size``), the allocator's
    slack (RSS is typically 5-10% above)."""
    json_bytes: int = 0
    """Bytes of the JSON of the objects held (uncompressed)."""
    compressed_objects: int = 0
    """Objects held compressed (``Compression``)."""
    payload_bytes: int = 0
    """Of ``bytes``, the objects' payloads: the JSON held (plain objects) or its compressed
    bytes (compressed ones), without the bytes objects' headers; the rest of ``bytes`` is the
    fixed cost per object (structs, keys, held RVs and metadata, table and index entries) and
    the compression dictionaries."""

    @property
    def ratio(self) -> float:
        """``bytes`` over ``json_bytes`` (0.0 for an empty cache): below 1.0 the cache is
        smaller than the JSON it holds."""
        return self.bytes / self.json_bytes if self.json_bytes else 0.0
