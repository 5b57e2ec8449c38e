"""A sharded reflector (KEP-5866): the objects of a set of hash ranges, into one store.

``ShardedReflector`` runs one plain ``Reflector`` (a *lane*) per set of ranges taken at once,
each with its own store partition (``informer.store.StorePartition``) and its ``shardSelector``
on every LIST, continue page, streaming list and WATCH. So changing the ranges on a running
reflector lists and watches only the change:

* ranges taken: a new lane lists and watches them; nothing else is asked again;
* ranges given up: their objects leave the store (no deltas: they were not deleted); a lane left
  with no range stops, a lane left with some restarts its watch from its RV with the narrower
  selector, without listing again.

Every lane checks the hash of every object it receives (a server may ignore the selector, and
one without its watch cache does not filter a watch with no label or field selector), so the
store holds only objects of the ranges, whatever the server does.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from dataclasses import dataclass

from informer.pager import ListResult
from informer.reflector._core import DeltaSink
from informer.reflector._options import ReflectorOptions
from informer.reflector._reflector import Reflector
from informer.reflector._stats import ReflectorStats, StreamingState
from informer.resource import Resource
from informer.shards import ShardField, ShardSelector, ShardSet
from informer.store import Store, StorePartition
from informer.transport import Transport

__all__ = ["ShardStats", "ShardedReflector"]


@dataclass(frozen=True, slots=True)
class ShardStats:
    """What a sharded reflector holds: its ranges, their share of the hash space, the objects
    cached, and its lanes (one reflector each; ``synced_lanes`` have listed)."""

    shards: ShardSet
    share: float
    objects: int
    lanes: int
    synced_lanes: int
    changes: int
    """Calls to ``set_shards`` that changed the ranges."""
    dropped_objects: int
    """Objects removed from the cache because their ranges were given up."""


@dataclass(eq=False)
class _Lane:
    partition: StorePartition
    reflector: Reflector
    task: asyncio.Task[None] | None = None


class ShardedReflector(Reflector):
    """Lists and watches the objects of ``shards`` (hash ranges of ``field``) into ``store``.

    The public surface of ``Reflector`` (``run``, ``synced``, ``statistics``, ``list_exact``,
    ...); ``shard_selector`` is the selector of every range held (None when none is).
    ``synced`` is set once every lane of the first ranges has listed (at once with no range);
    ``lanes_synced`` says whether every lane, those of later ranges too, has.
    """

    def __init__(
        self,
        transport: Transport,
        resource: Resource,
        store: Store,
        *,
        shards: ShardSet,
        field: ShardField = ShardField.UID,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        options: ReflectorOptions | None = None,
        on_deltas: DeltaSink | None = None,
    ) -> None:
        super().__init__(
            transport,
            resource,
            store,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            options=options,
            on_deltas=on_deltas,
        )
        self.parent_store = store
        self.field = field
        self._lanes: list[_Lane] = []
        self._ending: set[asyncio.Task[None]] = set()  # tasks of lanes given up, still ending
        self._running = False
        self._changes = 0
        self._dropped = 0
        self._retired: dict[str, int] = dict.fromkeys(_COUNTS, 0)  # lanes that stopped
        self.lanes_synced = asyncio.Event()
        self._set(ShardSet(shards))

    # -- what is held --------------------------------------------------------------------------
    @property
    def shards(self) -> ShardSet:
        """The ranges held now."""
        held = ShardSet()
        for lane in self._lanes:
            held = held | lane.partition.shards
        return held

    def set_shards(self, shards: ShardSet) -> None:
        """Hold ``shards`` from now on: list and watch the ranges taken, drop the ranges given
        up (see the module docstring). Takes effect at once, running or not."""
        if not isinstance(shards, ShardSet):
            shards = ShardSet(shards)
        held = self.shards
        if shards == held:
            return
        self._changes += 1
        self._set(shards)
        taken, given_up = shards - held, held - shards
        self.log.info(
            "reflector.shards_changed",
            taken_share=round(taken.share, 6),
            given_up_share=round(given_up.share, 6),
            share=round(shards.share, 6),
            ranges=len(shards),
            lanes=len(self._lanes),
        )

    def _set(self, shards: ShardSet) -> None:
        held = self.shards
        removed = held - shards
        added = shards - held
        for lane in list(self._lanes):
            if not (lane.partition.shards & removed):
                continue
            keep = lane.partition.shards - removed
            if not keep:
                ending = self._stop_lane(lane)
                if ending is not None:
                    self._ending.add(ending)
                    ending.add_done_callback(self._ending.discard)
                self._retire(lane.reflector.statistics())
                self._dropped += self.parent_store.drop_partition(lane.partition)
                self._lanes.remove(lane)
                continue
            self._dropped += lane.partition.narrow(keep)
            selector = ShardSelector.of(keep, self.field)
            lane.reflector.narrow_shards(selector)
            lane.reflector.log = lane.reflector.log.bind(shards=_describe(keep))
            if self._running:  # the watch again from its RV, with the narrower selector
                previous = self._stop_lane(lane)
                self._start_lane(lane, previous, resume=True)
        if added:
            lane = self._new_lane(added)
            self._lanes.append(lane)
            if self._running:
                self._start_lane(lane, None, resume=False)
        held = self.shards
        self.shard_selector = ShardSelector.of(held, self.field) if held else None
        self._shard_set = held if held else None
        self._check_synced()

    def _new_lane(self, shards: ShardSet) -> _Lane:
        partition = self.parent_store.partition(shards, self.field)
        reflector = Reflector(
            self.transport,
            self.resource,
            partition,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            options=self.options,
            on_deltas=self.on_deltas,
            shard_selector=ShardSelector.of(shards, self.field),
        )
        reflector.log = reflector.log.bind(shards=_describe(shards))
        return _Lane(partition, reflector)

    # -- running -------------------------------------------------------------------------------
    def _start_lane(self, lane: _Lane, previous: asyncio.Task[None] | None, resume: bool) -> None:
        lane.task = asyncio.create_task(
            self._run_lane(lane, previous, resume), name=f"reflector-lane-{self.resource.plural}"
        )

    def _stop_lane(self, lane: _Lane) -> asyncio.Task[None] | None:
        """Cancel the lane's task (its store writes are synchronous: none is half done)."""
        task, lane.task = lane.task, None
        if task is not None:
            task.cancel()
        return task

    def _retire(self, stats: ReflectorStats) -> None:
        """Keep the counts of a lane that stops for good."""
        for name in _COUNTS:
            self._retired[name] += getattr(stats, name)

    async def _run_lane(
        self, lane: _Lane, previous: asyncio.Task[None] | None, resume: bool
    ) -> None:
        if previous is not None:  # one reflector per partition at a time
            await asyncio.wait([previous])
        waiter = asyncio.create_task(self._note_sync(lane.reflector))
        try:
            await lane.reflector.run(resume=resume)
        finally:
            waiter.cancel()

    async def _note_sync(self, reflector: Reflector) -> None:
        await reflector.synced.wait()
        self._check_synced()

    def _check_synced(self) -> None:
        if all(lane.reflector.has_synced for lane in self._lanes):
            self.synced.set()  # once every first lane has listed; never cleared after
            self.lanes_synced.set()
        else:
            self.lanes_synced.clear()

    async def run(self, *, resume: bool = False) -> None:
        """Run every lane (and those of ranges taken later) until cancelled."""
        self._running = True
        try:
            for lane in self._lanes:
                self._start_lane(lane, None, resume)
            await asyncio.Event().wait()
        finally:
            self._running = False
            tasks = [t for lane in self._lanes if (t := lane.task) is not None]
            tasks += self._ending
            for lane in self._lanes:
                lane.task = None
            for task in tasks:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*tasks, return_exceptions=True)

    async def list_exact(self, resource_version: str) -> ListResult:
        """A snapshot at exactly ``resource_version`` of the ranges held (none: no object)."""
        result = await super().list_exact(resource_version)
        if self.shard_selector is None:
            return ListResult([], result.resource_version, result.pages)
        return result

    # -- statistics ----------------------------------------------------------------------------
    def shard_statistics(self) -> ShardStats:
        held = self.shards
        return ShardStats(
            shards=held,
            share=held.share,
            objects=len(self.parent_store),
            lanes=len(self._lanes),
            synced_lanes=sum(1 for lane in self._lanes if lane.reflector.has_synced),
            changes=self._changes,
            dropped_objects=self._dropped,
        )

    def statistics(self) -> ReflectorStats:
        """The lanes' counts added up (those of lanes given up too), the store's own."""
        total = dict(self._retired)
        streaming = (
            StreamingState.OFF if self.options.list_strategy == "list" else (StreamingState.UNTRIED)
        )
        supported: bool | None = None
        for lane in self._lanes:
            stats = lane.reflector.statistics()
            for name in _COUNTS:
                total[name] += getattr(stats, name)
            streaming, supported = stats.streaming, stats.streaming_supported
        store = self.parent_store
        s = store.stats
        return ReflectorStats(
            **total,
            stale_events_dropped=s.stale_dropped,
            duplicate_events_dropped=s.duplicates_dropped,
            events_applied=s.events_applied,
            cache_resource_version=store.resource_version,
            comparable=store.comparable,
            synced=self.has_synced,
            streaming=streaming,
            streaming_supported=supported,
            cache=store.size(),
        )


def _describe(shards: ShardSet) -> str:
    """The ranges for a log line: written out when few, else counted (a line stays short)."""
    if len(shards) <= 2:
        return " ".join(map(str, shards))
    return f"{len(shards)} ranges, {shards.share:.2%} of the space"


_STORE_COUNTS = ("stale_events_dropped", "duplicate_events_dropped", "events_applied")
_COUNTS = tuple(
    f.name
    for f in dataclasses.fields(ReflectorStats)
    if f.type in ("int", int) and f.name not in _STORE_COUNTS
)
