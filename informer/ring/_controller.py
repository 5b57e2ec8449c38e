"""A controller sharded by the ring: it queues and reconciles only the keys whose object hashes
into the ranges its member acts on.

Which hash a request has, by where it came from:

- a change of a ``for_`` object queues the object itself: the hash of the object (its uid, or its
  namespace when the ring shards by namespace);
- a change of an ``owns`` object (a child) queues its controller owner: the hash of the owner's uid
  as the child's ``ownerReferences`` entry names it. The server cannot shard children by their
  owner, so every replica receives every child event and drops those of owners it does not act
  on (the cost: each replica's children informer caches and decodes all children; sharding by
  namespace avoids it where parents and children share namespaces);
- a ``watches=`` mapper's request: the hash of the target as the ``for_`` cache holds it. Every
  member receives the watched object's change and maps it; the member holding the target has it
  cached (a sharded ``for_`` cache holds exactly the member's ranges) and queues it, the others
  drop it. A target not in the cache (another member's, with a sharded cache, or one not created
  yet, whose creation queues it anyway) is dropped and counted as ``unresolved``.

A key is checked again when a worker takes it (its range may have moved since it was queued), and
every reconcile runs in a task of its own, so that when a range moves away the member can wait for
the reconciles in flight on it and cut those that outlive ``handover_timeout`` (they end as
``None``: the new holder reconciles the key again). When a range starts, the controller's caches
first catch up with a consistent list, as a new leader's do, then every ``for_`` object of the
range is queued at ``Priority.INITIAL``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from informer._log import get_logger
from informer.controller import Controller, Request, Result
from informer.controller._keys import request_for
from informer.controller._partition import ReconcileCall
from informer.objects import KubeObject
from informer.shards import ShardField, ShardSet, hash_value
from informer.workqueue import Priority

if TYPE_CHECKING:
    from informer.informer import Informer
    from informer.ring._ring import Ring

__all__ = ["ControllerShard", "ControllerShardStats", "InformerShard"]

log = get_logger("informer.ring")


@dataclass(frozen=True, slots=True)
class ControllerShardStats:
    """``queued``: requests admitted to the queue; ``dropped``: requests of other members'
    ranges; ``unresolved``: mapper requests whose target is not cached; ``skipped``: keys taken
    from the queue after their range moved away; ``cut``: reconciles cancelled at a handover."""

    queued: int
    dropped: int
    unresolved: int
    skipped: int
    cut: int
    in_flight: int


class ControllerShard:
    """The ring's side of a sharded ``Controller`` (``Ring.shard(controller)``): its
    ``partition`` hook and a participant of the ring (see the module docstring)."""

    def __init__(self, ring: Ring, controller: Controller) -> None:
        self.ring = ring
        self.controller = controller
        self._hashes: dict[Request, int] = {}  # the hash each queued key was admitted with
        self._in_flight: dict[asyncio.Future[float | Result | None], int] = {}
        self._cut: set[asyncio.Future[float | Result | None]] = set()
        self._counts = dict.fromkeys(("queued", "dropped", "unresolved", "skipped", "cut"), 0)
        self._log = log.bind(ring=ring.name, identity=ring.identity, controller=controller.name)

    def statistics(self) -> ControllerShardStats:
        return ControllerShardStats(**self._counts, in_flight=len(self._in_flight))

    # -- hashes -------------------------------------------------------------------------------

    def _hash(self, obj: KubeObject) -> int:
        if self.ring.field is ShardField.NAMESPACE:
            return hash_value(obj.namespace)
        return hash_value(obj.uid)

    def _owner_uid(self, obj: KubeObject, request: Request) -> str | None:
        """The uid of ``obj``'s controller owner named by ``request`` (of the ``for_`` kind)."""
        owner = self.controller.for_.resource
        refs: Any = obj.get("metadata", {}).get("ownerReferences") or ()
        for ref in refs:
            if not isinstance(ref, Mapping) or ref.get("controller") is not True:
                continue
            uid, version = ref.get("uid"), ref.get("apiVersion")
            if (
                ref.get("kind") == owner.kind
                and isinstance(version, str)
                and version.rpartition("/")[0] == owner.group
                and ref.get("name") == request.name
                and isinstance(uid, str)
            ):
                return uid
            return None
        return None

    def _target_hash(self, source: Informer, obj: KubeObject, request: Request) -> int | None:
        if self.ring.field is ShardField.NAMESPACE:
            return hash_value(request.namespace)
        if source is self.controller.for_ and request == request_for(obj):
            return self._hash(obj)
        uid = self._owner_uid(obj, request)
        if uid is not None:
            return hash_value(uid)
        cached = self.controller.for_.store.get_by_key(request.key)
        return None if cached is None else self._hash(cached)

    def _key_hash(self, request: Request) -> int | None:
        if self.ring.field is ShardField.NAMESPACE:
            return hash_value(request.namespace)
        cached = self.controller.for_.store.get_by_key(request.key)
        if cached is not None:
            return self._hash(cached)
        return self._hashes.get(request)  # gone from the cache: the hash it was queued with

    # -- the controller's partition hook ------------------------------------------------------

    def admit(self, source: Informer, obj: KubeObject, request: Request) -> bool:
        h = self._target_hash(source, obj, request)
        if h is None:
            self._counts["unresolved"] += 1
            return False
        if not self.ring.acts_on(h):
            self._counts["dropped"] += 1
            return False
        self._hashes[request] = h
        self._counts["queued"] += 1
        if len(self._hashes) > 2 * len(self.controller.for_.store) + 1024:
            self._forget_gone()
        return True

    def _forget_gone(self) -> None:
        """Drop the hashes of keys neither cached nor queued (objects deleted and reconciled)."""
        store, queue = self.controller.for_.store, self.controller.queue
        for request in list(self._hashes):
            if store.get_by_key(request.key) is None and request not in queue:
                del self._hashes[request]

    def admits_key(self, request: Request) -> bool:
        h = self._key_hash(request)
        if h is None or not self.ring.acts_on(h):
            self._counts["skipped"] += 1
            return False
        return True

    async def reconcile(self, request: Request, reconcile: ReconcileCall) -> float | Result | None:
        h = self._key_hash(request)
        if h is None or not self.ring.acts_on(h):  # moved away while the worker waited
            self._counts["skipped"] += 1
            return None

        async def call() -> float | Result | None:
            return await reconcile(request)

        running = asyncio.ensure_future(call())  # the worker's context (read-your-writes) too
        self._in_flight[running] = h
        try:
            await asyncio.wait({running})
        except asyncio.CancelledError:  # the worker is stopped, or the reconcile timed out
            running.cancel()
            await asyncio.wait({running})
            raise
        finally:
            del self._in_flight[running]
        if running in self._cut:
            self._cut.discard(running)
            return None
        return running.result()

    # -- the ring's participant ---------------------------------------------------------------

    async def prepare(self, ranges: ShardSet) -> None:
        """Before the member acts on ``ranges``: the caches synced and caught up with the
        server (a consistent list each), so the previous holder's last writes are seen. A
        sharded informer the ring drives has just listed ``ranges`` (consistently, its default
        ``initial_list``, after the claim): that list is its catch-up."""
        c = self.controller
        await asyncio.gather(*(inf.wait_for_sync() for inf in c.informers))
        fresh = {id(p.informer) for p in self.ring.informer_shards() if p.lists_consistently()}
        await asyncio.gather(*(c._catch_up(inf) for inf in c.informers if id(inf) not in fresh))

    def started(self, ranges: ShardSet) -> None:
        """Queue every ``for_`` object of ``ranges``."""
        queued = 0
        for obj in self.controller.for_.store.list():
            h = self._hash(obj)
            if ranges.contains(h):
                request = request_for(obj)
                self._hashes[request] = h
                self.controller.queue.add(request, Priority.INITIAL)
                queued += 1
        self._counts["queued"] += queued
        self._log.info("ring.controller_started", share=round(ranges.share, 6), queued=queued)

    async def stop(self, ranges: ShardSet, timeout: float) -> None:
        """The member no longer acts on ``ranges``: wait for their reconciles in flight, up to
        ``timeout``, then cut the rest."""
        for request, h in list(self._hashes.items()):
            if ranges.contains(h):
                del self._hashes[request]
        running = [t for t, h in self._in_flight.items() if ranges.contains(h)]
        if not running:
            return
        if timeout > 0:
            await asyncio.wait(running, timeout=timeout)
        late = [t for t in running if not t.done()]
        for task in late:
            self._cut.add(task)
            task.cancel()
        if late:
            self._counts["cut"] += len(late)
            self._log.warning("ring.reconciles_cut", count=len(late))
            await asyncio.wait(late)


class InformerShard:
    """The ring's side of a sharded informer (``Informer(..., shards=ShardSet())``): it holds the
    ranges its member acts on, listing a range before the member starts it and dropping it once
    the member stopped."""

    def __init__(self, informer: Informer) -> None:
        if informer.shards is None:
            raise ValueError("an informer created with shards= is needed")
        self.informer = informer

    def lists_consistently(self) -> bool:
        return self.informer.reflector.options.initial_list == "consistent"

    async def prepare(self, ranges: ShardSet) -> None:
        self.informer.set_shards((self.informer.shards or ShardSet()) | ranges)
        await self.informer.wait_for_shards()

    def started(self, ranges: ShardSet) -> None:
        return None

    async def stop(self, ranges: ShardSet, timeout: float) -> None:
        self.informer.set_shards((self.informer.shards or ShardSet()) - ranges)
