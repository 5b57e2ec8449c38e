"""The controller runner: object changes become keys in a work queue; workers reconcile them.

``Controller(reconcile, for_=informer, owns=[...], watches=[(informer, mapper)], workers=N)``:

- Changes of ``for_`` objects queue the object's own ``Request``; changes of ``owns`` objects queue
  their controller owner (an ``ownerReferences`` entry with ``controller: true`` of ``for_``'s
  kind); changes of ``watches`` objects queue what their mapper returns. An update queues the
  requests of both the old and the new object.
- ``for_filter`` (an ``EventFilter``, e.g. ``generation_changed``: skip status-only updates)
  decides which changes of ``for_`` objects queue a reconcile; changes of ``owns`` and
  ``watches`` objects always do (a child's status is what the parent's reconcile reads).
- Changes found by a list (the initial one, or a relist after a 410, a restore, a consistent
  relist: ``Delta.from_list``) go in at ``Priority.INITIAL``, changes seen on a live watch at
  ``Priority.LIVE``, periodic resyncs (``resync_period``) at ``Priority.RESYNC``.
- Workers start only when every informer has synced and the controller's handlers have received
  the initial state, so a first reconcile never sees a half-filled cache. With ``catch_up`` (the
  default), each run also first waits, up to ``freshness_timeout``, until every informer holds
  at least what a consistent list of its selection shows at that moment (``_catch_up``).
- ``reconcile(request)`` returns ``None`` (done: the key's backoff is forgotten), a delay in
  seconds or a ``Result`` (requeue after it), or raises (rate-limited requeue at the same
  priority). Whatever escapes a reconcile is such a failure, a ``CancelledError`` included when
  the worker itself was not cancelled (the reconcile awaited something another task cancelled:
  a shared lookup, a shielded task): only a real cancellation of the worker ends it.
  ``reconcile_timeout`` bounds one reconcile (counted, then retried as a failure).
- Read-your-own-writes (on when a writes ``client`` is given): see ``_freshness``. Before
  reconciling a key the controller has written for, it waits up to ``freshness_timeout`` for its
  caches to show those writes; else the key is requeued (rate-limited) and counted as a stale skip.

Lifecycle (``ControllerState``; the informer's rules): ``start()`` runs the controller in a
background task, ``await run()`` runs it in the caller's task, ``async with`` is start + stop.
``await stop()`` stops it however it runs (a ``run()`` then returns ``None``) and returns, in
every concurrent caller, only once it has stopped. Stopping is graceful: no new key is taken;
reconciles in flight finish unless ``shutdown_timeout`` passes first, then they are cancelled. The
default, 4 s, is below a Lease's ``lease_duration - renew_deadline`` (15 - 10 s): a leader that
stepped down has stopped reconciling before another replica can take over. A start (or run)
during a stop takes effect once that stop's teardown has ended: one run at a time. Each run starts
from the caches' current state, as a new leader must (keys left in the queue by the previous run
are dropped); the queue itself, its counters and the controller's counters last the controller's
life. A run that can no longer reconcile (a worker ended by something other than a stop: a
``BaseException`` out of a reconcile, a bug) stops gracefully and fails: ``run()`` raises the
error, the state is ``FAILED``, ``error`` holds it, and for a controller run by ``start()`` the
next ``stop()`` (or leaving ``async with``) raises it. It never looks like a clean stop: under
``LeaderElector.run(on_started_leading=controller.run)`` the replica gives up its Lease. One
failure is one error line: ``controller.worker_ended`` (a warning) says which worker ended and
why; a run begun by ``start()`` logs ``controller.failed`` (an error: nobody else sees it before
the next ``stop()``), while ``run()`` leaves the report to its caller, which gets the error (a
``Manager`` logs ``manager.part_failed`` with ``part="controller:<name>"``).

Every reconcile logs ``controller.reconciled`` (controller, key, duration, result): at DEBUG when
it succeeded, at WARNING when it failed, with the exception's type and the application's line that
led to it (the first frame outside the library), and for an API error the failed request's HTTP
status, reason, verb, resource, namespace and name; never the exception's message (it can quote
object data).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Self

from informer._histogram import RECONCILE_BUCKETS
from informer._log import describe_error, describe_failure, get_logger
from informer.client import Client
from informer.controller._catch_up import catch_up
from informer.controller._filters import EventFilter
from informer.controller._freshness import WriteTracker, reconciling
from informer.controller._keys import (
    Mapper,
    Request,
    Result,
    controller_owner,
    object_of,
    request_for,
)
from informer.controller._lifecycle import ACTIVE, ControllerState, Driver, ended
from informer.controller._partition import Partition
from informer.controller._stats import ControllerStats
from informer.informer import Handler, Informer
from informer.objects import KubeObject
from informer.store import Delta
from informer.workqueue import (
    Clock,
    MonotonicClock,
    Priority,
    QueueShutDown,
    RateLimiter,
    WorkQueue,
)
from informer.workqueue._stats import _Window

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


class Controller:
    """Reconciles keys from informer changes with workers (see the module docstring).

    Lifecycle API: ``start()``, ``await stop()``, ``await run()``, ``async with``, ``state``
    (``ControllerState``), ``error`` (what the last run failed with), ``await
    wait_running(timeout)``. The informers are the caller's to start and stop.
    """

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
        for_filter: EventFilter | None = None,
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
        self.for_filter = for_filter
        self._clock = clock or MonotonicClock()
        self._log = _log.bind(controller=self.name)
        self._client = client
        self._tracker = WriteTracker(self.informers, self._log)
        self._state = ControllerState.NEW
        self._driver: Driver | None = None  # the latest; an older one may still be ending
        self._error: BaseException | None = None
        self.queue: WorkQueue[Request] = WorkQueue(
            rate_limiter=rate_limiter, clock=self._clock, name=self.name
        )
        """The controller's one work queue, for its whole life (emptied at each run's start)."""
        self._running = asyncio.Event()
        self._reconciling: dict[asyncio.Task[None], bool] = {}  # worker -> inside reconcile
        self._runs = 0
        self._counts = dict.fromkeys(
            ("reconciles", "succeeded", "requeued_after", "errors", "timeouts", "cancelled"), 0
        )
        self._stale_skips = 0
        self._durations = _Window(buckets=RECONCILE_BUCKETS)  # controller-runtime's layout
        self._freshness_waits = _Window()
        self.partition: Partition | None = None  # set by Ring.shard: reconcile part of the keys

    @property
    def informers(self) -> list[Informer]:
        """Every informer the controller reads (``for_``, ``owns``, ``watches``)."""
        found: list[Informer] = []
        for inf in (self.for_, *self.owns, *(inf for inf, _ in self.watches)):
            if inf not in found:
                found.append(inf)
        return found

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def state(self) -> ControllerState:
        return self._state

    @property
    def error(self) -> BaseException | None:
        """What the last run failed with (state ``FAILED``); None otherwise."""
        return self._error

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
        """Run in a background task until ``stop``.

        Does nothing while it runs (``SYNCING``, ``RUNNING``). During a stop, the controller runs
        again as soon as that stop's teardown has ended. A failure of this run is logged
        (``controller.failed``), puts the controller in ``FAILED`` and is raised by the next
        ``stop()``.
        """
        if self._state not in ACTIVE:
            self._launch(by_run=False)

    async def stop(self) -> None:
        """Stop gracefully (see the module docstring) and return once stopped.

        Stops the controller however it runs (``start``, ``async with``, ``run``: that ``run``
        returns ``None``); every concurrent ``stop`` returns only once it has stopped, unless a
        later ``start`` or ``run`` runs it again. Raises the error a run begun by ``start``
        failed with, once (a ``run`` raises its own failure). Does nothing on a controller that
        is not running.
        """
        driver = self._begin_stop()
        await ended(driver)
        if driver is not None and not driver.by_run and not driver.failure_reported:
            error = driver.error
            if error is not None:
                driver.failure_reported = True
                raise error

    async def run(self) -> None:
        """Run in the caller's task: sync, reconcile until stopped, then stop gracefully.

        Returns ``None`` when ``stop()`` stopped it. Cancelled, it stops gracefully and raises
        ``CancelledError`` only once its teardown has ended (reconciles finished or cut at
        ``shutdown_timeout``), even if cancelled again meanwhile: a leader's work must have
        stopped when its term's ``run`` returns. Raises the error a failed run ended with.
        Raises ``RuntimeError`` if the controller is already running (``start``, ``async with``
        or another ``run``): two runs would take keys from one queue.
        """
        if self._state in ACTIVE:
            raise RuntimeError(f"controller {self.name} is already running")
        driver = self._launch(by_run=True)
        try:
            await ended(driver)
        except asyncio.CancelledError:
            if self._driver is driver:  # not replaced by a later start: stop it
                self._begin_stop()
            await _through_cancellation(ended(driver))
            raise
        error = driver.error
        if error is not None:
            raise error

    async def wait_running(self, timeout: float | None = None) -> None:
        """Until the workers have started (every informer synced, initial state queued)."""
        async with asyncio.timeout(timeout):
            await self._running.wait()

    def _begin_stop(self) -> Driver | None:
        """Cancel the running driver (once); the driver ``stop`` must wait for, if any."""
        driver = self._driver
        if driver is not None and self._state in ACTIVE:
            self._state = ControllerState.STOPPING
            driver.task.cancel()
        return driver

    def _launch(self, *, by_run: bool) -> Driver:
        """A new driver, chained after the one that may still be stopping."""
        driver = Driver(self._driver, by_run=by_run)
        driver.task = asyncio.create_task(self._drive(driver), name=f"controller-{self.name}")
        driver.task.add_done_callback(lambda _: self._ended(driver))  # also if it never ran
        self._driver = driver
        self._state = ControllerState.SYNCING
        self._error = None
        self._runs += 1
        return driver

    def _set_state(self, driver: Driver, state: ControllerState) -> None:
        if self._driver is driver:  # an older driver ending does not touch the newer one's state
            self._state = state

    def _ended(self, driver: Driver) -> None:
        error = driver.error
        if error is not None and not driver.by_run:  # run() raises it to its caller, who reports
            self._log.error("controller.failed", error=describe_error(error))
        if self._driver is driver:
            self._state = ControllerState.STOPPED if error is None else ControllerState.FAILED
            self._error = error

    async def _drive(self, driver: Driver) -> None:
        try:
            await ended(driver.previous)  # its teardown first: one run at a time
            driver.previous = None
            await self._run_once(driver)
        finally:
            if driver.previous is not None:  # stopped before the previous one had ended
                await ended(driver.previous)

    async def _run_once(self, driver: Driver) -> None:
        """One run: sync, reconcile until cancelled (stop) or a worker ends, then tear down.
        Raises the failure that ended it, or a worker's failure met while tearing down."""
        if self.queue.is_shutting_down:  # a run starts from the caches: no key of the last run
            self.queue.restart()  # (keys queued before the first run, e.g. by a ring, stay)
        unsubscribe = self._client.observe_writes(self._tracker.observe) if self._client else None
        handlers = self._register_handlers()
        workers: list[asyncio.Task[None]] = []
        resync: list[asyncio.Task[None]] = []
        failure: BaseException | None = None
        try:
            await asyncio.gather(*(inf.wait_for_sync() for inf in self.informers))
            await asyncio.gather(*(handler.wait_idle() for _, handler in handlers))
            if self.catch_up:
                await asyncio.gather(*(self._catch_up(inf) for inf in self.informers))
            self._set_state(driver, ControllerState.RUNNING)
            self._running.set()
            self._log.info("controller.started", workers=self.workers)
            workers += [
                asyncio.create_task(self._worker(), name=f"controller-{self.name}-{i}")
                for i in range(self.workers)
            ]
            if self.resync_period:
                resync.append(
                    asyncio.create_task(
                        self._resync_loop(self.resync_period), name=f"controller-{self.name}-resync"
                    )
                )
            # not gather: a cancelled gather would cut reconciles
            done, _ = await asyncio.wait(workers + resync, return_when=asyncio.FIRST_COMPLETED)
            failure = self._failure_of(done.pop())
        finally:
            self._set_state(driver, ControllerState.STOPPING)
            self._running.clear()
            self.queue.shutdown()
            for task in resync:
                task.cancel()
            await self._stop_workers(workers)
            if resync:
                await asyncio.wait(resync)
            for inf, handler in handlers:
                await inf.remove_handler(handler)
            if unsubscribe is not None:
                unsubscribe()
            self._log.info("controller.stopped")
            failure = failure or next(
                (f for t in workers + resync if (f := _error_of(t)) is not None), None
            )
            if failure is not None:  # also over a stop in flight: it must not look clean
                raise failure

    def _failure_of(self, task: asyncio.Task[None]) -> BaseException:
        """Why a worker (or the resync loop) ended while the controller was running."""
        error = _error_of(task)
        how = "cancelled" if task.cancelled() else "returned"
        described = describe_error(error) if error is not None else how
        # a warning: the failure's error line is controller.failed, or run()'s caller's
        self._log.warning("controller.worker_ended", task=task.get_name(), error=described)
        if error is not None:
            return error
        return RuntimeError(f"controller {self.name}: {task.get_name()} {how} while running")

    async def _catch_up(self, inf: Informer) -> None:
        """Until ``inf`` holds at least what a consistent list of its selection shows now, bounded
        by ``freshness_timeout`` (``_catch_up.catch_up``; a sharded range's start uses it too)."""
        await catch_up(inf, self.freshness_timeout, self._log)

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
        handlers = [
            (self.for_, self._handler(self.for_, lambda o: (request_for(o),), self.for_filter))
        ]
        owner = self.for_.resource

        def owned(obj: KubeObject) -> Iterable[Request]:
            request = controller_owner(obj, owner)
            return () if request is None else (request,)

        handlers += [(inf, self._handler(inf, owned)) for inf in self.owns]
        handlers += [(inf, self._handler(inf, mapper)) for inf, mapper in self.watches]
        return handlers

    def _handler(
        self, inf: Informer, mapper: Mapper, event_filter: EventFilter | None = None
    ) -> Handler:
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
            if event_filter is not None and not self._admit(event_filter, delta):
                return
            priority = Priority.INITIAL if delta.from_list else Priority.LIVE
            if delta.type == "updated" and delta.old is not None:
                enqueue(delta.old, priority)  # both: a mapper's answer may have changed
            enqueue(object_of(delta.obj), priority)

        return inf.add_delta_handler(on_change, name=f"controller-{self.name}")

    def _admit(self, event_filter: EventFilter, delta: Delta) -> bool:
        """The filter's verdict; a filter that raises lets the change through (logged): a
        reconcile too many is safe, a change silently lost is not."""
        try:
            return bool(event_filter(delta))
        except Exception as exc:
            self._log.error("controller.filter_failed", **describe_failure(exc))
            return True

    async def _resync_loop(self, period: float) -> None:
        while True:
            await self._clock.sleep(period)
            for obj in self.for_.store.list():
                self.queue.add(request_for(obj), Priority.RESYNC)

    # -- workers -------------------------------------------------------------------------------
    async def _worker(self) -> None:
        """Take keys until the queue shuts down or this worker is cancelled (a reconcile that
        swallowed the cancellation still ends the worker once it returns)."""
        task = asyncio.current_task()
        assert task is not None
        try:
            while not task.cancelling():
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

    async def _process(self, task: asyncio.Task[Any], request: Request, priority: int) -> None:
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
        except asyncio.CancelledError as exc:
            if task.cancelling():  # this worker is being cancelled (a stop): end it
                self._finish(request, priority, "cancelled", started, None)
                raise
            # the reconcile awaited something another task cancelled: a failure like any other
            self._finish(request, priority, "error", started, exc)
            self.queue.add_rate_limited(request, priority)
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
            runs=self._runs,
            stale_skips=self._stale_skips,
            writes_tracked=self._tracker.recorded,
            freshness_failed_open=self._tracker.failed_open,
            duration=self._durations.percentiles(),
            freshness_wait=self._freshness_waits.percentiles(),
            queue=self.queue.statistics(),
            **self._counts,
        )


async def _through_cancellation(waited: Awaitable[None]) -> None:
    """Await ``waited`` to its end even if the caller is cancelled again meanwhile (the caller
    raises its ``CancelledError`` after)."""
    future = asyncio.ensure_future(waited)
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            continue


def _error_of(task: asyncio.Task[Any]) -> BaseException | None:
    return None if not task.done() or task.cancelled() else task.exception()


def _requeue_of(outcome: float | Result | None) -> tuple[float | None, int | None]:
    if outcome is None:
        return None, None
    if isinstance(outcome, Result):
        return outcome.requeue_after, outcome.priority
    return float(outcome), None
