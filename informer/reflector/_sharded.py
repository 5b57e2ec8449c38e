"""A sharded reflector (KEP-5866): the objects of a set of hash ranges, into one store.

``ShardedReflector`` runs one plain ``Reflector`` (a *lane*) per set of ranges taken at once,
each with its own store partition (``informer.store.StorePartition``) and its ``shardSelector``
on every LIST, continue page, streaming list and WATCH. So changing the ranges on a running
reflector lists and watches only the change:

* ranges taken: a new lane lists and watches them; nothing else is asked again. Its first list
  is asked not older than the highest RV a lane has seen (``NotOlderThan``, verified as a
  relist's), so a lagging replica cannot bring back, for a range held before, an object the
  handlers saw deleted (no key goes back in time across a range given up and taken again);
* ranges given up: their objects leave the store (no deltas: they were not deleted); a lane left
  with no range stops, a lane left with some restarts its watch from its RV with the narrower
  selector, without listing again.

Every lane checks the hash of every object it receives (a server may ignore the selector, and
one without its watch cache does not filter a watch with no label or field selector), so the
store holds only objects of the ranges, whatever the server does.

Lanes are merged (consolidated), or a long-lived member of a ring would keep one LIST+WATCH per
takeover forever. Once the ranges have not changed for ``options.lane_merge_delay`` seconds and
every lane has listed (no handover is in progress here: a ring changes the ranges of its
participants at every start and stop), one new lane lists and watches the union of their ranges
*aside*, into a store of its own that nobody reads and no handler hears. Once it has listed, in
one synchronous step (no await, so no write of any lane is half done): its contents replace the
old lanes' partitions through ``Store.merge_partitions``, the old lanes are cancelled and
forgotten, and the new lane goes on writing into the merged partition, its deltas to the
handlers. Any change of the ranges before that step abandons the merge (its list is wasted; it
starts again once the ranges are quiet again).

Invariant of a merge (what a handler and a reader of the store can tell):

* no change is delivered twice and none is lost: a change the old lanes delivered is not
  delivered again by the new lane (per range, the old lane's RV says what it had seen; events
  of the new lane at or below it are duplicates), a change they had not delivered yet is, once;
* no key goes back in time: per range, the newer of the old lane's state and the new lane's list
  is kept (by RV, KEP-5504: merging needs comparable RVs; with opaque ones lanes stay apart);
* an object whose RV did not change is no change: the cached instance stays, no delta;
* freshness and read-your-writes waits keep their meaning: the store's RV only moves forward and
  never passes an RV below which a range has not seen every change;
* the store holds exactly the objects of the ranges held, as before and after;
* a merge that fails (its list, or its step) is no change at all: the old lanes never stopped
  and their partitions are as they were; it ends (given up or undone, logged and counted) and
  is tried again later, and the reflector's loop goes on.

How a merge fails:

* its lane's list failing (a 5xx, a 403, a 410, a cut connection, a timeout: each after the
  reflector's own page retries) is retried by that lane with the reflector's backoff and logged
  by it (``lane="merging"``); ``options.lane_merge_attempts`` failed lists (in a row: it has
  not listed in between) give the merge up: its lane stops, ``reflector.lane_merge_given_up``
  (a warning: the lanes, the attempts, the last error's type, status and reason, when it is
  tried again; never a message or object data), ``merges_given_up`` and
  ``merge_list_failures`` say so;
* an unexpected error of the merge step itself (a bug, a broken store) is contained: the step
  is undone as a whole (``Store.merge_partitions`` is failure-atomic: the old partitions keep
  their objects, keys and RVs, no waiter was woken, nothing was delivered), its lane stops,
  the old lanes go on writing, ``reflector.lane_merge_failed`` (an error: the exception's type
  and line, never its message) and ``merge_errors`` say so;
* either way the merge is tried again once quiet: after ``lane_merge_delay`` plus a delay of
  the reflector's backoff policy, which grows with every merge failed in a row and starts again
  once a merge is done. The reflector's loop is never ended by a merge.

The merged lane's ``shardSelector`` is the union in the canonical spelling (``shards.py``).
A server limits a selector's size (cel-go's 100,000 code points; and a request line, URL-encoded,
must stay within what proxies and servers take, commonly 8 KiB), so a merged lane holds at most
``MAX_MERGED_RANGES`` disjoint ranges: lanes are merged only while their union stays within it.
A server that ignores the selector (gate off, older) answers with every object: the merged lane
filters by the hash as every lane does.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from dataclasses import dataclass

from informer._log import describe_error
from informer.pager import ListResult
from informer.reflector._core import DeltaSink
from informer.reflector._options import ReflectorOptions
from informer.reflector._reflector import Reflector
from informer.reflector._stats import ReflectorStats, StreamingState
from informer.resource import Resource
from informer.resource_version import is_comparable, rv_sort_key
from informer.shards import ShardField, ShardSelector, ShardSet
from informer.store import Store, StorePartition
from informer.transport import Transport

__all__ = ["MAX_MERGED_RANGES", "ShardStats", "ShardedReflector"]

MAX_MERGED_RANGES = 64
"""The most disjoint ranges a merged lane's selector holds: about 5 KB written out, 7 KB
URL-encoded (within an 8 KiB request line), far below cel-go's limit. 64 is also the most a
member of a ring of 128 partitions (its default) can hold."""


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
    merges: int = 0
    """Lanes merged into one (each merge replaced two or more lanes)."""
    merges_abandoned: int = 0
    """Merges given up before they were done, because the ranges changed meanwhile."""
    merging: bool = False
    """A merge is under way: waiting for quiet, or its lane lists the union aside."""
    merge_list_failures: int = 0
    """Lists of a merge's lane that failed (each one failed attempt of a merge)."""
    merges_given_up: int = 0
    """Merges given up after ``lane_merge_attempts`` failed lists (tried again later)."""
    merge_errors: int = 0
    """Merges undone by an unexpected error of the merge step (tried again later)."""


