"""The ring member: its Lease kept by a ``MemberLease``, and the rounds that claim, start, stop
and release ranges under the rules of the package docstring (``informer.ring``).

One round (every ``retry_period``, and at the moment another member's Lease would expire):

1. a quorum read of the ring's Leases (one LIST by label) updates what this member observed;
2. the live members give the target (``assign``);
3. what this member holds outside its target is stopped (participants told, reconciles finished
   up to ``handover_timeout``, the rest cancelled), then released in a write of its Lease;
4. what its target holds that no live member claims is claimed in a write of its Lease;
5. what it claims, within its target, not yet acted on: after a fresh read that shows its own
   claim committed, the parts no live member claims are started (participants prepare, e.g. a
   controller's catch-up, then act), the contested parts withdrawn.

When its term ends (fencing, or shutdown), every range stops at once (shutdown: gracefully, up
to ``handover_timeout``; fencing: reconciles cancelled now) and ``held`` is emptied before the
Lease is written again.
"""

from __future__ import annotations

import asyncio
import enum
import random
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from informer._log import describe_error, error_fields, get_logger
from informer.client import Client
from informer.controller import Controller
from informer.errors import (
    ApiError,
    ConfigurationError,
    Conflict,
    MalformedResponse,
    NotFound,
    TransportError,
)
from informer.leader_election import ElectionState, default_identity
from informer.reflector import ShardedReflector
from informer.resource import LEASES
from informer.ring._assignment import DEFAULT_PARTITIONS, assign
from informer.ring._controller import ControllerShard, InformerShard
from informer.ring._lease import (
    HELD,
    RING_LABEL,
    MemberLease,
    Observed,
    lease_name,
    parse_held,
    read_member,
)
from informer.shards import ShardField, ShardSet
from informer.transport import Transport
from informer.workqueue import Clock, MonotonicClock
from informer.workqueue._stats import Percentiles, _Window

HANDOVER_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)

__all__ = ["Participant", "Ring", "RingState", "RingStats"]

log = get_logger("informer.ring")


class RingState(enum.Enum):
    """Where a ring member stands."""

    STOPPED = "stopped"
    JOINING = "joining"  # writing its Lease (first, or again after fencing): acts on nothing
    MEMBER = "member"  # its Lease renewed within the renew deadline: claims and acts


class Participant(Protocol):
    """What the ring drives as ranges start and stop (a sharded controller, a sharded
    informer). ``prepare`` runs before the ring acts on ``ranges`` (a controller's catch-up, an
    informer's list of them); ``started`` once it does; ``stop`` after it stopped acting on
    them: return once nothing of them is in flight, cancelling what is still running after
    ``timeout`` seconds."""

    async def prepare(self, ranges: ShardSet) -> None: ...

    def started(self, ranges: ShardSet) -> None: ...

    async def stop(self, ranges: ShardSet, timeout: float) -> None: ...


@dataclass(frozen=True, slots=True)
class RingStats:
    """A ring member's view: the live ``members`` it counts (itself included), its shares of the
    space (``target``: what the assignment gives it; ``held``: what it claims; ``acting``: what
    it reconciles), ``ranges`` acted on, and counters: ranges started and stopped (``started``,
    ``stopped``), starts of ranges whose previous holder's Lease had expired (or was collected,
    dead, before the start: a slow catch-up) (``taken_over``), claims withdrawn on a conflict,
    rounds and failed rounds, fencings; ``handover``: how long this member took to act on all of
    its target once it changed (seconds on its clock, from the round that saw the change to the
    round that started the last of it)."""

    name: str
    identity: str
    state: RingState
    members: int
    epoch: int
    target: float
    held: float
    acting: float
    ranges: int
    started: int
    stopped: int
    taken_over: int
    conflicts: int
    rounds: int
    round_errors: int
    fenced: int
    handover: Percentiles


