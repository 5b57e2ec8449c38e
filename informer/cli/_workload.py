"""The demo's synthetic workload and its fault schedule, on the embedded test API server.

``Workload`` creates, updates, relabels and deletes ConfigMaps across namespaces and renews node
Leases, at a steady rate, straight into the server (which notifies the watches). Now and then it
awaits its own write in an informer's cache and records how long that took: the freshness waits
of the view. ``FaultSchedule`` injects one misbehaviour of a real API server every so often:
dropped, cut and stalled watches, 429s, lagging lists, stale replays.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from informer.errors import StaleCacheError
from informer.informer import Informer
from informer.resource import CONFIGMAPS, LEASES, PODS
from informer.resource_version import InvalidResourceVersion
from informer.testing import ApiServer, Fault, RecordedRequest, StatusError

__all__ = ["NAMESPACES", "FaultSchedule", "Workload", "percentile"]

NAMESPACES = ("team-a", "team-b", "team-c", "team-d")
NODES = 8
APPS = ("web", "api", "db")


def percentile(samples: list[float], q: float) -> float:
    """The ``q`` quantile of ``samples`` (0 when empty)."""
    if not samples:
        return 0.0
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Workload:
    """Steady writes at ``rate`` per second (seeded: the same run for the same seed)."""

    def __init__(
        self,
        server: ApiServer,
        rate: float,
        *,
        freshness_probe: Informer | None = None,
        on_writes: Callable[[], None] | None = None,
        seed: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.server = server
        self.rate = rate
        self.probe = freshness_probe
        self.on_writes = on_writes
        self.random = random.Random(seed)
        self._clock = clock
        self.writes = 0
        self.failed_writes = 0
        self.freshness_waits: deque[float] = deque(maxlen=2048)
        self.freshness_timeouts = 0
        self._names: dict[str, list[str]] = {ns: [] for ns in NAMESPACES}
        self._serial = 0
        self._probes: set[asyncio.Task[None]] = set()

    def seed_objects(self, count: int) -> None:
        """Create ``count`` ConfigMaps and the node Leases before the informers start."""
        for _ in range(count):
            self._create()
        for node in range(NODES):
            self.server.create(
                LEASES,
                {
                    "metadata": {"name": f"node-{node}", "namespace": "nodes"},
                    "spec": {"holderIdentity": f"node-{node}", "renewTime": _now()},
                },
            )

    def flush(self, count: int) -> None:
        """Writes no cache watches (Pods): a lagging replica's view moves past earlier writes."""
        for _ in range(count):
            self._serial += 1
            self.server.create(
                PODS, {"metadata": {"name": f"flush-{self._serial:05d}", "namespace": "flush"}}
            )

    def _create(self) -> dict[str, Any]:
        ns = self.random.choice(NAMESPACES)
        self._serial += 1
        name = f"cm-{self._serial:05d}"
        self._names[ns].append(name)
        return self.server.create(
            CONFIGMAPS,
            {
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "labels": {"app": self.random.choice(APPS), "role": "source"},
                },
                "data": {"generation": "1", "payload": "x" * self.random.randint(10, 200)},
            },
        )

    def _one_write(self) -> dict[str, Any]:
        ns = self.random.choice(NAMESPACES)
        names = self._names[ns]
        roll = self.random.random()
        if not names or roll < 0.25:
            return self._create()
        name = self.random.choice(names)
        if roll < 0.40:
            names.remove(name)
            return self.server.delete(CONFIGMAPS, name, ns)
        if roll < 0.55:
            relabel = {"metadata": {"labels": {"app": self.random.choice(APPS)}}}
            return self.server.patch(CONFIGMAPS, name, relabel, ns)
        if roll < 0.75:
            node = f"node-{self.random.randrange(NODES)}"
            return self.server.patch(LEASES, node, {"spec": {"renewTime": _now()}}, "nodes")
        patch = {
            "data": {"generation": str(self.writes), "payload": "y" * self.random.randint(10, 200)}
        }
        return self.server.patch(CONFIGMAPS, name, patch, ns)

    async def run(self) -> None:
        """Write until cancelled, in small bursts paced to ``rate``."""
        start = self._clock()
        try:
            while True:
                due = int((self._clock() - start) * self.rate) - self.writes
                for _ in range(max(0, due)):
                    try:
                        written = self._one_write()
                    except StatusError:
                        self.failed_writes += 1  # e.g. a name deleted meanwhile: keep going
                        continue
                    self.writes += 1
                    if self.probe is not None and self.writes % 10 == 0:
                        self._probe(written)
                if due > 0 and self.on_writes is not None:
                    self.on_writes()
                await asyncio.sleep(0.05)
        finally:
            for task in self._probes:
                task.cancel()

    def _probe(self, written: dict[str, Any]) -> None:
        """Time how long the probe informer takes to show this write (read-your-own-write)."""
        if written.get("kind") not in (None, "ConfigMap") or self.probe is None:
            return
        probe = self.probe

        async def wait() -> None:
            start = self._clock()
            try:
                await probe.wait_for_resource_version(
                    str(written["metadata"]["resourceVersion"]), timeout=30
                )
            except StaleCacheError:
                self.freshness_timeouts += 1
                return
            except InvalidResourceVersion:  # opaque RVs: "seen RV >= X" cannot be asked
                self.probe = None
                return
            self.freshness_waits.append(self._clock() - start)

        task = asyncio.create_task(wait())
        self._probes.add(task)
        task.add_done_callback(self._probes.discard)