@dataclass(eq=False)
class _Lane:
    partition: StorePartition
    reflector: Reflector
    task: asyncio.Task[None] | None = None


@dataclass(eq=False)
class _Merge:
    """A merge under way: the lanes it replaces, and its own lane's reflector writing aside."""

    lanes: list[_Lane]
    task: asyncio.Task[None]
    reflector: Reflector | None = None
    failures: int = 0  # failed lists of its lane
    error: Exception | None = None  # the last one


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
        self._merge: _Merge | None = None
        self._merges = self._merges_abandoned = 0
        self._merge_list_failures = self._merges_given_up = self._merge_errors = 0
        self._merge_backoff = self._new_backoff()  # the wait before a merge tried again
        self._merge_failing = False  # the last merge was given up or failed
        self._merge_off = False  # RVs not comparable: lanes are not merged
        self._seen_rv = ""  # the highest RV of a lane that stopped (given up, or merged)
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
        self._abandon_merge()
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
                self._note_seen(lane.partition)
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

    def _note_seen(self, partition: StorePartition) -> None:
        """A lane stops: keep the RV its partition had seen (see ``_highest_seen``)."""
        self._seen_rv = _higher(self._seen_rv, partition.resource_version)

    def _highest_seen(self) -> str:
        """The highest RV any lane has seen (its changes may have reached the handlers): a new
        lane's first list must not be older. "" when none, or the RVs are not comparable."""
        floor = self._seen_rv
        for lane in self._lanes:
            floor = _higher(floor, lane.partition.resource_version)
        return floor if self.parent_store.comparable else ""

    def _new_lane(self, shards: ShardSet) -> _Lane:
        floor = self._highest_seen()  # (before the new partition: it has seen nothing)
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
        reflector._list_floor = floor
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
            self._maybe_merge()
        else:
            self.lanes_synced.clear()

    # -- merging lanes (see the module docstring) ----------------------------------------------
    def _mergeable(self) -> list[_Lane]:
        """The lanes to merge now (oldest first, while their union fits one selector)."""
        group: list[_Lane] = []
        union = ShardSet()
        for lane in self._lanes:
            p = lane.partition
            if not (p.comparable and is_comparable(p.resource_version)):
                return []
            if len(union | p.shards) <= MAX_MERGED_RANGES:
                group.append(lane)
                union = union | p.shards
        return group if len(group) > 1 else []

    def _maybe_merge(self) -> float | None:
        """Start a merge when the lanes are quiet: running, several, all listed, none merging.
        Returns the seconds it waits before listing (None: no merge started)."""
        delay = self.options.lane_merge_delay
        if delay is None or not self._running or self._merge is not None or self._merge_off:
            return None
        if len(self._lanes) < 2 or not all(lane.reflector.has_synced for lane in self._lanes):
            return None
        lanes = self._mergeable()
        if not lanes:
            return None
        if self._merge_failing:  # the last one failed: back off before the next
            delay += self._merge_backoff.next_delay()
        task = asyncio.create_task(
            self._merge_lanes(lanes, delay), name=f"reflector-merge-{self.resource.plural}"
        )
        self._merge = _Merge(lanes, task)
        return delay

    def _abandon_merge(self) -> None:
        merge, self._merge = self._merge, None
        if merge is None:
            return
        merge.task.cancel()
        self._ending.add(merge.task)
        merge.task.add_done_callback(self._ending.discard)
        if merge.reflector is not None:
            self._merges_abandoned += 1
            self._retire(merge.reflector.statistics())
            self.log.info("reflector.lane_merge_abandoned", lanes=len(merge.lanes))

    def _end_aside(self, reflector: Reflector, run: asyncio.Task[None]) -> None:
        """Stop a merge's lane that is not adopted (its counts kept)."""
        run.cancel()
        self._ending.add(run)
        run.add_done_callback(self._ending.discard)
        self._retire(reflector.statistics())

    async def _merge_lanes(self, lanes: list[_Lane], delay: float) -> None:
        """Wait ``delay`` of quiet, list and watch the union aside, then merge (one step); give
        the merge up after ``lane_merge_attempts`` failed lists (see the module docstring)."""
        clock = self.options.clock
        if delay > 0:
            await (clock.sleep(delay) if clock is not None else asyncio.sleep(delay))
        merge = self._merge
        assert merge is not None and merge.lanes is lanes
        shards = ShardSet()
        for lane in lanes:
            shards = shards | lane.partition.shards
        aside = Store()
        reflector = Reflector(
            self.transport,
            self.resource,
            aside,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            options=self.options,
            shard_selector=ShardSelector.of(shards, self.field),
        )
        reflector.log = self.log.bind(shards=_describe(shards), lane="merging")
        merge.reflector = reflector
        gave_up = asyncio.Event()
        attempts = self.options.lane_merge_attempts

        def failed(exc: Exception) -> None:  # the lane's loop caught it, before its backoff
            if reflector.has_synced or gave_up.is_set():
                return  # (listed: merged at the next step whatever its watch does)
            merge.failures += 1
            merge.error = exc
            self._merge_list_failures += 1
            if merge.failures >= attempts:
                gave_up.set()

        reflector._on_failure = failed
        run = asyncio.create_task(reflector.run(), name=f"reflector-lane-{self.resource.plural}")
        try:
            await _first_set(reflector.synced, gave_up)
        except BaseException:
            run.cancel()
            await asyncio.wait([run])
            raise
        self._merge = None
        reflector._on_failure = None
        if not reflector.has_synced:
            self._give_up_merge(merge, reflector, run)
            return
        try:
            self._finish_merge(lanes, reflector, aside, run, merge.failures)
        except Exception as exc:  # past the step (which undoes itself): log and count, go on
            if all(lane.task is not run for lane in self._lanes):  # not adopted
                self._end_aside(reflector, run)
            self._merge_errors += 1
            error = describe_error(exc)
            self.log.error("reflector.lane_merge_failed", lanes=len(lanes), error=error)
        self._maybe_merge()

    def _give_up_merge(self, merge: _Merge, reflector: Reflector, run: asyncio.Task[None]) -> None:
        self._end_aside(reflector, run)
        self._merges_given_up += 1
        self._merge_failing = True
        retry = self._maybe_merge()
        self.log.warning(
            "reflector.lane_merge_given_up",
            lanes=len(merge.lanes),
            attempts=merge.failures,
            **_failure(merge.error),
            retry_in=None if retry is None else round(retry, 3),
        )

    def _finish_merge(
        self,
        lanes: list[_Lane],
        reflector: Reflector,
        aside: Store,
        run: asyncio.Task[None],
        failed_attempts: int = 0,
    ) -> None:
        """The merge itself: synchronous, between two writes of any lane. An error before the
        store took the merge, or while it did (``merge_partitions`` undoes itself), keeps the
        old lanes as they were (see the module docstring)."""
        started = time.perf_counter()
        try:
            if any(lane not in self._lanes for lane in lanes):  # the ranges changed: abandoned
                raise RuntimeError("a merge of lanes that changed")
            parts = [lane.partition for lane in lanes]
            rv = aside.resource_version
            usable = all(p.comparable and is_comparable(p.resource_version) for p in parts)
            comparable = aside.comparable and is_comparable(rv) and usable
            if comparable:
                partition, deltas = self.parent_store.merge_partitions(parts, aside.list(), rv)
        except Exception as exc:
            self._end_aside(reflector, run)
            self._merge_errors += 1
            self._merge_failing = True
            retry = self._maybe_merge()
            self.log.error(
                "reflector.lane_merge_failed",
                lanes=len(lanes),
                error=describe_error(exc),
                retry_in=None if retry is None else round(retry, 3),
            )
            return
        if not comparable:
            self._end_aside(reflector, run)
            self._merge_off = True
            self.log.warning(
                "reflector.lanes_not_merged",
                detail="resource versions are not comparable: lanes are kept apart",
            )
            return
        # from here on nothing can fail but the handlers, whose errors _emit contains
        for lane in lanes:
            task = self._stop_lane(lane)
            if task is not None:
                self._ending.add(task)
                task.add_done_callback(self._ending.discard)
            self._retire(lane.reflector.statistics())
            self._note_seen(lane.partition)
        at = min(self._lanes.index(lane) for lane in lanes)
        kept = [lane for lane in self._lanes if lane not in lanes]
        merged = _Lane(partition, reflector, run)
        self._lanes = [*kept[:at], merged, *kept[at:]]
        reflector.store = partition
        reflector.on_deltas = self.on_deltas
        reflector.log = reflector.log.bind(lane="merged")
        self._merges += 1
        self._merge_failing = False
        self._merge_backoff.reset()
        step_ms = round((time.perf_counter() - started) * 1000, 1)  # the loop held that long
        reflector._emit(deltas)
        self.log.info(
            "reflector.lanes_merged",
            lanes=len(lanes),
            share=round(partition.shards.share, 6),
            ranges=len(partition.shards),
            objects=len(partition),
            changes=len(deltas),
            rv=rv,
            failed_attempts=failed_attempts,
            step_ms=step_ms,
        )

    async def run(self, *, resume: bool = False) -> None:
        """Run every lane (and those of ranges taken later) until cancelled."""
        self._running = True
        try:
            for lane in self._lanes:
                self._start_lane(lane, None, resume)
            self._check_synced()
            await asyncio.Event().wait()
        finally:
            self._running = False
            self._abandon_merge()
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
            merges=self._merges,
            merges_abandoned=self._merges_abandoned,
            merging=self._merge is not None,
            merge_list_failures=self._merge_list_failures,
            merges_given_up=self._merges_given_up,
            merge_errors=self._merge_errors,
        )

    def statistics(self) -> ReflectorStats:
        """The lanes' counts added up (those of lanes given up too), the store's own."""
        total = dict(self._retired)
        streaming = (
            StreamingState.OFF if self.options.list_strategy == "list" else (StreamingState.UNTRIED)
        )
        supported: bool | None = None
        merge = self._merge
        merging = [merge.reflector] if merge is not None and merge.reflector is not None else []
        for reflector in merging:  # its requests count as they are made
            stats = reflector.statistics()
            for name in _COUNTS:
                total[name] += getattr(stats, name)
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


async def _first_set(*events: asyncio.Event) -> None:
    """Until one of ``events`` is set."""
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


def _failure(exc: Exception | None) -> dict[str, object]:
    """A failed list for a log line: its type, and an API error's status and reason (never its
    message: a server's message can quote what was sent)."""
    if exc is None:
        return {}
    fields: dict[str, object] = {"error": type(exc).__name__}
    code = getattr(exc, "code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        fields["status"] = code
        reason = getattr(exc, "reason", None)
        if reason:
            fields["reason"] = str(reason)
    return fields


def _higher(a: str, b: str) -> str:
    """The higher of two RVs, ignoring "" and RVs that are not comparable."""
    if not is_comparable(b):
        return a
    return b if not a or rv_sort_key(b) > rv_sort_key(a) else a


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
