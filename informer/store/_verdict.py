"""The verdict on one watch event: apply it, or drop it as stale or as a duplicate (a bookmark:
move the RV to it, or not; a list: whether its RV went back).

A store has two kinds of writer: the :class:`~informer.store.Store` itself (one reflector) and a
:class:`~informer.store.StorePartition` (one of a sharded informer's reflectors). Each judges an
event against its own RV and its own comparability, and counts and logs its own drops; the rule
they judge by is this one function, so the two cannot drift apart:

* comparable RVs (KEP-5504): an event carrying the cached copy's RV is a duplicate (a DELETED
  never is: it ends that copy); one not newer than the writer's RV, or than the cached copy's
  RV, is stale; one a partition's merged range has seen already (``known``) is a duplicate;
* opaque RVs (the first one seen switches the writer to them for good): only exact duplicates
  are dropped: the cached copy's RV again, or a DELETED of a key not held.

A list's items do not hold their RV (``KubeObject``: read from the bytes, a decode, when
asked). An item's RV is not above its list's (a list is one snapshot: every page of a
paginated list is served at the first page's RV), so not above the RV of the writer that
listed it: an event newer than that writer's RV is newer than its cached copy without reading
the copy's RV. The verdict reads it only when it matters: to tell a duplicate from a stale
event among those dropped anyway, with opaque RVs, and for a copy another writer may have put
there (``exact``: a partition's key it does not hold, or a range merged ahead of its RV).
"""

from __future__ import annotations

import enum
from typing import Final, Literal, Protocol

from informer.objects import KubeObject
from informer.resource_version import is_comparable

EVENT_TYPES: Final = frozenset({"ADDED", "MODIFIED", "DELETED"})
"""The watch event types that carry an object (``BOOKMARK`` is the writers' ``advance``)."""


class Dropped(enum.Enum):
    """The verdict "not applied" (dropped, counted and logged by the writer's ``_drop``)."""

    DROPPED = "dropped"


DROPPED: Final = Dropped.DROPPED


class EventWriter(Protocol):
    """What the verdict reads and calls of a writer (``Store`` or ``StorePartition``)."""

    _comparable: bool
    _rv_key: tuple[int, str] | None

    def _go_opaque(self, rv: str) -> None:
        """Switch to equality semantics for good (sets ``_comparable`` to False)."""

    def _drop(self, why: Literal["stale", "duplicate"], type: str, key: str, rv: str) -> None:
        """Count and log one dropped event."""


def judge_event(
    writer: EventWriter,
    type: str,
    key: str,
    rv: str,
    cached: KubeObject | None,
    deleted: bool,
    known: tuple[int, str] | None = None,
    exact: bool = False,
) -> tuple[int, str] | Literal[Dropped.DROPPED] | None:
    """Judge the event (``type``, of ``key`` at ``rv``; ``cached``: the copy held, if any).

    ``known``: the RV sort key up to which every change of the object's range was applied
    already, when that is past the writer's own RV (a partition's ranges merged from partitions
    that were ahead of it); an event at or below it is a duplicate. ``exact``: the cached copy
    may be another writer's (its RV is read even when it does not hold it: see above).

    Returns ``DROPPED`` when the event is dropped (``writer._drop`` has counted it), else the
    event's RV sort key to move the writer's RV to: None once the RVs are opaque. Switches the
    writer to opaque RVs (``writer._go_opaque``) when the event's or the cached copy's RV is not
    comparable.
    """
    new_key: tuple[int, str] | None = None
    if writer._comparable and not is_comparable(rv):
        writer._go_opaque(rv)
    if writer._comparable:
        new_key = (len(rv), rv)
        rv_key = writer._rv_key
        if rv_key is not None and new_key <= rv_key:  # dropped: the cached copy's RV again?
            if cached is not None and not deleted and cached.resource_version == rv:
                writer._drop("duplicate", type, key, rv)
            else:
                writer._drop("stale", type, key, rv)
            return DROPPED
        if known is not None and new_key <= known:  # applied by the partition that held it
            writer._drop("duplicate", type, key, rv)
            return DROPPED
        if cached is not None:
            # None: a list's item, not above the writer's RV, so older than the event
            crv = cached.resource_version if exact else cached._held_rv()
            if crv is None:
                pass
            elif not is_comparable(crv):
                writer._go_opaque(crv)
                new_key = None
            elif crv == rv and not deleted:
                writer._drop("duplicate", type, key, rv)
                return DROPPED
            elif (len(crv), crv) >= new_key:  # also another partition's newer incarnation
                writer._drop("stale", type, key, rv)
                return DROPPED
    if not writer._comparable:
        if deleted:
            duplicate = cached is None
        else:
            duplicate = cached is not None and cached.resource_version == rv
        if duplicate:
            writer._drop("duplicate", type, key, rv)
            return DROPPED
    return new_key


def judge_bookmark(
    writer: EventWriter, rv: str
) -> tuple[int, str] | Literal[Dropped.DROPPED] | None:
    """Judge a BOOKMARK at ``rv`` (not empty): the RV sort key to move the writer's RV to, None
    once the RVs are opaque (the writer takes ``rv`` as it is), or ``DROPPED`` when it is not
    newer than the writer's RV (the RV only moves forward). Switches the writer to opaque RVs
    when ``rv`` is not comparable."""
    if writer._comparable and not is_comparable(rv):
        writer._go_opaque(rv)
    if not writer._comparable:
        return None
    key = (len(rv), rv)
    rv_key = writer._rv_key
    if rv_key is None or key > rv_key:
        return key
    return DROPPED


def judge_list(writer: EventWriter, rv: str) -> tuple[tuple[int, str] | None, bool]:
    """Judge a list's RV ``rv``, which the writer's RV becomes whatever it is: its sort key (None
    once the RVs are opaque) and whether it is older than the writer's RV (a restored server:
    the writer counts and logs it). Switches the writer to opaque RVs when ``rv`` is not
    comparable."""
    if writer._comparable and not is_comparable(rv):
        writer._go_opaque(rv)
    if not writer._comparable:
        return None, False
    key = (len(rv), rv)
    rv_key = writer._rv_key
    return key, rv_key is not None and key < rv_key