class Ring:
    """A member of the ring ``name`` in ``namespace`` (see the package docstring).

    ``identity`` (unique per process; default ``<hostname>-<random>``) names the member and its
    Lease ``<name>-<identity>``. ``lease_duration``, ``renew_deadline`` and ``retry_period`` are
    the leader election's (15/10/2 s); ``handover_timeout`` bounds how long reconciles in flight
    may finish when a range moves away (default 4 s, below ``lease_duration -
    renew_deadline``). ``partitions`` must be the same on every member. ``field`` is what the
    objects are hashed on (uid, or namespace). ``clock`` and ``rng`` are injectable for tests.
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
        handover_timeout: float = 4.0,
        partitions: int = DEFAULT_PARTITIONS,
        field: ShardField = ShardField.UID,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.name = name
        self.namespace = namespace
        self.identity = identity or default_identity().replace("_", "-").lower()
        self.partitions = partitions
        self.field = field
        self.handover_timeout = handover_timeout
        self.retry_period = retry_period
        self.clock: Clock = clock or MonotonicClock()
        self._lease = MemberLease(
            client,
            lease_name(name, self.identity),
            namespace,
            identity=self.identity,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
            clock=self.clock,
            rng=rng,
            ring=name,
            assignment=f"rendezvous-bounded/{partitions}",
            claims=lambda: (self.held, self.epoch),
        )
        self._transport = Transport(client.api_client)
        self.held = ShardSet()  # claimed: every write of the Lease publishes it
        self.acting = ShardSet()  # reconciled now (always within held)
        self.target = ShardSet()  # what the assignment gives this member
        self.epoch = 0
        self.members: tuple[str, ...] = ()  # the live members of the last round
        self._observed: dict[str, Observed] = {}  # Lease name -> the member it showed
        self._published: ShardSet | None = None  # own claims as the last read showed them
        # what members whose Leases this member collected (dead) claimed, until a live member
        # claims it: a start of it is a takeover, however late it comes (a slow catch-up)
        self._orphaned = ShardSet()
        self._participants: list[Participant] = []
        self._counts = dict.fromkeys(
            (
                "started",
                "stopped",
                "taken_over",
                "conflicts",
                "rounds",
                "round_errors",
                "fenced",
            ),
            0,
        )
        self._changed = asyncio.Event()
        self._handovers = _Window(buckets=HANDOVER_BUCKETS)
        self._missing_since: float | None = None  # the target not all acted on since then
        self._log = log.bind(ring=name, identity=self.identity)

    # -- public -------------------------------------------------------------------------------

    @property
    def state(self) -> RingState:
        return {
            ElectionState.STOPPED: RingState.STOPPED,
            ElectionState.FOLLOWING: RingState.JOINING,
            ElectionState.LEADING: RingState.MEMBER,
        }[self._lease.state]

    @property
    def release_on_cancel(self) -> bool:
        """Whether cancelling ``run`` stops every range gracefully and deletes the Lease (the
        default: a clean shutdown). False leaves the Lease as it was, like a crashed process,
        so the others take its ranges only once it expired (a demo, a test of the takeover)."""
        return self._lease.release_on_cancel

    @release_on_cancel.setter
    def release_on_cancel(self, value: bool) -> None:
        self._lease.release_on_cancel = value

    def attach(self, participant: Participant) -> None:
        """Drive ``participant`` from now on (attach informers before the controllers that read
        them: they are prepared in this order and stopped in the reverse one)."""
        self._participants.append(participant)

    def shard(self, controller: Controller) -> ControllerShard:
        """Make ``controller`` reconcile only the keys of the ranges this member acts on (its
        ``partition``), catching up and queueing each range it starts. Its sharded informers
        (created with ``shards=``, e.g. ``ShardSet()``: nothing until the ring gives ranges) are
        driven by the ring too: a range is listed before it starts, dropped after it stopped.
        A children (``owns``) informer cannot be sharded by uid: a child's uid is not its
        owner's (shard by namespace, or leave it unsharded: child events are then filtered by
        their owner's hash)."""
        for inf in controller.informers:
            if inf.shards is None or any(p.informer is inf for p in self.informer_shards()):
                continue
            field = inf.reflector.field if isinstance(inf.reflector, ShardedReflector) else None
            if field is not self.field:
                raise ConfigurationError(
                    f"informer {inf.resource.group_resource} shards by {field}, the ring by "
                    f"{self.field}"
                )
            if inf is not controller.for_ and self.field is ShardField.UID:
                raise ConfigurationError(
                    f"informer {inf.resource.group_resource} is sharded by uid, but its objects "
                    "are queued by another object's hash (their owner's, a mapper's target)"
                )
            self.attach(InformerShard(inf))
        shard = ControllerShard(self, controller)
        controller.partition = shard
        self.attach(shard)
        return shard

    def informer_shards(self) -> list[InformerShard]:
        """The sharded informers this ring drives."""
        return [p for p in self._participants if isinstance(p, InformerShard)]

    def acts_on(self, hash_: int) -> bool:
        """True when this member reconciles the objects of this hash now."""
        return self.acting.contains(hash_)

    async def wait_for(self, predicate: Any, timeout: float | None = None) -> None:
        """Until ``predicate(self)`` holds (checked after every change of the ranges)."""
        async with asyncio.timeout(timeout):
            while not predicate(self):
                self._changed.clear()
                await self._changed.wait()

    async def run(self) -> None:
        """Be a member until cancelled; then stop every range and delete the Lease."""
        await self._lease.run(self._member, self._after_term)

    def statistics(self) -> RingStats:
        return RingStats(
            name=self.name,
            identity=self.identity,
            state=self.state,
            members=len(self.members),
            epoch=self.epoch,
            target=self.target.share,
            held=self.held.share,
            acting=self.acting.share,
            ranges=len(self.acting),
            handover=self._handovers.percentiles(),
            **self._counts,
        )

    # -- the term -----------------------------------------------------------------------------

    async def _member(self) -> None:
        """The rounds of one term; when the term ends, every range stops at once."""
        try:
            while True:
                try:
                    await self._round()
                except (ApiError, TransportError, MalformedResponse) as exc:
                    self._counts["round_errors"] += 1
                    self._log.warning("ring.round_failed", **error_fields(exc))
                except Exception as exc:  # a bug or a garbage Lease: counted, the next round
                    self._counts["round_errors"] += 1
                    self._log.error("ring.round_failed", error=describe_error(exc))
                await self.clock.sleep(self._next_round())
        finally:
            graceful = self._lease.state is ElectionState.STOPPED  # shutdown, not fencing
            if not graceful:
                self._counts["fenced"] += 1
                self._log.warning("ring.fenced", ranges=len(self.acting))
            # everything claimed: a range prepared (an informer listing it) but not started too
            await self._stop(self.acting | self.held, self.handover_timeout if graceful else 0.0)

    def _after_term(self) -> None:
        """Claim nothing until the Lease is written again (it then publishes an empty held)."""
        if self.held:
            self.held = ShardSet()
            self.epoch += 1
        self.target = ShardSet()
        self.members = ()
        self._published = None
        self._orphaned = ShardSet()
        self._missing_since = None
        self._changed.set()

    def _next_round(self) -> float:
        """``retry_period``, a quarter of it while part of the target waits for another
        member's release (so a handover takes about 1.25 rounds, not 2), and never past the
        moment another member's Lease expires."""
        now = self.clock.now()
        wait = self.retry_period
        if self.target - self.held:
            wait /= 4
        for o in self._observed.values():
            if o.live(now):
                wait = min(wait, o.expires_at() - now)
        return max(wait, 0.0)

    # -- one round ----------------------------------------------------------------------------

    async def _round(self) -> None:
        self._counts["rounds"] += 1
        try:
            await self._round_steps()
        finally:
            now = self.clock.now()
            if not self.target - self.acting and self._missing_since is not None:
                self._handovers.add(now - self._missing_since)
                self._missing_since = None

    async def _round_steps(self) -> None:
        await self._read()
        live = self._live()
        self._orphaned = self._orphaned - self._claimed_by(live)  # a live member took it
        self.members = tuple(sorted({self.identity, *(o.identity for o in live)}))
        self.target = assign(self.members, self.partitions).get(self.identity, ShardSet())
        if self.target - self.acting and self._missing_since is None:
            self._missing_since = self.clock.now()
        wrote = False
        giving = self.held - self.target
        if giving:
            await self._stop(giving, self.handover_timeout)
            self._set_held(self.held - giving)
            wrote = await self._lease.renew_now()
            self._log.info("ring.released", share=round(giving.share, 6), acknowledged=wrote)
        want = self.target - self.held - self._claimed_by(live)
        if want:
            self._set_held(self.held | want)
            wrote = await self._lease.renew_now() or wrote
            self._log.info("ring.claimed", share=round(want.share, 6))
        pending = (self.held & self.target) - self.acting
        if not pending:
            return
        if wrote:
            await self._read()  # the verifying read, after the claim's write
            live = self._live()
        contested = pending & self._claimed_by(live)
        if contested:
            self._counts["conflicts"] += 1
            self._log.warning("ring.claim_contested", share=round(contested.share, 6))
            self._set_held(self.held - contested)
            await self._lease.renew_now()
        startable = (pending - contested) & (self._published or ShardSet())
        if startable and self._lease.is_leader:
            expired = [o for o in self._observed.values() if not o.live(self.clock.now())]
            took = any(o.claims() & startable for o in expired) or bool(self._orphaned & startable)
            if await self._start(startable):
                self._orphaned = self._orphaned - startable
                if took:  # counted once started, not per try
                    self._counts["taken_over"] += 1

    def _set_held(self, held: ShardSet) -> None:
        if held != self.held:
            self.held = held
            self.epoch += 1

    def _live(self) -> list[Observed]:
        now = self.clock.now()
        return [o for o in self._observed.values() if o.live(now)]

    @staticmethod
    def _claimed_by(members: list[Observed]) -> ShardSet:
        claimed = ShardSet()
        for o in members:
            claimed = claimed | o.claims()
        return claimed

    async def _read(self) -> None:
        """One quorum read of the ring's Leases: observe the others, see our own claims."""
        page = await self._transport.list_page(
            LEASES, namespace=self.namespace, label_selector=f"{RING_LABEL}={self.name}"
        )
        now = self.clock.now()
        own = self._lease.name
        seen: dict[str, Observed] = {}
        self._published = None
        for lease in page.items:
            if lease.name == own:
                annotations: Any = lease.get("metadata", {}).get("annotations") or {}
                spec: Any = lease.get("spec") or {}
                mine = isinstance(spec, Mapping) and spec.get("holderIdentity") == self.identity
                if mine and isinstance(annotations, Mapping):
                    self._published = parse_held(annotations.get(HELD))
                continue
            member = read_member(lease, self._observed.get(lease.name), now)
            if member is not None:
                seen[lease.name] = member
        for name, o in self._observed.items():  # collected by another member: it was dead
            if name not in seen and not o.live(now):
                self._orphaned = self._orphaned | o.claims()
        self._observed = seen
        await self._collect(now)

    async def _collect(self, now: float) -> None:
        """Delete the Leases of members dead for a lease duration past their expiry (a crashed
        replica's), conditional on the version observed: a member that wrote since is kept."""
        for name, o in list(self._observed.items()):
            if o.live(now) or now < o.expires_at() + o.duration:
                continue
            try:
                await self._lease.client.delete(
                    LEASES, name, self.namespace, resource_version=o.resource_version
                )
            except (NotFound, Conflict):
                pass
            except (ApiError, TransportError) as exc:
                self._log.warning("ring.collect_failed", **error_fields(exc))
                continue
            self._log.info("ring.collected", member=o.identity)
            self._orphaned = self._orphaned | o.claims()
            del self._observed[name]

    # -- participants -------------------------------------------------------------------------

    async def _start(self, ranges: ShardSet) -> bool:
        """Prepare the participants, then act on ``ranges``; whether it did."""
        for p in list(self._participants):
            if not await self._call(p.prepare(ranges), "prepare"):
                return False  # not ready: the next round prepares them again
        if not self._lease.is_leader:
            return False  # the term ended while preparing
        self.acting = self.acting | ranges
        self._counts["started"] += len(ranges)
        self._log.info("ring.started", share=round(ranges.share, 6), acting=self.acting.share)
        for p in list(self._participants):
            try:
                p.started(ranges)
            except Exception as exc:
                error = describe_error(exc)
                self._log.error("ring.participant_failed", step="started", error=error)
        self._changed.set()
        return True

    async def _stop(self, ranges: ShardSet, timeout: float) -> None:
        if not ranges:
            return
        self._counts["stopped"] += len(ranges & self.acting)
        self.acting = self.acting - ranges
        self._changed.set()
        for p in reversed(self._participants):
            await self._call(p.stop(ranges, timeout), "stop")
        self._log.info("ring.stopped", share=round(ranges.share, 6), acting=self.acting.share)

    async def _call(self, step: Awaitable[None], name: str) -> bool:
        try:
            await step
        except Exception as exc:
            self._log.error("ring.participant_failed", step=name, error=describe_error(exc))
            return False
        return True