def _served_from_cache(request: RecordedRequest) -> bool:
    """A list an API server may answer from its watch cache, where a lagging replica shows: one
    with a resourceVersion (``0``: any, or NotOlderThan a version; a broken replica answers it
    with an older list, which the reflector refuses). A consistent read (no resourceVersion) is
    a quorum read of etcd, never behind on a healthy server: lagging one would be an etcd
    restore, which is not what this fault stands for."""
    return request.query.get("resourceVersion", "") != ""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())


class FaultSchedule:
    """One fault every ``interval`` seconds, picked at random: a rule for the next requests
    (429, lagging list) or, for a watch stream fault, applied to the watches open now; counts
    them by kind."""

    def __init__(
        self,
        server: ApiServer,
        interval: float,
        *,
        idle_timeout: float,
        seed: int = 0,
        resource: str | None = None,
    ) -> None:
        self.server = server
        self.resource = resource  # only requests for this resource (plural), else any
        self.interval = interval
        self.idle_timeout = idle_timeout
        self.random = random.Random(seed + 1)
        self.injected: dict[str, int] = {}
        self._rules: list[Fault] = []

    KINDS = (
        "watch dropped",
        "watch cut",
        "watch stalled",
        "429",
        "lagging list",
        "stale replay",
    )

    def fault(self, kind: str) -> Fault:
        """A new rule of ``kind`` (one of ``KINDS``), its numbers drawn from the schedule's
        random generator, for ``resource`` if the schedule has one."""
        fault = self._fault(kind)
        if self.resource is not None:
            fault.resource = self.resource
        return fault

    def _fault(self, kind: str) -> Fault:
        r = self.random
        if kind == "watch dropped":
            return Fault(verb="watch", close_after_events=r.randint(1, 20))
        if kind == "watch cut":
            return Fault(verb="watch", after_events=r.randint(1, 20), cut_mid_line=True)
        if kind == "watch stalled":
            return Fault(verb="watch", after_events=r.randint(1, 5), stall=self.idle_timeout + 1)
        if kind == "429":
            return Fault(verb=r.choice(("list", "watch")), status=429, retry_after=1)
        if kind == "lagging list":
            return Fault(verb="list", list_lag=r.randint(5, 50), predicate=_served_from_cache)
        if kind == "stale replay":
            return Fault(verb="watch", after_events=r.randint(2, 10), replay_stale=True)
        raise ValueError(f"unknown fault kind {kind!r}; one of {self.KINDS}")

    def _pick(self) -> tuple[str, Fault]:
        kind = self.random.choice(self.KINDS)
        return kind, self.fault(kind)

    @property
    def fired(self) -> int:
        return sum(rule.fired for rule in self._rules)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            kind, fault = self._pick()
            if fault.affects_stream:
                # watches last minutes: a stream fault goes to the ones open now, or a short
                # run would see none of them
                self.server.disrupt_watches(fault)
            else:
                self.server.faults.add(fault)
            self._rules.append(fault)
            self.injected[kind] = self.injected.get(kind, 0) + 1

    def clear(self) -> None:
        """Remove every rule not yet fired (before the final check)."""
        self.server.faults.clear()
