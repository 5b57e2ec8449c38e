"""The Manager: runs an operator's informers, controllers and leader election as Kubernetes runs a
controller process (controller-runtime's ``Manager``, kopf's ``kopf run``).

``Manager(api, leader_election="name")`` owns a writes ``Client`` and a ``SharedInformerFactory``
over ``api``; ``informer(...)`` and ``controller(...)`` (or ``add``) give it the parts. Running it
(``await manager.run()``, or ``async with manager`` in a test):

1. serves ``/healthz``, ``/readyz`` and ``/metrics`` on one port (``port``, 8080; 0 picks a free
   one, None serves nothing; ``host`` None: every interface, IPv4 and IPv6) and starts a
   loop-lag watchdog;
2. starts every informer and waits until they have synced;
3. runs the controllers: at once, or, with leader election, during each term of the Lease this
   replica holds (every replica keeps its informers warm; a standby takes over on warm caches);
4. on SIGTERM or SIGINT (``run``), ``stop()``, leaving ``async with`` or cancelling ``run``:
   stops gracefully, in this order: the controllers take no new key, reconciles in flight finish
   (each controller's ``shutdown_timeout``), the Lease is released (a standby takes over at its
   next retry, not after the Lease expires), the informers stop, the event recorders write what
   they hold (``event_recorder``), the server stops, the API client is closed. The whole stop
   is bounded by ``shutdown_timeout`` (controller-runtime's ``GracefulShutdownTimeout``; 25 s
   here, not 30, to end within Kubernetes' default ``terminationGracePeriodSeconds``, 30 s,
   after which the kubelet kills). Past it the manager stops waiting: it logs the parts asked
   to stop that had not ended (``manager.shutdown_deadline``, ``not_stopped``), cancels them
   once more, releases the Lease if it holds it (unless the elector's ``release_on_cancel`` is
   off) while the informers stop (at most 1 s more: an informer whose handler ignores its
   cancellation is left behind too), closes the rest, and ``run()`` raises ``ShutdownTimeout``
   ("failed waiting for all runnables to end within grace period of 25s (not stopped: ...)").
   A part that ignores even that cancellation is left behind: with ``handle_signals`` the
   process then exits with status 1 (``asyncio.run`` would wait for it forever); the API client
   is closed before, so it can no longer write (with ``close_client=False`` it can: exit).
   Keep each controller's ``shutdown_timeout`` below the manager's (a warning says when not);
   event writes still pending at the deadline fail on the closed client.
   A second signal exits the process at once (status 1).

``run()`` returns once stopped (so ``asyncio.run(main())`` exits 0). If a part failed (a
controller, a runnable or the election; see ``_parts``), while running or while being stopped,
it is logged once with the part's name (``manager.part_failed``: ``controller:<name>``,
``runnable:<name>``, ``leader-election``), the manager stops the same way, and ``run()`` (or
leaving ``async with``) raises that error, or an ``ExceptionGroup`` of every one when several
failed (controller-runtime aggregates the error that ended it with those of its stop).

Probes (see ``_probes`` and ``_endpoints``): ``/healthz`` fails when the event loop lags more than
``max_loop_lag`` or an informer's task has ended while the manager runs (a loop blocked for
longer is logged, with where it is blocked, by the watchdog's thread); ``/readyz`` passes once
every informer has synced and, where this replica leads (or without election), every controller
has started (synced and caught up); a standby replica is ready. ``add_health_check`` and
``add_ready_check`` add the application's own.

``event_recorder(name)`` is the ``EventRecorder`` of a reporting controller (controller-runtime's
``GetEventRecorderFor``): it writes ``events.k8s.io/v1`` Events through the manager's ``client``,
one recorder per name (its aggregation and rate limits shared by every caller of that name), and
is closed by the stop, so an event recorded by a reconcile finishing during the stop is written.

``add_runnable(fn)`` runs a coroutine function of your own alongside (controller-runtime's
``Runnable``): in every replica once synced, or during each term (``needs_leader``); it is
cancelled with the controllers, before the Lease is released.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from informer._log import get_logger
from informer.client import Client
from informer.controller import Controller, Mapper, Reconcile
from informer.errors import ShutdownTimeout
from informer.event_recorder import EventRecorder
from informer.informer import Informer, InformerState, SharedInformerFactory
from informer.leader_election import LeaderElector
from informer.manager._endpoints import Check, Endpoints
from informer.manager._metrics import MetricsExport
from informer.manager._parts import Parts
from informer.manager._probes import describe, liveness, readiness
from informer.manager._signals import exit_process, stop_on_signals
from informer.manager._state import ManagerState
from informer.manager._watchdog import LoopWatchdog
from informer.reflector import ReflectorOptions
from informer.resource import Resource

__all__ = ["DEFAULT_PORT", "Manager", "ManagerState", "pod_namespace"]

_log = get_logger("informer.manager")

DEFAULT_PORT = 8080  # controller-runtime's metrics port; here the probes share it
_CUT_GRACE = 1.0  # seconds the informers get to stop once the stop's deadline has passed
_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def pod_namespace(default: str = "default") -> str:
    """The namespace this pod runs in (its service account's), else ``default``."""
    try:
        return _NAMESPACE_FILE.read_text().strip() or default
    except OSError:
        return default


class Manager:
    """Runs informers, controllers, an optional leader election, probes and metrics (see the
    module docstring).

    ``api`` is a ``kubernetes_asyncio`` ``ApiClient`` (``await connect()``); the manager closes it
    when it stops (``close_client=False`` leaves it open). ``client`` is the writes ``Client`` (one
    with ``field_manager`` is made). ``leader_election`` is a Lease name (in
    ``leader_election_namespace``, else this pod's namespace, else ``default``) or a
    ``LeaderElector`` of your own (its timings and identity); None runs the controllers at once.
    ``options`` are the informers' ``ReflectorOptions``. ``registry``: the Prometheus registry
    ``/metrics`` serves (the default one); the manager's parts are collected in it while it
    serves (``port`` not None).
    """

    def __init__(
        self,
        api: Any,
        *,
        client: Client | None = None,
        field_manager: str = "informer",
        leader_election: str | LeaderElector | None = None,
        leader_election_namespace: str | None = None,
        options: ReflectorOptions | None = None,
        host: str | None = None,
        port: int | None = DEFAULT_PORT,
        shutdown_timeout: float = 25.0,
        max_loop_lag: float = 5.0,
        close_client: bool = True,
        registry: Any | None = None,
        watchdog: LoopWatchdog | None = None,
    ) -> None:
        self.api = api
        self.client = client if client is not None else Client(api, field_manager=field_manager)
        self.factory = SharedInformerFactory(api, options=options)
        if isinstance(leader_election, str):
            namespace = leader_election_namespace or pod_namespace()
            leader_election = LeaderElector(self.client, leader_election, namespace)
        self.elector: LeaderElector | None = leader_election
        self.host = host
        self.port = port
        self.shutdown_timeout = shutdown_timeout
        self.close_client = close_client
        self.watchdog = watchdog or LoopWatchdog(max_lag=max_loop_lag)
        self._metrics = MetricsExport(registry)
        self._informers: list[Informer] = []  # added one by one (not through a factory)
        self._factories: list[SharedInformerFactory] = [self.factory]
        self._controllers: list[Controller] = []
        self._health_checks: list[Check] = []
        self._ready_checks: list[Check] = []
        self._state = ManagerState.NEW
        self._endpoints: Endpoints | None = None
        self._work: asyncio.Task[None] | None = None
        self._runnables: list[_Runnable] = []
        self._recorders: dict[str, EventRecorder] = {}  # by reporting controller
        self._recorders_closed = False  # the stop closed them: no new one
        self._parts = Parts(_log, self._part_failed)  # every task below, by name
        self._leader_tasks: list[asyncio.Task[None]] = []  # controllers, leader runnables
        self._runnable_tasks: list[asyncio.Task[None]] = []  # runnables of every replica
        self._leading = False  # controllers run in this replica (a term, or no election)
        self._stop_requested = asyncio.Event()  # binds to a loop on first use
        self._began = False  # start() was entered (a manager stopped before that never runs)
        self._served = asyncio.Event()  # start() has bound its port, or failed to, or has none
        self._stopping: asyncio.Task[None] | None = None  # the one stop, once begun
        self._failure: BaseException | None = None  # what run() raises, once stopped
        self._deadline_passed: ShutdownTimeout | None = None
        self._informers_stopping = False  # the graceful stop has come to the informers
        self._informers_stop: asyncio.Future[None] | None = None  # theirs after a cut
        self._stop_reason = "stop"
        self._log = _log

    # -- building --------------------------------------------------------------------------
    def informer(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Callable[[dict[str, Any]], Any] | None = None,
    ) -> Informer:
        """The shared informer of the manager's factory for this resource and scope."""
        return self.factory.informer(
            resource,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            transform=transform,
        )

    def controller(
        self,
        reconcile: Reconcile,
        *,
        for_: Informer,
        owns: Sequence[Informer] = (),
        watches: Sequence[tuple[Informer, Mapper]] = (),
        **options: Any,
    ) -> Controller:
        """A ``Controller`` run by this manager, reading its own writes through ``client`` (the
        ``Controller`` arguments; ``client=None`` turns read-your-own-writes off)."""
        options.setdefault("client", self.client)
        controller = Controller(reconcile, for_=for_, owns=owns, watches=watches, **options)
        self.add(controller)
        return controller

    def add(self, *parts: Informer | SharedInformerFactory | Controller) -> None:
        """Run these too: informers and factories from start to stop, controllers where this
        replica leads. Their informers must be added too (or come from ``informer``)."""
        if self._state is not ManagerState.NEW:
            raise RuntimeError("add parts before the manager starts")
        for part in parts:
            if isinstance(part, Controller):
                bucket: list[Any] = self._controllers
            elif isinstance(part, SharedInformerFactory):
                bucket = self._factories
            elif isinstance(part, Informer):
                bucket = self._informers
            else:
                raise TypeError(f"cannot run a {type(part).__name__}")
            if part not in bucket:
                bucket.append(part)

    def event_recorder(
        self, reporting_controller: str, *, reporting_instance: str | None = None, **options: Any
    ) -> EventRecorder:
        """The ``EventRecorder`` of ``reporting_controller`` (e.g. ``example.com/mirror``),
        writing through the manager's ``client`` (controller-runtime's ``GetEventRecorderFor``).
        One per name: the first call makes it (``reporting_instance``, default
        ``<controller>-<hostname>``, and the ``EventRecorder`` options), later calls return it.
        The manager's stop closes it after the controllers and runnables stopped and before the
        API client closes: what it holds is written (within ``shutdown_timeout``)."""
        if self._recorders_closed:
            raise RuntimeError("the manager has stopped: no event would be written")
        recorder = self._recorders.get(reporting_controller)
        if recorder is None:
            recorder = EventRecorder(
                self.client,
                reporting_controller,
                reporting_instance=reporting_instance,
                **options,
            )
            self._recorders[reporting_controller] = recorder
        elif options or (
            reporting_instance is not None and reporting_instance != recorder.reporting_instance
        ):
            raise ValueError(
                f"the event recorder of {reporting_controller!r} is made already: its options "
                "are those of the first call"
            )
        return recorder

    def add_runnable(
        self,
        run: Callable[[], Coroutine[Any, Any, None]],
        *,
        needs_leader: bool = False,
        name: str | None = None,
    ) -> None:
        """Run ``run()`` too (controller-runtime's ``Runnable``): once the informers have synced,
        in every replica, or during each term of the Lease (``needs_leader``). It is cancelled on
        stop with the controllers, before the Lease is released and the informers stop (it may
        finish gracefully on cancellation); if it raises, also while being cancelled, the
        manager stops and ``run()`` raises that, the runnable named ``runnable:<name>`` in the
        log (``name``, by default the function's qualified name). E.g.
        ``manager.add_runnable(ring.run)`` for a sharding ``Ring``."""
        if self._state is not ManagerState.NEW:
            raise RuntimeError("add runnables before the manager starts")
        if inspect.iscoroutine(run) or not callable(run):
            if inspect.iscoroutine(run):
                run.close()  # never awaited: no warning about it
            raise TypeError(
                "add_runnable takes a coroutine function (manager.add_runnable(ring.run)), "
                f"not a {type(run).__name__}"
            )
        label = name or getattr(run, "__qualname__", None) or "runnable"
        self._runnables.append(_Runnable(run, label, needs_leader))

    def add_health_check(self, name: str, check: Callable[[], str | None]) -> None:
        """A liveness check of your own: ``check()`` returns None when healthy, else why not (a
        short reason, never an object's data). A plain function, called at every probe on the
        loop: it must not block; one that raises fails (logged once per outage)."""
        self._health_checks.append(Check(name, _plain(check)))

    def add_ready_check(self, name: str, check: Callable[[], str | None]) -> None:
        """A readiness check of your own (as ``add_health_check``)."""
        self._ready_checks.append(Check(name, _plain(check)))

    # -- what runs ----------------------------------------------------------------------------
    @property
    def state(self) -> ManagerState:
        return self._state

    @property
    def informers(self) -> list[Informer]:
        """Every informer the manager runs (its factories' and those added)."""
        found: list[Informer] = []
        for inf in [*(i for f in self._factories for i in f.informers), *self._informers]:
            if inf not in found:
                found.append(inf)
        return found

    @property
    def controllers(self) -> list[Controller]:
        return list(self._controllers)

    @property
    def failure(self) -> BaseException | None:
        """What ``run()`` raises, once stopped: the error of the part that failed (a
        controller, a runnable, the election; also one that failed while being stopped), an
        ``ExceptionGroup`` of them when several did, or the shutdown deadline; None for a clean
        stop."""
        return self._failure

    @property
    def is_leading(self) -> bool:
        """The controllers run in this replica (it holds the Lease, or there is no election)."""
        return self._leading

    # -- lifecycle ----------------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop gracefully; raise what failed (``failure``), unless the block raised."""
        await self.stop()
        if exc is None and self._failure is not None:
            raise self._failure

    async def run(self, *, handle_signals: bool = True) -> None:
        """Start, run until a signal (``handle_signals``), ``stop()`` or a failure, then stop
        gracefully. Raises what failed (``failure``): a part's error, or ``ShutdownTimeout``.
        Cancelling ``run`` stops gracefully too, then raises ``CancelledError``.

        With ``handle_signals`` (the process's main), parts still running after a stop cut at
        its deadline (they ignored their cancellation) would keep ``asyncio.run`` from ever
        returning: the process then exits at once with status 1, as controller-runtime's does
        (``manager.exit_with_parts_running``, after the Lease was released and the client
        closed)."""
        if self._state is ManagerState.STOPPED and not self._began:
            return  # stopped before it started: nothing to run
        with stop_on_signals(self._on_signal) if handle_signals else contextlib.nullcontext():
            await self.start()
            try:
                await self._stop_requested.wait()
            finally:
                await self.stop()
        if handle_signals and (left := self._left_behind()):
            self._log.error("manager.exit_with_parts_running", parts=left, status=1)
            exit_process(1)
        if self._failure is not None:
            raise self._failure

    async def start(self) -> None:
        """Serve the endpoints, start the informers, and return; syncing, the election and the
        controllers go on in the background (``wait_synced``).

        A manager runs once: ``start`` raises ``RuntimeError`` if it was started before. A stop
        wins over a start: a manager stopped before it started returns at once and never runs;
        a ``stop()`` while ``start`` binds its port (its one wait) makes ``start`` return once
        bound, having started nothing more, and the stop closes the port. If the port cannot be
        bound, the manager stops (what it opened is closed) and ``start`` raises that error."""
        if self._state is ManagerState.STOPPED and not self._began:
            return  # stopped before it started: it never runs
        if self._state is not ManagerState.NEW:
            raise RuntimeError(f"a manager runs once (this one is {self._state.value})")
        self._began = True
        self._state = ManagerState.STARTING
        if self.elector is not None:  # set in the constructor, or assigned since
            self._log = _log.bind(lease=f"{self.elector.namespace}/{self.elector.name}")
        self._parts.log = self._log
        for c in self._controllers:
            if c.shutdown_timeout >= self.shutdown_timeout:  # its reconciles outlast the stop
                self._log.warning(
                    "manager.controller_shutdown_timeout_too_long",
                    controller=c.name,
                    controller_timeout=c.shutdown_timeout,
                    shutdown_timeout=self.shutdown_timeout,
                )
        self.watchdog.start()
        if self.port is not None:
            # registered only where served: two managers of one process (replicas in a test)
            # would otherwise export each other's process-wide series twice
            self._metrics.register(self._metric_sources())
            self._endpoints = Endpoints(
                host=self.host,
                port=self.port,
                health=self.health_checks,
                readiness=self.ready_checks,
                metrics=self._metrics.render,
            )
            try:
                self.port = await self._endpoints.start()
            except BaseException as exc:  # e.g. the port is taken: nothing started, nothing runs
                self._endpoints = None  # nothing is served
                self._served.set()
                if isinstance(exc, Exception):  # not the caller's cancellation
                    self._parts.record("endpoints", exc)
                await asyncio.wait([self._begin_stop()])  # closes what was opened
                raise
        self._served.set()
        if self._state is not ManagerState.STARTING:  # stopped while binding: the stop closes it
            return
        for factory in self._factories:
            factory.start()
        for inf in self._informers:
            inf.start()
        self._work = self._parts.spawn(
            "manager" if self.elector is None else "leader-election", self._run_work
        )
        self._log.info(
            "manager.started",
            informers=len(self.informers),
            controllers=len(self._controllers),
            port=self.port,
        )

    async def wait_synced(self, timeout: float | None = None) -> None:
        """Until every informer has synced (``TimeoutError`` after ``timeout``)."""
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(inf.wait_for_sync() for inf in self.informers))

    def request_stop(self) -> None:
        """Ask for the graceful stop without waiting for it (``run`` then returns)."""
        self._stop_requested.set()

    async def stop(self) -> None:
        """Stop gracefully (see the module docstring); every caller returns once stopped. From
        the moment it is called nothing more starts (no informer, controller or runnable), also
        when it comes while ``start`` binds its port. A manager stopped before it started never
        runs; its event recorders and API client are closed all the same. From inside a part (a
        reconcile, a runnable, a handler) call ``request_stop()``: ``stop()`` there would wait
        for the part that calls it."""
        # not cancelled with the caller: the stop must finish
        await asyncio.wait([self._begin_stop()])

    def _begin_stop(self) -> asyncio.Task[None]:
        """The stop, begun once and at once (in the caller's step): the state says so and no
        part starts from here on, then the stop runs as a task every caller waits for."""
        if self._stopping is None:
            self.request_stop()
            self._parts.close()
            if self._state is ManagerState.NEW:
                self._state = ManagerState.STOPPED
                self._stopping = asyncio.create_task(
                    self._stop_unstarted(), name="informer-manager-stop"
                )
            else:
                self._state = ManagerState.STOPPING
                self._stopping = asyncio.create_task(self._shutdown(), name="informer-manager-stop")
        return self._stopping

    def _on_signal(self, name: str) -> None:
        self._stop_reason = name
        self.request_stop()

    def _metric_sources(self) -> list[Any]:
        sources: list[Any] = [*self._factories, *self._informers, *self._controllers]
        return sources if self.elector is None else [*sources, self.elector]

    # -- the work: sync, then the controllers (under the election) -------------------------
    async def _run_work(self) -> None:
        await self.wait_synced()
        if not self._parts.open:
            return  # stopping: no runnable starts, no campaign
        if self._state is ManagerState.STARTING:
            self._state = ManagerState.RUNNING
        self._log.info("manager.synced", informers=len(self.informers))
        for r in self._runnables:
            task = None if r.needs_leader else self._parts.spawn(f"runnable:{r.name}", r.run)
            if task is not None:
                self._runnable_tasks.append(task)
        if self.elector is None:
            await self._lead()
        else:
            await self.elector.run(on_started_leading=self._lead)

    async def _lead(self) -> None:
        """Run every controller (and runnable that needs the leader) until cancelled (the term
        or the manager ends), then stop them gracefully; raise if one of them fails (a failed
        controller must not keep the Lease)."""
        self._leading = True
        starts = [(f"controller:{c.name}", c.run) for c in self._controllers]
        starts += [(f"runnable:{r.name}", r.run) for r in self._runnables if r.needs_leader]
        tasks = [t for name, run in starts if (t := self._parts.spawn(name, run)) is not None]
        self._leader_tasks = tasks
        try:
            pending = set(tasks)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:  # a failure is logged and kept by the parts already
                    if not task.cancelled() and (exc := task.exception()) is not None:
                        raise exc
            if not tasks:
                await asyncio.Event().wait()  # nothing to lead: hold the term until stopped
        finally:
            self._leading = False
            await self._stop_leader_work()

    async def _stop_leader_work(self) -> None:
        """Cancel the controllers' runs (no new key; reconciles in flight finish up to each
        controller's ``shutdown_timeout``) and the leader's runnables, and wait for them."""
        tasks = self._leader_tasks
        await _cancel_and_wait(tasks)
        if self._leader_tasks is tasks:
            self._leader_tasks = []

    def _part_failed(self) -> None:
        """A part failed (logged by the parts): the manager stops, ``run()`` raises it."""
        if not self._stop_requested.is_set():
            self._stop_reason = "failure"
        self.request_stop()

    # -- stopping ---------------------------------------------------------------------------
    async def _shutdown(self) -> None:
        await self._served.wait()  # a start() binding its port: what it bound is closed below
        self._log.info("manager.stopping", reason=self._stop_reason)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.shutdown_timeout
        graceful = asyncio.create_task(self._stop_parts(), name="informer-manager-graceful")
        done, _ = await asyncio.wait([graceful], timeout=self.shutdown_timeout)
        if not done:
            await self._cut(graceful)
        elif (exc := graceful.exception()) is not None:
            self._parts.record("manager", exc)
        closing = await self._close_recorders(max(0.0, deadline - loop.time()))
        try:
            if self._endpoints is not None:
                await self._endpoints.stop()
            self._metrics.unregister()
            await self.watchdog.stop()
            if self.close_client:
                await self.api.close()
                if closing:  # their last writes fail at once on the closed client
                    await asyncio.wait(closing)
        finally:
            self._failure = self._outcome()
            self._state = ManagerState.STOPPED
            self._log.info("manager.stopped", failed=self._failure is not None)

    def _outcome(self) -> BaseException | None:
        """What ``run()`` raises: the one failure, or every failure (controller-runtime
        aggregates the error that ended the manager with those of its stop)."""
        failures = list(self._parts.failures)
        if self._deadline_passed is not None:
            failures.append(("shutdown", self._deadline_passed))
        if not failures:
            return None
        if len(failures) == 1:
            return failures[0][1]
        names = ", ".join(name for name, _ in failures)
        return BaseExceptionGroup(
            f"{len(failures)} parts of the manager failed ({names})", [e for _, e in failures]
        )

    async def _stop_unstarted(self) -> None:
        """The stop of a manager that never started: its event recorders (if one was made, it
        may hold events), then the API client it owns."""
        await self._close_recorders(self.shutdown_timeout)
        if self.close_client:
            await self.api.close()

    async def _close_recorders(self, timeout: float) -> set[asyncio.Task[None]]:
        """Close the event recorders (their pending writes and series counts written), after
        every part that records stopped and before the client closes; returns the closes still
        running after ``timeout`` (the rest of ``shutdown_timeout``), logged."""
        self._recorders_closed = True
        if not self._recorders:
            return set()
        closing = {
            asyncio.create_task(r.aclose(), name=f"informer-manager-events-{name}")
            for name, r in self._recorders.items()
        }
        _, pending = await asyncio.wait(closing, timeout=timeout)
        if pending:
            self._log.error("manager.event_recorders_cut", recorders=len(pending))
        return pending

    async def _cut(self, graceful: asyncio.Task[None]) -> None:
        """``shutdown_timeout`` passed: stop waiting (controller-runtime's grace period). Name
        what did not stop, cancel every part once more (what ignores that is left behind: the
        process's exit ends it), release the Lease if this replica holds it (a standby takes
        over at its next retry; the client closes right after, so a part left behind cannot
        write through it) while the informers stop. Nothing is awaited without a bound any
        more: the informers get ``_CUT_GRACE`` (or ``shutdown_timeout`` if shorter) to end, as
        an informer whose handler (the application's code) ignores its cancellation never
        does; one left behind is logged (``manager.informers_not_stopped``)."""
        not_stopped = [name for name, task in self._parts.named() if task.cancelling()]
        if not not_stopped and self._informers_stopping:
            not_stopped = ["informers"]
        self._deadline_passed = ShutdownTimeout(self.shutdown_timeout, not_stopped)
        self._log.error(
            "manager.shutdown_deadline", timeout=self.shutdown_timeout, not_stopped=not_stopped
        )
        graceful.cancel()
        for task in self._parts.tasks():
            task.cancel()
        await asyncio.wait([graceful])
        informers = asyncio.ensure_future(self._stop_informers())
        self._informers_stop = informers
        if self.elector is not None and self.elector.release_on_cancel:
            await self.elector.release()
        _, left = await asyncio.wait([informers], timeout=min(_CUT_GRACE, self.shutdown_timeout))
        if left:
            running = [describe(i) for i in self.informers if i.state is not InformerState.STOPPED]
            self._log.error("manager.informers_not_stopped", informers=running)

    async def _stop_informers(self) -> None:
        await asyncio.gather(*(f.stop() for f in self._factories))
        await asyncio.gather(*(inf.stop() for inf in self._informers))

    def _left_behind(self) -> list[str]:
        """What still runs after the stop: parts, and informers, that ignored cancellation."""
        left = self._parts.running()
        if self._informers_stop is not None and not self._informers_stop.done():
            left.append("informers")
        return left

    async def _stop_parts(self) -> None:
        """The graceful order: controllers (in-flight reconciles finish) and runnables, the
        Lease, informers."""
        await self._stop_leader_work()
        await _cancel_and_wait(self._runnable_tasks)
        work = self._work
        if work is not None:
            work.cancel()  # ends the term (controllers already stopped) and releases the Lease
            await asyncio.wait([work])
        self._informers_stopping = True
        await self._stop_informers()

    # -- probes -----------------------------------------------------------------------------
    def health_checks(self) -> list[Check]:
        """Liveness: the loop keeps time, every informer's task runs, and yours."""
        return [*liveness(self), *self._health_checks]

    def ready_checks(self) -> list[Check]:
        """Readiness: not stopping, every informer synced, controllers started where leading,
        and yours."""
        return [*readiness(self), *self._ready_checks]


class _Runnable:
    """A coroutine function the manager runs (see ``Manager.add_runnable``)."""

    def __init__(
        self, run: Callable[[], Coroutine[Any, Any, None]], name: str, needs_leader: bool
    ) -> None:
        self.run = run
        self.name = name
        self.needs_leader = needs_leader


def _plain(check: Callable[[], str | None]) -> Callable[[], str | None]:
    """``check`` if it is a plain function (a probe calls it and reads its answer at once)."""
    if not callable(check) or inspect.iscoroutinefunction(check):
        raise TypeError(
            "a check is a plain function returning None or a reason, not a coroutine function"
        )
    return check


async def _cancel_and_wait(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks)
