"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's rules and timings.

One ``LeaderElector`` per process campaigns for one Lease: it creates the Lease or takes it over
once its holder has not renewed it for ``lease_duration`` (measured on this process's monotonic
clock from the moment it *observed* the last change, so clocks need not agree), renews it every
``retry_period`` while leading, and steps down when it could not renew within ``renew_deadline``
of the start of its last successful renewal. Since ``renew_deadline < lease_duration`` and every
other candidate starts counting only once it has seen that renewal, a leader whose renewals fail
(or hang: each request is cut at the deadline) has stopped leading before anyone can take over.
On a clean shutdown the Lease is released (holder cleared) so a standby takes over at once.

Warm standby: the election gates only the *work*. Informers run and sync in every replica; the
``on_started_leading`` coroutine (a controller's workers) starts when this replica acquires the
Lease and is cancelled, and awaited, as soon as leadership is lost; it starts again on the next
term, against caches that stayed warm. A Controller is gated with
``await elector.run(on_started_leading=controller_workers)``.

Not ``kubernetes_asyncio.leaderelection``: its timings must be >= 1 s and run on ``time.time``
and ``asyncio.sleep`` (no injectable clock, so no test without real waiting), a hanging renewal is
not bounded by the renew deadline (a stalled leader keeps leading past the lease), it does not
release on shutdown, and it works on generated models with stack-trace logs on every 409.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import math
import random
import socket
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from informer._log import error_fields, get_logger
from informer.client import Client, request_deadline
from informer.errors import AlreadyExists, ApiError, Conflict, NotFound, TransportError
from informer.objects import KubeObject
from informer.resource import LEASES
from informer.workqueue import Clock, MonotonicClock

__all__ = ["ElectionState", "LeaderElectionStats", "LeaderElector"]

log = get_logger("informer.leader_election")

JITTER_FACTOR = 1.2  # client-go's: a follower retries after retry_period * [1, 2.2)


class ElectionState(enum.Enum):
    """Where a ``LeaderElector`` stands."""

    STOPPED = "stopped"
    FOLLOWING = "following"
    LEADING = "leading"


@dataclass(frozen=True, slots=True)
class LeaderElectionStats:
    """What a ``LeaderElector`` shows of itself (``leader_election_master_status{name}`` is
    ``leading``): the Lease ``namespace/name``, this candidate's ``identity``, its ``state``, the
    holder it last observed (``leader``, "" when released, None before the first read), and
    counters over its lifetime: ``terms`` acquired, ``renew_failures`` (failed renewals while
    leading), ``attempt_timeouts`` (attempts cut at the renew deadline) and ``attempt_errors``
    (attempts that failed on an error no request handler expected, e.g. a malformed answer)."""

    name: str
    namespace: str
    identity: str
    state: ElectionState
    leading: bool
    leader: str | None
    terms: int
    renew_failures: int
    attempt_timeouts: int
    attempt_errors: int


class _Attempt(enum.Enum):
    ACQUIRED = "acquired"  # this candidate holds the Lease (acquired or renewed)
    HELD = "held"  # another candidate holds a valid Lease
    FAILED = "failed"  # no answer, an error or a lost race: try again


def _micro_time() -> str:
    """Now as a Kubernetes ``MicroTime``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    """``<hostname>_<random>``, as client-go's examples build it: unique per process."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:12]}"


StartedLeading = Callable[[], Coroutine[Any, Any, None]]
StoppedLeading = Callable[[], Awaitable[None] | None]


class LeaderElector:
    """Campaigns for the Lease ``namespace/name`` as ``identity`` (see the module docstring).

    ``lease_duration`` (15 s), ``renew_deadline`` (10 s) and ``retry_period`` (2 s) are
    client-go's defaults and must satisfy ``lease_duration > renew_deadline >
    1.2 * retry_period``. ``release_on_cancel`` clears the holder on a clean shutdown. ``clock``
    (monotonic) and ``rng`` (jitter) are injectable for tests.
    """

    def __init__(
        self,
        client: Client,
        name: str,
        namespace: str,
        *,
        identity: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = True,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not lease_duration > renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if not renew_deadline > JITTER_FACTOR * retry_period > 0:
            raise ValueError(f"renew_deadline must be greater than {JITTER_FACTOR} * retry_period")
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self.clock: Clock = clock or MonotonicClock()
        self._rng = rng or random.Random()
        self.state = ElectionState.STOPPED
        self.leader: str | None = None  # the holder last observed ("" when released)
        self.terms = 0  # how many times this candidate acquired the Lease
        self.renew_failures = 0  # renewals that failed while leading
        self.attempt_timeouts = 0  # attempts cut at the deadline (a request that hung)
        self.attempt_errors = 0  # attempts that raised an unexpected error (a garbage answer)
        self._lease: KubeObject | None = None  # the Lease as last read or written
        self._observed_rv = ""
        self._observed_at = -math.inf
        self._changed = asyncio.Event()
        self._renewed_at = -math.inf  # start of the last successful attempt (clock time)
        self._attempts = asyncio.Lock()  # one attempt at a time: the loop's or renew_now's
        self._taken = False  # renew_now found another holder: the term is over
        self._releases = asyncio.Lock()  # one release at a time: the campaign's or release()'s
        self._log = log.bind(lease=f"{namespace}/{name}", identity=self.identity)

    @property
    def is_leader(self) -> bool:
        return self.state is ElectionState.LEADING

    async def wait_until_leading(self) -> None:
        """Return once this candidate leads (at once if it does)."""
        while not self.is_leader:
            self._changed.clear()
            await self._changed.wait()

    def statistics(self) -> LeaderElectionStats:
        return LeaderElectionStats(
            name=self.name,
            namespace=self.namespace,
            identity=self.identity,
            state=self.state,
            leading=self.is_leader,
            leader=self.leader,
            terms=self.terms,
            renew_failures=self.renew_failures,
            attempt_timeouts=self.attempt_timeouts,
            attempt_errors=self.attempt_errors,
        )

    def _set_state(self, state: ElectionState) -> None:
        self.state = state
        self._changed.set()

    # -- the campaign ------------------------------------------------------------------------

    async def run(
        self,
        on_started_leading: StartedLeading | None = None,
        on_stopped_leading: StoppedLeading | None = None,
    ) -> None:
        """Campaign until cancelled; run ``on_started_leading()`` (a task) during every term.

        The task is cancelled and awaited when the term ends, then ``on_stopped_leading()`` is
        called (sync or async), exactly once per term. That teardown always completes: a
        cancellation of ``run`` that arrives while a term is ending waits for it, then
        propagates. If the task raises, leadership is given up (the Lease released) and the
        exception propagates: the caller reports it (a ``Manager`` logs it once, naming the
        part: ``manager.part_failed``); the election logs only that the term ended
        (``leader_election.stopped_leading``, a warning, ``reason="leader_work_failed"``; a
        term that ends because the Lease was lost says ``reason="lease_lost"``). Cancelling
        ``run`` ends the term the same way, then releases the Lease.
        """
        if self.state is not ElectionState.STOPPED:
            raise RuntimeError("this LeaderElector is already running")
        self._set_state(ElectionState.FOLLOWING)
        work: asyncio.Task[None] | None = None
        in_term = False  # a term started whose teardown has not started yet
        try:
            while True:
                self._renewed_at = await self._acquire()
                self._taken = False
                self.terms += 1
                self._set_state(ElectionState.LEADING)
                in_term = True
                self._log.info("leader_election.started_leading", term=self.terms)
                if on_started_leading is not None:
                    work = asyncio.create_task(on_started_leading())
                await self._renew_until_lost(work)
                self._set_state(ElectionState.FOLLOWING)
                self._log.warning(
                    "leader_election.stopped_leading", term=self.terms, reason="lease_lost"
                )
                in_term = False
                await self._end_term(work, on_stopped_leading)
                work = None
        finally:
            self._set_state(ElectionState.STOPPED)
            if in_term:
                await self._end_term(work, on_stopped_leading)
            if self.release_on_cancel:
                # also when a term ended but the Lease still names this candidate (renewals
                # failed until the deadline): as client-go, by the holder observed, so that no
                # standby waits for the expiry of a Lease nobody acts on (no-op otherwise)
                await self.release()

    async def _end_term(
        self, work: asyncio.Task[None] | None, on_stopped_leading: StoppedLeading | None
    ) -> None:
        """Stop the term's work and call ``on_stopped_leading``, to the end even if the caller is
        cancelled meanwhile (the cancellation is raised once the teardown is over): a replica
        told to exit must not exit while its leader's work still runs."""
        teardown = asyncio.ensure_future(self._teardown(work, on_stopped_leading))
        cancelled = False
        while not teardown.done():
            try:
                await asyncio.wait({teardown})
            except asyncio.CancelledError:
                if not cancelled:
                    self._log.info("leader_election.cancelled_while_stepping_down")
                cancelled = True
        teardown.result()  # a failure of on_stopped_leading propagates
        if cancelled:
            raise asyncio.CancelledError

    async def _teardown(
        self, work: asyncio.Task[None] | None, on_stopped_leading: StoppedLeading | None
    ) -> None:
        if work is not None:
            running = not work.done()  # a failure before now was raised by _sleep_watching
            work.cancel()
            await asyncio.wait({work})
            if running and not work.cancelled() and work.exception() is not None:
                error = type(work.exception()).__name__
                self._log.error("leader_election.leader_work_failed_stopping", error=error)
        if on_stopped_leading is not None:
            result = on_stopped_leading()
            if inspect.isawaitable(result):
                await result

    async def _acquire(self) -> float:
        """Try every ``retry_period`` (jittered) until this candidate holds the Lease; returns the
        start time of the successful attempt (always less than ``renew_deadline`` ago)."""
        while True:
            started = self.clock.now()
            deadline = started + self.renew_deadline
            acquired = await self._bounded(deadline) is _Attempt.ACQUIRED
            if acquired and self.clock.now() < deadline:
                return started
            delay = self.retry_period * (1.0 + self._rng.random() * JITTER_FACTOR)
            await self.clock.sleep(delay)

    async def _renew_until_lost(self, work: asyncio.Task[None] | None) -> None:
        """Renew every ``retry_period``; return when no renewal succeeded within
        ``renew_deadline`` of the last success's start, or another holder shows up.

        The term never outlives that deadline: a renewal is due ``retry_period`` after the last
        success but no later than ``retry_period`` before the deadline (at once after a success
        that took long), each attempt is cut at the deadline, and the waits between failed
        attempts end at it. A ``renew_now`` that succeeded meanwhile moves the next one."""
        margin = min(self.retry_period, self.renew_deadline - self.retry_period)
        while True:
            wait = self._renewed_at + margin - self.clock.now()
            if wait > 0:
                await self._sleep_watching(wait, work)
                if self._taken:
                    return
                continue
            async with self._attempts:
                result, deadline = await self._renew_once()
            if result is _Attempt.ACQUIRED:
                continue
            if result is _Attempt.HELD or self._taken:
                return
            wait = min(self.retry_period, deadline - self.clock.now())
            if wait <= 0:
                self._log.warning("leader_election.renew_deadline_passed")
                return
            await self._sleep_watching(wait, work)
            if self._taken:
                return

    async def _renew_once(self) -> tuple[_Attempt, float]:
        """One renewal attempt bounded by the current deadline (the caller holds
        ``_attempts``); returns its result and the deadline it was bounded by."""
        deadline = self._renewed_at + self.renew_deadline
        started = self.clock.now()
        if started >= deadline:
            return _Attempt.FAILED, deadline
        result = await self._bounded(deadline)
        if result is _Attempt.ACQUIRED and self.clock.now() < deadline:
            self._renewed_at = started
            return result, deadline
        if result is _Attempt.HELD:
            self._taken = True
            return result, deadline
        self.renew_failures += 1
        return _Attempt.FAILED, deadline

    async def renew_now(self) -> bool:
        """While leading, renew at once (e.g. to publish what ``_annotate`` adds); True when the
        Lease was written within the renew deadline, which it also moves."""
        if not self.is_leader:
            return False
        async with self._attempts:
            if not self.is_leader:
                return False
            result, _ = await self._renew_once()
        return result is _Attempt.ACQUIRED

    def _annotate(self, metadata: dict[str, Any]) -> None:
        """Add to the metadata of every Lease this candidate writes (a hook for subclasses)."""

    async def _sleep_watching(self, seconds: float, work: asyncio.Task[None] | None) -> None:
        """Sleep on the clock; if the leader's work raises meanwhile, raise its exception (which
        ends the term and the campaign: a crashed controller must not keep the Lease)."""
        if work is not None and not work.done():
            sleeper = asyncio.ensure_future(self.clock.sleep(seconds))
            try:
                await asyncio.wait({sleeper, work}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
        else:
            await self.clock.sleep(seconds)
        if work is not None and work.done() and not work.cancelled():
            exc = work.exception()
            if exc is not None:
                # not an error line: the failure is raised to run()'s caller, which reports it
                # (a Manager logs it once, naming the part: manager.part_failed)
                self._log.warning(
                    "leader_election.stopped_leading", term=self.terms, reason="leader_work_failed"
                )
                raise exc

    async def _bounded(self, deadline: float) -> _Attempt:
        """One attempt, cut (FAILED) when the clock passes ``deadline``: a hanging request must
        not keep a leader leading past its renew deadline. Whatever else goes wrong in one
        attempt (an answer that is not an object, a Lease whose fields have odd types) is a
        failed attempt too, retried like a 500 (client-go's ``tryAcquireOrRenew``): only a
        cancellation of the campaign itself propagates."""
        attempt = asyncio.ensure_future(self._try_until(deadline))
        expired = False

        def cut() -> None:
            nonlocal expired
            expired = True
            attempt.cancel()

        timer = self.clock.call_at(deadline, cut)
        try:
            return await asyncio.shield(attempt)
        except asyncio.CancelledError:
            if expired:
                self.attempt_timeouts += 1
                self._log.warning("leader_election.attempt_timed_out")
                return _Attempt.FAILED
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                await self._finish_in_flight(attempt)
                raise
            error = "CancelledError"  # the attempt awaited something another task cancelled
        except Exception as exc:
            error = type(exc).__name__
        finally:
            timer.cancel()
        self.attempt_errors += 1
        self._log.warning("leader_election.attempt_failed", error=error)
        return _Attempt.FAILED

    async def _finish_in_flight(self, attempt: asyncio.Future[_Attempt]) -> None:
        """The campaign is cancelled (a shutdown) while an attempt is in flight: let it end
        (still cut at its deadline) rather than abandon it, since a write the server applied
        would then name this candidate unknown to it, and no release would clear it (a standby
        would wait for the Lease to expire). Once it ended, the Lease it wrote is observed and
        the release at the end of ``run`` clears it. A second cancellation abandons it."""
        try:
            await asyncio.wait([attempt])
        finally:
            if not attempt.done():
                attempt.cancel()
            elif not attempt.cancelled():
                attempt.exception()  # read: a failed attempt is one failed attempt, nothing more

    async def _try_until(self, deadline: float) -> _Attempt:
        """One attempt whose requests the client does not retry past ``deadline``: a throttled
        renewal is sent again after its Retry-After only if that still ends in time; otherwise it
        fails at once and the renew loop decides (it retries every ``retry_period``)."""
        with request_deadline(deadline - self.clock.now()):
            return await self._try_acquire_or_renew()

    # -- one attempt (client-go's tryAcquireOrRenew) -----------------------------------------

    def _spec(self, current: KubeObject | None) -> dict[str, Any]:
        now = _micro_time()
        old = dict(current.get("spec") or {}) if current is not None else {}
        mine = old.get("holderIdentity") == self.identity
        transitions = int(old.get("leaseTransitions") or 0)
        if current is not None and not mine:
            transitions += 1
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, math.ceil(self.lease_duration)),
            "acquireTime": old.get("acquireTime") if mine and old.get("acquireTime") else now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    async def _try_acquire_or_renew(self) -> _Attempt:
        if self.is_leader and self._lease is not None:
            # The fast path of a leader: write over the Lease it last wrote (one request).
            result = await self._write(self._lease)
            if result is not None:
                return result
        try:
            current = await self.client.get(LEASES, self.name, self.namespace)
        except NotFound:
            return await self._create()
        except (ApiError, TransportError) as exc:
            self._log.warning("leader_election.get_failed", **error_fields(exc))
            return _Attempt.FAILED
        self._observe(current)
        spec = current.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        if (
            holder
            and holder != self.identity
            and self._observed_at + self.lease_duration > self.clock.now()
        ):
            return _Attempt.HELD
        if holder != self.identity and self.is_leader:
            return _Attempt.HELD  # taken over while we could not renew: never write over it
        result = await self._write(current)
        return result if result is not None else _Attempt.FAILED

    def _observe(self, lease: KubeObject) -> None:
        if lease.resource_version != self._observed_rv:
            self._observed_rv = lease.resource_version
            self._observed_at = self.clock.now()
        self._lease = lease
        holder = (lease.get("spec") or {}).get("holderIdentity") or ""
        if holder != self.leader:
            self._log.info("leader_election.leader_observed", leader=holder or None)
            self.leader = holder

    async def _create(self) -> _Attempt:
        body: dict[str, Any] = {
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {**self._spec(None), "leaseTransitions": 0},
        }
        self._annotate(body["metadata"])
        try:
            created = await self.client.create(LEASES, body)
        except (AlreadyExists, Conflict):
            return _Attempt.FAILED  # another candidate created it first
        except (ApiError, TransportError) as exc:
            self._log.warning("leader_election.create_failed", **error_fields(exc))
            return _Attempt.FAILED
        self._observe(created)
        return _Attempt.ACQUIRED

    async def _write(self, current: KubeObject) -> _Attempt | None:
        """Replace the Lease read as ``current`` by one held by this candidate (conditional on
        its RV); None when the caller should read the Lease again (a 409 or a 404)."""
        body = current.to_dict()
        body["spec"] = self._spec(current)
        body["metadata"] = dict(body.get("metadata") or {})
        self._annotate(body["metadata"])
        try:
            written = await self.client.replace(LEASES, body)
        except (Conflict, NotFound):
            return None
        except (ApiError, TransportError) as exc:
            self._log.warning("leader_election.update_failed", **error_fields(exc))
            return _Attempt.FAILED
        self._observe(written)
        return _Attempt.ACQUIRED

    async def release(self) -> None:
        """Clear the holder now if the Lease, as last observed, names this candidate (what the
        end of ``run`` does with ``release_on_cancel``); a no-op otherwise, and for a second call.
        For a ``Manager`` whose stop passed its deadline while the term's work had not ended
        (``run`` is still tearing the term down): the campaign's own release then finds it done.
        Call it only once this candidate no longer acts as the leader."""
        async with self._releases:
            await self._release()

    async def _release(self) -> None:
        """Clear the holder so that a standby need not wait for the Lease to expire."""
        lease = self._lease
        if lease is None:
            return
        body = lease.to_dict()
        spec = dict(body.get("spec") or {})
        if spec.get("holderIdentity") != self.identity:
            return
        spec.update(holderIdentity=None, leaseDurationSeconds=1, renewTime=_micro_time())
        body["spec"] = spec
        try:
            # a release throttled for longer than the renew deadline is not waited out: the
            # Lease expires soon after anyway, and a shutdown must not hang on it
            with request_deadline(self.renew_deadline):
                self._observe(await self.client.replace(LEASES, body))
        except (ApiError, TransportError) as exc:
            self._log.warning("leader_election.release_failed", **error_fields(exc))
            return
        self._log.info("leader_election.released")
