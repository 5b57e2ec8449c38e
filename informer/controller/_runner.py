"""The controller runner: object changes become keys in a work queue; workers reconcile them.

``Controller(reconcile, for_=informer, owns=[...], watches=[(informer, mapper)], workers=N)``:

- Changes of ``for_`` objects queue the object's own ``Request``; changes of ``owns`` objects queue
  their controller owner (an ``ownerReferences`` entry with ``controller: true`` of ``for_``'s
  kind); changes of ``watches`` objects queue what their mapper returns. An update queues the
  requests of both the old and the new object.
- Changes found by a list (the initial one, or a relist after a 410, a restore, a consistent
  relist: ``Delta.from_list``) go in at ``Priority.INITIAL``, changes seen on a live watch at
  ``Priority.LIVE``, periodic resyncs (``resync_period``) at ``Priority.RESYNC``.
- Workers start only when every informer has synced and the controller's handlers have received
  the initial state, so a first reconcile never sees a half-filled cache. With ``catch_up`` (the
  default), each run also first waits, up to ``freshness_timeout``, until every informer holds
  at least what a consistent list of its selection shows at that moment: a new leader with warm
  caches must not act on caches older than the previous leader's last writes (it would delete
  what it does not see yet, or create it again). This costs one list per informer and run; a
  cache that does not get there in time is logged and the run starts.
- ``reconcile(request)`` returns ``None`` (done: the key's backoff is forgotten), a delay in
  seconds or a ``Result`` (requeue after it), or raises (rate-limited requeue at the same
  priority). ``reconcile_timeout`` bounds one reconcile (counted, then retried as a failure).
- Read-your-own-writes (on when a writes ``client`` is given): see ``_freshness``. Before
  reconciling a key the controller has written for, it waits up to ``freshness_timeout`` for its
  caches to show those writes; else the key is requeued (rate-limited) and counted as a stale skip.
- Stopping (``stop()``, cancelling ``run()``, leaving ``async with``) is graceful: no new key is
  taken; reconciles in flight finish unless ``shutdown_timeout`` passes first, then they are
  cancelled. The default, 4 s, is below a Lease's ``lease_duration - renew_deadline`` (15 - 10 s):
  a leader that stepped down has stopped reconciling before another replica can take over.
  ``run()`` may be called again after it ended (e.g. on regaining leadership): it starts from the
  caches' current state, as a new leader must.

Every reconcile logs ``controller.reconciled`` (controller, key, duration, result): at DEBUG when
it succeeded, at WARNING when it failed, with the exception's type and the application's line that
led to it (the first frame outside the library), and for an API error the failed request's HTTP
status, reason, verb, resource, namespace and name; never the exception's message (it can quote
object data).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Self

from informer._histogram import RECONCILE_BUCKETS
from informer._log import describe_error, describe_failure, get_logger
from informer.client import Client
from informer.controller._freshness import WriteTracker, reconciling
from informer.controller._keys import (
    Mapper,
    Request,
    Result,
    controller_owner,
    object_of,
    request_for,
)
from informer.controller._partition import Partition
from informer.errors import ApiError, StaleCacheError, TransportError
from informer.informer import Handler, Informer
from informer.objects import KubeObject
from informer.resource_version import (
    InvalidResourceVersion,
    compare_resource_versions,
    is_comparable,
    rv_sort_key,
)
from informer.store import Delta
from informer.workqueue import (
    Clock,
    MonotonicClock,
    Priority,
    QueueShutDown,
    RateLimiter,
    WorkQueue,
    WorkQueueStats,
)
from informer.workqueue._stats import Percentiles, _Window

__all__ = ["Controller", "ControllerState", "ControllerStats", "Reconcile"]

_log = get_logger("informer.controller")

_COUNTER = {  # reconcile result -> ControllerStats counter
    "succeeded": "succeeded",
    "requeued_after": "requeued_after",
    "error": "errors",
    "timeout": "timeouts",
    "cancelled": "cancelled",
}

Reconcile = Callable[[Request], Awaitable[float | Result | None]]


class ControllerState(enum.Enum):
    NEW = "new"
    SYNCING = "syncing"  # waiting for the informers and the initial state
    RUNNING = "running"
    STOPPING = "stopping"  # no new key taken; reconciles in flight finishing
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class ControllerStats:
    """Counters of a controller (over its lifetime) and a snapshot of its queue.

    ``reconciles`` = ``succeeded`` + ``requeued_after`` + ``errors`` + ``timeouts`` (+ those cut by
    a shutdown deadline, ``cancelled``); ``stale_skips`` are keys requeued because the caches had
    not yet seen the controller's own writes (not reconciled); ``freshness_wait`` is the time
    spent waiting for them (keys with pending writes only).
    """

    state: ControllerState
    workers: int
    active: int
    reconciles: int
    succeeded: int
    requeued_after: int
    errors: int
    timeouts: int
    cancelled: int
    stale_skips: int
    writes_tracked: int
    freshness_failed_open: int
    duration: Percentiles
    freshness_wait: Percentiles
    queue: WorkQueueStats


class Controller:
    """Reconciles keys from informer changes with workers (see the module docstring)."""

    def __init__(
        self,
        reconcile: Reconcile,
        *,
        for_: Informer,
        owns: Sequence[Informer] = (),
        watches: Sequence[tuple[Informer, Mapper]] = (),
        workers: int = 1,
        client: Client | None = None,
        name: str | None = None,
        freshness_timeout: float = 5.0,
        reconcile_timeout: float | None = None,
        shutdown_timeout: float = 4.0,
        resync_period: float | None = None,
        catch_up: bool = True,
        rate_limiter: RateLimiter | None = None,
        clock: Clock | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.reconcile = reconcile
        self.for_ = for_
        self.owns = tuple(owns)
        self.watches = tuple(watches)
        self.workers = workers
        self.name = name or for_.resource.kind.lower()
        self.freshness_timeout = freshness_timeout
        self.reconcile_timeout = reconcile_timeout
        self.shutdown_timeout = shutdown_timeout
        self.resync_period = resync_period
        self.catch_up = catch_up
        self._rate_limiter = rate_limiter
        self._clock = clock or MonotonicClock()
        self._log = _log.bind(controller=self.name)
        self._client = client
        self._tracker = WriteTracker(self.informers, self._log)
        self._state = ControllerState.NEW
        self.queue: WorkQueue[Request] = self._new_queue()
        self._task: asyncio.Task[None] | None = None
        self._running = asyncio.Event()
        self._reconciling: dict[asyncio.Task[None], bool] = {}  # worker -> inside reconcile
        self._counts = dict.fromkeys(
            ("reconciles", "succeeded", "requeued_after", "errors", "timeouts", "cancelled"), 0
        )
        self._stale_skips = 0
        self._durations = _Window(buckets=RECONCILE_BUCKETS)  # controller-runtime's layout
        self._freshness_waits = _Window()
        self.partition: Partition | None = None  # set by Ring.shard: reconcile part of the keys

    def _new_queue(self) -> WorkQueue[Request]:
        return WorkQueue(rate_limiter=self._rate_limiter, clock=self._clock, name=self.name)

    @property
    def informers(self) -> list[Informer]:
        """Every informer the controller reads (``for_``, ``owns``, ``watches``)."""
        found: list[Informer] = []
        for inf in (self.for_, *self.owns, *(inf for inf, _ in self.watches)):
            if inf not in found:
                found.append(inf)
        return found

    @property
    def state(self) -> ControllerState:
        return self._state

    # -- lifecycle -----------------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def start(self) -> None:
        """Run in a background task until ``stop``."""
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name=f"controller-{self.name}")

    async def stop(self) -> None:
        """Stop gracefully (see the module docstring) and wait for it."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
            error = None if task.cancelled() else task.exception()
            if error is not None:
                raise error

    async def wait_running(self, timeout: float | None = None) -> None:
        """Until the workers have started (every informer synced, initial state queued)."""
        async with asyncio.timeout(timeout):
            await self._running.wait()

    async def run(self) -> None:
        """Reconcile until cancelled; then stop gracefully."""
        if self._state in (
            ControllerState.SYNCING,
            ControllerState.RUNNING,
            ControllerState.STOPPING,
        ):
            raise RuntimeError(f"controller {self.name} is already running (or stopping)")
        if self._state is not ControllerState.NEW:
            self.queue = self._new_queue()  # a new run starts from the caches, not old keys
        self._state = ControllerState.SYNCING
        unsubscribe = self._client.observe_writes(self._tracker.observe) if self._client else None
        handlers = self._register_handlers()
        workers: list[asyncio.Task[None]] = []
        resync: asyncio.Task[None] | None = None
        try:
            await asyncio.gather(*(inf.wait_for_sync() for inf in self.informers))
            await asyncio.gather(*(handler.wait_idle() for _, handler in handlers))
            if self.catch_up:
                await asyncio.gather(*(self._catch_up(inf) for inf in self.informers))
            self._state = ControllerState.RUNNING
            self._running.set()
            self._log.info("controller.started", workers=self.workers)
            workers = [
                asyncio.create_task(self._worker(), name=f"controller-{self.name}-{i}")
                for i in range(self.workers)
            ]
            if self.resync_period:
                resync = asyncio.create_task(self._resync_loop(self.resync_period))
            await asyncio.wait(workers)  # not gather: a cancelled gather would cut reconciles
        finally:
            self._state = ControllerState.STOPPING
            self._running.clear()
            self.queue.shutdown()
            if resync is not None:
                resync.cancel()
            await self._stop_workers(workers)
            for inf, handler in handlers:
                await inf.remove_handler(handler)
            if unsubscribe is not None:
                unsubscribe()
            self._state = ControllerState.STOPPED
            self._log.info("controller.stopped")

    async def _catch_up(self, inf: Informer) -> None:
        """Until ``inf`` holds at least the state a consistent list of its selection shows now:
        every listed object at its listed RV or newer, none of the cached objects the list no
        longer has. Needs no bookmark, so a quiet resource does not wait. A ``limit=1`` list
        first: when the cache has seen the server's current RV, the full list is skipped.
        Bounded by ``freshness_timeout``; fails open (logged)."""
        log = self._log.bind(resource=inf.resource.group_resource)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.freshness_timeout
        try:
            reflector = inf.reflector
            probe = await reflector.transport.list_page(
                inf.resource, namespace=reflector.namespace, limit=1
            )
            if is_comparable(probe.resource_version) and inf.store.is_fresh(probe.resource_version):
                return  # the cache has seen the server's current RV: nothing can be missing
            listed, list_rv = await _list_all(inf)
            newest = max(
                (rv for rv in listed.values() if is_comparable(rv)), key=rv_sort_key, default=None
            )
            if newest is not None:
                await inf.wait_for_resource_version(newest, max(0.0, deadline - loop.time()))
            if not is_comparable(list_rv):
                return
            for obj in inf.store.list():
                rv = obj.resource_version
                if obj.uid in listed or not is_comparable(rv):
                    continue
                if compare_resource_versions(rv, list_rv) <= 0:  # existed when listed: gone since
                    status = {"kind": "Status", "details": {"name": obj.name, "uid": obj.uid}}
                    await inf.wait_for_deletion(status, max(0.0, deadline - loop.time()))
        except StaleCacheError:
            log.warning("controller.catch_up_timeout")
        except (InvalidResourceVersion, ApiError, TransportError) as exc:
            log.warning("controller.catch_up_failed", error=describe_error(exc))

    async def _stop_workers(self, workers: list[asyncio.Task[None]]) -> None:
        """Let reconciles in flight finish (up to ``shutdown_timeout``); cut everything else."""
        for task in workers:
            if not self._reconciling.get(task, False):
                task.cancel()  # idle, or waiting for freshness: nothing to finish
        pending = [t for t in workers if not t.done()]
        if pending:
            _, late = await asyncio.wait(pending, timeout=self.shutdown_timeout)
            for task in late:
                task.cancel()
            if late:
                self._log.warning("controller.shutdown_deadline", cut=len(late))
                await asyncio.wait(late)

    # -- changes to keys -----------------------------------------------------------------------
    def _register_handlers(self) -> list[tuple[Informer, Handler]]:
        handlers = [(self.for_, self._handler(self.for_, lambda o: (request_for(o),)))]
        owner = self.for_.resource

        def owned(obj: KubeObject) -> Iterable[Request]:
            request = controller_owner(obj, owner)
            return () if request is None else (request,)

        handlers += [(inf, self._handler(inf, owned)) for inf in self.owns]
        handlers += [(inf, self._handler(inf, mapper)) for inf, mapper in self.watches]
        return handlers

    def _handler(self, inf: Informer, mapper: Mapper) -> Handler:
        def enqueue(obj: KubeObject, priority: int) -> None:
            try:
                requests = list(mapper(obj))
            except Exception as exc:
                self._log.error("controller.mapper_failed", **describe_failure(exc))
                return
            partition = self.partition
            for request in requests:
                if partition is None or partition.admit(inf, obj, request):
                    self.queue.add(request, priority)

        def on_change(delta: Delta) -> None:
            priority = Priority.INITIAL if delta.from_list else Priority.LIVE
            if delta.type == "updated" and delta.old is not None:
                enqueue(delta.old, priority)  # both: a mapper's answer may have changed
            enqueue(object_of(delta.obj), priority)

        return inf.add_delta_handler(on_change, name=f"controller-{self.name}")

    async def _resync_loop(self, period: float) -> None:
        while True:
            await self._clock.sleep(period)
            for obj in self.for_.store.list():
                self.queue.add(request_for(obj), Priority.RESYNC)

    # -- workers -------------------------------------------------------------------------------
    async def _worker(self) -> None:
        task = asyncio.current_task()
        assert task is not None
        try:
            while True:
                try:
                    request, priority = await self.queue.get_with_priority()
                except QueueShutDown:
                    return
                try:
                    await self._process(task, request, priority)
                finally:
                    self.queue.done(request)
        finally:
            self._reconciling.pop(task, None)

    async def _process(self, task: asyncio.Task[None], request: Request, priority: int) -> None:
        if self.partition is not None and not self.partition.admits_key(request):
            return  # its range moved away since it was queued
        if self._tracker.pending(request):
            started = self._clock.now()
            fresh = await self._tracker.wait_fresh(request, self.freshness_timeout)
            self._freshness_waits.add(self._clock.now() - started)
            if not fresh:
                self._stale_skips += 1
                self.queue.add_rate_limited(request, priority)
                self._log.info("controller.stale_skip", key=request.key)
                return
        self._reconciling[task] = True
        token = reconciling.set((self._tracker, request))
        started = self._clock.now()
        try:
            async with asyncio.timeout(self.reconcile_timeout):
                if self.partition is None:
                    outcome = await self.reconcile(request)
                else:
                    outcome = await self.partition.reconcile(request, self.reconcile)
        except TimeoutError:
            self._finish(request, priority, "timeout", started, None)
            self.queue.add_rate_limited(request, priority)
        except asyncio.CancelledError:
            self._finish(request, priority, "cancelled", started, None)
            raise
        except Exception as exc:
            self._finish(request, priority, "error", started, exc)
            self.queue.add_rate_limited(request, priority)
        else:
            self.queue.forget(request)
            after, requeue_priority = _requeue_of(outcome)
            if after is None:
                self._finish(request, priority, "succeeded", started, None)
            else:
                self._finish(request, priority, "requeued_after", started, None)
                self.queue.add_after(
                    request, after, priority if requeue_priority is None else requeue_priority
                )
        finally:
            reconciling.reset(token)
            self._reconciling[task] = False

    def _finish(
        self,
        request: Request,
        priority: int,
        result: str,
        started: float,
        exc: BaseException | None,
    ) -> None:
        duration = self._clock.now() - started
        self._durations.add(duration)
        self._counts["reconciles"] += 1
        self._counts[_COUNTER[result]] += 1
        fields: dict[str, object] = {
            "key": request.key,
            "priority": int(priority),
            "duration": round(duration, 6),
            "result": result,
        }
        if exc is not None:
            fields.update(describe_failure(exc))  # the user's line; the API request, if any
            fields["retries"] = self.queue.num_requeues(request)
        level = self._log.debug if result in ("succeeded", "requeued_after") else self._log.warning
        level("controller.reconciled", **fields)

    # -- statistics ----------------------------------------------------------------------------
    def statistics(self) -> ControllerStats:
        return ControllerStats(
            state=self._state,
            workers=self.workers,
            active=sum(self._reconciling.values()),
            stale_skips=self._stale_skips,
            writes_tracked=self._tracker.recorded,
            freshness_failed_open=self._tracker.failed_open,
            duration=self._durations.percentiles(),
            freshness_wait=self._freshness_waits.percentiles(),
            queue=self.queue.statistics(),
            **self._counts,
        )


async def _list_all(inf: Informer) -> tuple[dict[str, str], str]:
    """uid -> RV of every object in ``inf``'s selection now (a consistent, paginated list), and
    the list's RV."""
    reflector = inf.reflector
    listed: dict[str, str] = {}
    continue_: str | None = None
    while True:
        page = await reflector.transport.list_page(
            inf.resource,
            namespace=reflector.namespace,
            label_selector=reflector.label_selector,
            field_selector=reflector.field_selector,
            limit=500,
            continue_=continue_,
        )
        listed.update((o.uid, o.resource_version) for o in page.items)
        if not page.continue_:
            return listed, page.resource_version
        continue_ = page.continue_


def _requeue_of(outcome: float | Result | None) -> tuple[float | None, int | None]:
    if outcome is None:
        return None, None
    if isinstance(outcome, Result):
        return outcome.requeue_after, outcome.priority
    return float(outcome), None
