"""Runs one chaos schedule against the test API server and checks the informer's promises.

Invariants, each a name in ``Outcome.violations``:

- ``final_state``: after quiescence every cache holds exactly the server's objects of its scope
  (keys and RVs).
- ``replay``: replaying a handler's deliveries from empty gives the final cache, for a fast
  handler, for a slow one whose queue coalesces, and for the store's own deltas (observed at the
  reflector's ``on_deltas``, before any handler queue).
- ``delivery_order``: a handler is never delivered an RV of a key not newer than the previous one
  (after a delete: than the delete's), except once per key across an etcd restore.
- ``cache_rv_backwards``: the cache RV, sampled every few milliseconds, never decreases (except
  once, to no older than the restored revision, across an etcd restore).
- ``wait_early``: ``wait_for_write``/``wait_for_resource_version`` returned while the cache did not
  reflect every server write up to the RV waited for.
- ``sync``: an informer did not sync, or did not recover from a restore, within its bound.
- ``error_log``: the library logged at ERROR level; ``unhandled``: an exception reached the event
  loop's handler; ``leak``: a task or watch connection outlived ``stop()``.
- ``stats``: statistics disagree with the faults that fired (e.g. fewer 410s counted than fired).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from informer.backoff import BackoffPolicy
from informer.errors import StaleCacheError
from informer.informer import Handler, Informer
from informer.objects import KubeObject
from informer.reflector import ReflectorOptions
from informer.resource import CONFIGMAPS, SECRETS
from informer.resource import NAMESPACES as NAMESPACES_RESOURCE
from informer.resource_version import InvalidResourceVersion
from informer.store import Compression, Delta, Tombstone
from informer.testing import ApiServer, Fault, RecordedRequest, StatusError
from informer.transport import Transport

from .history import History
from .operator import ChildOperator
from .schedule import NAMESPACES, SERVER_ACTIONS, TIERS, FaultStep, InformerSpec, Schedule

IDLE_TIMEOUT = 0.4
MAX_LINE = 64 * 1024  # the informers' line limit; oversized-line faults send twice that
_COMPRESSION = Compression(min_objects=4, train_objects=16, batch=8, retrain_ratio=1.1)
BASE_OPTIONS = ReflectorOptions(
    idle_timeout=IDLE_TIMEOUT,
    backoff=BackoffPolicy(initial=0.001, maximum=0.02, reset_after=120.0, max_retry_after=0.05),
    stream_idle_limit=0.3,
    too_large_retries=2,
    stale_list_retries=2,
    quick_watch_end=0.3,
)
SYNC_TIMEOUT = 30.0
CONVERGE_TIMEOUT = 30.0
WAIT_TIMEOUT = 3.0

EXPIRED_STATUS = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "too old resource version: 1 (2)",
    "reason": "Expired",
    "code": 410,
}
TOO_LARGE_STATUS = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Too large resource version: 999999, current: 2",
    "reason": "Timeout",
    "details": {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    },
    "code": 504,
}


def _not_consistent(request: RecordedRequest) -> bool:
    return request.query.get("resourceVersion", "") != ""


@dataclass
class Outcome:
    """What one schedule did and what it broke."""

    schedule: Schedule
    violations: list[tuple[str, str]] = field(default_factory=list)
    figures: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def violate(self, invariant: str, detail: str) -> None:
        self.violations.append((invariant, detail))

    @property
    def ok(self) -> bool:
        return not self.violations

    def report(self) -> str:
        lines = [self.schedule.describe()]
        lines += [f"  VIOLATION {name}: {detail}" for name, detail in self.violations[:20]]
        if len(self.violations) > 20:
            lines.append(f"  ... {len(self.violations) - 20} more")
        lines.append(f"  replay: python -m tests.chaos.soak --seed {self.schedule.seed}")
        return "\n".join(lines)


class _Deliveries:
    """One handler's deliveries, checked for order as they come, replayable at the end."""

    def __init__(self, name: str, outcome: Outcome, slow: bool) -> None:
        self.name = name
        self.outcome = outcome
        self.slow = slow
        self.state: dict[str, int] = {}
        self.last: dict[str, int] = {}
        self.restores = 0
        self.went_back: set[str] = set()
        self.deleted_at: dict[str, int] = {}
        self.count = 0

    def attach(self, inf: Informer) -> Handler:
        if self.slow:
            # deliberately slow (2 ms a delivery) so that its queue falls behind and coalesces:
            # part of the workload under test, not a synchronisation

            async def on_add(obj: KubeObject, initial: bool) -> None:
                await asyncio.sleep(0.002)
                self._set("add", obj)

            async def on_update(old: KubeObject, new: KubeObject) -> None:
                await asyncio.sleep(0.002)
                self._set("update", new)

            async def on_delete(obj: KubeObject | Tombstone) -> None:
                await asyncio.sleep(0.002)
                self._delete(obj)

            return inf.add_handler(on_add, on_update, on_delete, name=self.name)
        return inf.add_handler(
            lambda obj, initial: self._set("add", obj),
            lambda old, new: self._set("update", new),
            self._delete,
            name=self.name,
        )

    def observe_deltas(self, inf: Informer) -> None:
        """See every delta the store produces, before any handler queue coalesces them."""
        sink = inf.reflector.on_deltas
        assert sink is not None

        def observe(deltas: list[Delta]) -> None:
            for delta in deltas:
                if delta.type == "deleted":
                    self._delete(delta.obj)
                else:
                    assert isinstance(delta.obj, KubeObject)
                    self._set("add" if delta.type == "added" else "update", delta.obj)
            sink(deltas)

        inf.reflector.on_deltas = observe

    def restored(self) -> None:
        """An etcd restore: from now on each key may go back once (to its restored version)."""
        self.restores += 1
        self.went_back = set()

    def _set(self, kind: str, obj: KubeObject) -> None:
        self.count += 1
        key, rv = obj.key, int(obj.resource_version)
        previous = self.last.get(key, self.deleted_at.get(key))
        if previous is not None and rv <= previous:
            if self.restores and key not in self.went_back:
                self.went_back.add(key)
            else:
                self.outcome.violate(
                    "delivery_order", f"{self.name}: {kind} {key} at {rv} after {previous}"
                )
        if kind == "add" and key in self.state:
            self.outcome.violate("delivery_order", f"{self.name}: add of cached key {key}")
        self.last[key] = rv
        self.state[key] = rv

    def _delete(self, obj: KubeObject | Tombstone) -> None:
        self.count += 1
        key = obj.key
        if key not in self.state:
            self.outcome.violate("delivery_order", f"{self.name}: delete of unknown key {key}")
        self.state.pop(key, None)
        self.last.pop(key, None)
        # a later add must be newer than the delete (a resurrected old version is a stale apply)
        rv = obj.resource_version if isinstance(obj, KubeObject) else obj.obj.resource_version
        self.deleted_at[key] = int(rv)


class _LogCapture(logging.Handler):
    """Keeps every record of the ``informer`` loggers at ERROR or above."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass
class _Watched:
    """One informer of the run and what is checked about it."""

    spec: InformerSpec
    inf: Informer
    fast: _Deliveries
    slow: _Deliveries
    deltas: _Deliveries
    handlers: tuple[Handler, Handler]
    last_rv: int = 0
    back_allowance: int | None = None  # after a restore: may go back once, to >= this

    def selects(self, namespace: str, labels: dict[str, str]) -> bool:
        return self.spec.selects(namespace, labels)


class _Run:
    def __init__(self, schedule: Schedule, outcome: Outcome) -> None:
        self.s = schedule
        self.out = outcome
        self.rng = random.Random(schedule.seed)
        self.history = History()
        self.server = ApiServer(
            schedule.personality,
            too_large_wait=0.05,
            compaction_window=schedule.compaction_window,
            bookmark_interval=schedule.bookmark_interval,
            bookmark_before_timeout=0.5,
            stale_lag=3,
        )
        self.watched: list[_Watched] = []
        self.ops_done = 0
        self.progress = asyncio.Condition()
        self.writing = asyncio.Event()
        self.writing.set()
        self.epoch = 0
        self.fault_rules: list[tuple[str, Fault]] = []
        self.wait_tasks: set[asyncio.Task[None]] = set()
        self.operator: ChildOperator | None = None

    # -- writes -------------------------------------------------------------------------------

    def _record(self, obj: dict[str, Any], deleted: bool = False) -> None:
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        labels = None if deleted else dict(meta.get("labels") or {})
        self.history.record(int(meta["resourceVersion"]), key, meta["namespace"], labels)

    def _cm_body(self, rng: random.Random, namespace: str, name: str) -> dict[str, Any]:
        labels = {} if rng.random() < 0.2 else {"tier": rng.choice(TIERS)}
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "data": {"v": str(rng.random())},
        }

    def seed_objects(self) -> None:
        for i in range(self.s.initial_objects):
            ns = self.rng.choice(NAMESPACES)
            self._record(self.server.create(CONFIGMAPS, self._cm_body(self.rng, ns, f"seed-{i}")))

    def write_once(self, rng: random.Random, pool: list[tuple[str, str]]) -> dict[str, Any] | None:
        """One random write; the object the server returned, None for a no-op patch."""
        namespace, name = rng.choice(pool)
        current = self.server.get(CONFIGMAPS, name, namespace)
        roll = rng.random()
        if current is None:
            obj = self.server.create(CONFIGMAPS, self._cm_body(rng, namespace, name))
        elif roll < 0.75:
            if roll < 0.45:
                patch: dict[str, Any] = {"data": {"v": str(rng.random())}}
            else:
                patch = {"metadata": {"labels": {"tier": rng.choice((*TIERS, None))}}}
            obj = self.server.patch(CONFIGMAPS, name, patch, namespace=namespace)
            if obj["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]:
                return None  # a no-op patch: no revision, no event
        else:
            obj = self.server.delete(CONFIGMAPS, name, namespace)
            self._record(obj, deleted=True)
            return obj
        self._record(obj)
        return obj

    async def writer(self, index: int) -> None:
        rng = random.Random(self.s.seed * 1000 + index)
        per_ns = self.s.keys_per_namespace
        namespaces = NAMESPACES if per_ns > 1 else NAMESPACES[:1]
        pool = [(ns, f"w{index}-{n}") for ns in namespaces for n in range(per_ns)]
        for _ in range(self.s.ops_per_writer):
            await self.writing.wait()
            await asyncio.sleep(rng.random() * 0.004)  # pacing of the workload, not a sync
            await self.writing.wait()
            obj = self.write_once(rng, pool)
            if obj is None:
                continue  # nothing to wait for
            self.out.figures["writes"] += 1
            if rng.random() < 0.35:
                self._spawn_wait(obj, rng)
            async with self.progress:
                self.ops_done += 1
                self.progress.notify_all()

    # -- freshness waits ----------------------------------------------------------------------

    def _spawn_wait(self, obj: dict[str, Any], rng: random.Random) -> None:
        w = rng.choice(self.watched)
        task = asyncio.create_task(self._check_wait(w, obj, rng.random() < 0.5, self.epoch))
        self.wait_tasks.add(task)
        task.add_done_callback(self.wait_tasks.discard)

    async def _check_wait(
        self, w: _Watched, obj: dict[str, Any], by_write: bool, epoch: int
    ) -> None:
        rv = obj["metadata"]["resourceVersion"]
        try:
            if by_write and w.spec.namespace in (None, obj["metadata"]["namespace"]):
                await w.inf.wait_for_write(obj, timeout=WAIT_TIMEOUT)
            else:
                await w.inf.wait_for_resource_version(rv, timeout=WAIT_TIMEOUT)
        except StaleCacheError:
            self.out.figures["waits_timed_out"] += 1
            return
        except InvalidResourceVersion:  # the store turned opaque: equality-only, no RV waits
            self.out.figures["waits_not_comparable"] += 1
            return
        if epoch != self.epoch:
            return  # an etcd restore happened meanwhile: RVs were reused
        self.out.figures["waits_checked"] += 1
        self._check_reflects(w, int(rv), "wait_early")

    def _check_reflects(self, w: _Watched, upto: int, invariant: str) -> None:
        """The cache reflects every server write up to ``upto`` for this informer's scope."""
        cache_rv = int(w.inf.store.resource_version or 0)
        expected = self.history.state_at(upto, w.selects)
        cached = {o.key: int(o.resource_version) for o in w.inf.store.list()}
        for key, rv in expected.items():
            have = cached.get(key)
            if have is None:
                if not self.history.left_scope(key, upto, cache_rv, w.selects):
                    w_desc = w.spec.describe()
                    self.out.violate(invariant, f"[{w_desc}] at {upto}: {key}@{rv} missing")
            elif have < rv:
                self.out.violate(
                    invariant, f"[{w.spec.describe()}] at {upto}: {key}@{have} older than {rv}"
                )
        for key, have in cached.items():
            if key not in expected and have <= upto:
                self.out.violate(
                    invariant, f"[{w.spec.describe()}] at {upto}: {key}@{have} gone by then"
                )

    # -- faults -------------------------------------------------------------------------------

    def _rule(self, step: FaultStep) -> Fault:
        k, common = step.kind, {"nth": step.nth, "times": step.times}
        ae = step.after_events
        rules: dict[str, Callable[[], Fault]] = {
            # "too old" needs an RV: a consistent read (RV unset) is never answered 410
            "list_410_first": lambda: Fault(
                verb="list", page=1, status=410, predicate=_not_consistent, **common
            ),
            "list_410_continue": lambda: Fault(verb="list", page=2, status=410, **common),
            "watch_410_http": lambda: Fault(verb="watch", status=410, **common),
            "watch_410_event": lambda: Fault(
                verb="watch", error_event=EXPIRED_STATUS, after_events=ae, **common
            ),
            "list_429": lambda: Fault(verb="list", status=429, retry_after=1, **common),
            "watch_429": lambda: Fault(verb="watch", status=429, retry_after=1, **common),
            "list_5xx": lambda: Fault(verb="list", status=(500, 503)[step.arg % 2], **common),
            "continue_5xx": lambda: Fault(verb="list", page=2, status=503, **common),
            "watch_5xx": lambda: Fault(verb="watch", status=(500, 503)[step.arg % 2], **common),
            # "too large" answers a read at an RV (a consistent read has none to be too large)
            "list_504_too_large": lambda: Fault(
                verb="list",
                status=504,
                status_body=TOO_LARGE_STATUS,
                retry_after=1,
                predicate=_not_consistent,
                **common,
            ),
            "watch_stall": lambda: Fault(
                verb="watch", stall=IDLE_TIMEOUT * 1.5, after_events=ae, **common
            ),
            "watch_cut_mid_line": lambda: Fault(
                verb="watch", cut_mid_line=True, after_events=ae, **common
            ),
            "watch_close_early": lambda: Fault(verb="watch", close_after_events=ae + 1, **common),
            "watch_malformed_line": lambda: Fault(
                verb="watch", malformed_line=True, after_events=ae, **common
            ),
            "watch_replay_stale": lambda: Fault(
                verb="watch", replay_stale=True, after_events=max(ae, 1), **common
            ),
            "watch_duplicates": lambda: Fault(
                verb="watch", duplicate_events=True, after_events=ae, **common
            ),
            # a replica may lag, but a consistent read (RV unset: quorum) never does
            "list_lagging": lambda: Fault(
                verb="list", list_lag=step.arg, predicate=_not_consistent, **common
            ),
            "list_cut_mid_page": lambda: Fault(verb="list", page=1, cut_mid_line=True, **common),
            "continue_cut_mid_page": lambda: Fault(
                verb="list", page=2, cut_mid_line=True, **common
            ),
            "watch_oversized_line": lambda: Fault(
                verb="watch", oversized_line=2 * MAX_LINE, after_events=ae, **common
            ),
        }
        return rules[k]()

    async def apply(self, step: FaultStep) -> None:
        server = self.server
        if step.kind not in SERVER_ACTIONS:
            fault = server.faults.add(self._rule(step))
            self.fault_rules.append((step.kind, fault))
            return
        self.out.faults[step.kind] += 1
        if step.kind == "compact":
            server.compact()
        elif step.kind == "restart":
            await server.stop()
            await server.start()
        elif step.kind.startswith("live_"):
            action = {
                "live_cut": Fault(cut_mid_line=True),
                "live_stall": Fault(stall=IDLE_TIMEOUT * 1.5),
                "live_410_event": Fault(error_event=EXPIRED_STATUS),
                "live_malformed_line": Fault(malformed_line=True),
            }[step.kind]
            self.out.faults[step.kind] += server.disrupt_watches(action) - 1
        elif step.kind == "restore":
            await self._restore(step)

    async def _restore(self, step: FaultStep) -> None:
        """Roll the server back, then let every informer recover before writing again."""
        server = self.server
        low = max(server.compacted_revision, server.revision - 3 * step.arg)
        if low >= server.revision:
            self.out.faults["restore"] -= 1
            return
        target = self.rng.randint(low, server.revision - 1)
        self.writing.clear()
        try:
            # as after a real etcd restore, the API servers restart: no event of the old
            # history is still on its way to a client once they serve again
            await server.stop()
            server.restore(target)
            self.history.restore(target)
            self.epoch += 1
            for w in self.watched:
                w.back_allowance = target
                for observer in (w.fast, w.slow, w.deltas):
                    observer.restored()
            mark = len(server.requests)
            await server.start()

            def rewatched() -> bool:
                # every informer watches again from no later than the restored revision
                later = [
                    r
                    for r in server.requests[mark:]
                    if r.verb == "watch" and r.query.get("resourceVersion", "").isdigit()
                ]
                fresh = [r for r in later if int(r.query["resourceVersion"]) <= target]
                return len(fresh) >= len(self.watched)

            await self._converge_all("restore recovery", rewatched)
        finally:
            self.writing.set()

    async def timeline(self, steps: list[FaultStep]) -> None:
        for step in steps:
            async with self.progress:
                await self.progress.wait_for(lambda s=step: self.ops_done >= s.at_op)
            await self.apply(step)

    # -- sampling and convergence ---------------------------------------------------------------

    async def sampler(self) -> None:
        """Samples every cache RV every 2 ms: a measurement interval, nothing waits on it."""
        while True:
            for w in self.watched:
                self._sample(w)
            await asyncio.sleep(0.002)

    def _sample(self, w: _Watched) -> None:
        rv = w.inf.store.resource_version
        if not rv:
            return
        value = int(rv)
        if value < w.last_rv:
            if w.back_allowance is not None and value >= w.back_allowance:
                w.back_allowance = None
            else:
                self.out.violate(
                    "cache_rv_backwards", f"[{w.spec.describe()}] {w.last_rv} -> {value}"
                )
        w.last_rv = value

    async def _converged(
        self, w: _Watched, timeout: float, also: Callable[[], bool] = lambda: True
    ) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            revision = self.server.revision
            expected = self.history.state_at(revision, w.selects)
            actual = {o.key: int(o.resource_version) for o in w.inf.store.list()}
            # equal contents, and no claim beyond the server (after a restore: it noticed)
            if actual == expected and int(w.inf.store.resource_version or 0) <= revision and also():
                return True
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            self.server.send_bookmarks(force=True)
            # the cache claims this revision already (e.g. the server went back): wait for its
            # next move instead, up, or back (a relist after a restore fails the wait at once
            # with CacheWentBackwards); an await that returned at once would starve the reflector
            cache_rv = int(w.inf.store.resource_version or 0)
            wanted = str(max(revision, cache_rv + 1))
            with contextlib.suppress(StaleCacheError):
                await w.inf.wait_for_resource_version(wanted, timeout=min(0.05, remaining))

    async def _settle_waits(self) -> None:
        """Let the freshness waits still pending once the writers are done end, and be checked.

        What is left waits for an RV that no event of its informer's scope will reach (the last
        writes were out of its namespace or selector); a real server's periodic bookmark ends
        such a wait, but with the schedule's interval (or a watch shorter than the pre-timeout
        margin) none comes before ``WAIT_TIMEOUT``, so each ran out its timeout unchecked. Ask
        for a bookmark now, again while any wait is pending (a watch being re-opened misses
        one); a wait still times out where no bookmark can reach it, as before.
        """
        while pending := set(self.wait_tasks):
            self.server.send_bookmarks(force=True)
            await asyncio.wait(pending, timeout=0.05)

    async def _converge_all(self, why: str, also: Callable[[], bool] = lambda: True) -> bool:
        results = await asyncio.gather(
            *(self._converged(w, CONVERGE_TIMEOUT, also) for w in self.watched)
        )
        ok = True
        for w, good in zip(self.watched, results, strict=True):
            if not good:
                ok = False
                expected = self.history.state_at(self.server.revision, w.selects)
                actual = {o.key: int(o.resource_version) for o in w.inf.store.list()}
                diff = sorted(set(expected.items()) ^ set(actual.items()))[:6]
                self.out.violate(
                    "final_state" if why == "final" else "sync",
                    f"[{w.spec.describe()}] {why}: cache RV {w.inf.store.resource_version}, "
                    f"server {self.server.revision}, differing {diff}",
                )
        return ok

    # -- the run --------------------------------------------------------------------------------

    def options(self, spec: InformerSpec) -> ReflectorOptions:
        return replace(
            BASE_OPTIONS,
            page_size=spec.page_size,
            list_strategy=spec.list_strategy,
            watch_timeout=spec.watch_timeout,
            # small thresholds: the few objects of a schedule are packed, retrained, re-encoded
            compression=_COMPRESSION if spec.compressed else None,
        )

    async def run(self) -> None:
        s, server = self.s, self.server
        before = asyncio.all_tasks()
        async with server:
            self.seed_objects()
            steps = list(s.faults)
            for step in [st for st in steps if st.at_op == 0]:
                await self.apply(step)
            api = server.api_client()
            transport = Transport(api, max_line_bytes=MAX_LINE)
            try:
                for i, spec in enumerate(s.informers):
                    inf = Informer(
                        transport,
                        CONFIGMAPS,
                        namespace=spec.namespace,
                        label_selector=spec.label_selector,
                        options=self.options(spec),
                    )
                    fast = _Deliveries(f"fast-{i}", self.out, slow=False)
                    slow = _Deliveries(f"slow-{i}", self.out, slow=True)
                    handlers = (fast.attach(inf), slow.attach(inf))
                    deltas = _Deliveries(f"deltas-{i}", self.out, slow=False)
                    deltas.observe_deltas(inf)
                    self.watched.append(_Watched(spec, inf, fast, slow, deltas, handlers))
                if s.controller:
                    self._add_operator(api, transport)
                for w in self.watched:
                    w.inf.start()
                if self.operator is not None:
                    self.operator.children.start()
                    self.operator.controller.start()
                await self._body([st for st in steps if st.at_op > 0])
            finally:
                if self.operator is not None:
                    await self.operator.controller.stop()
                    await self.operator.children.stop()
                for w in self.watched:
                    await w.inf.stop()
                for task in list(self.wait_tasks):
                    task.cancel()
                await asyncio.gather(*self.wait_tasks, return_exceptions=True)
                await api.close()
            try:
                await server.wait_for_watchers_closed(timeout=5)
            except TimeoutError:
                self.out.violate("leak", f"{server.watcher_count()} watch streams still open")
        await asyncio.sleep(0)
        left = [
            t
            for t in asyncio.all_tasks() - before
            if t is not asyncio.current_task() and not t.done()
        ]
        if left:
            self.out.violate("leak", f"tasks left after stop: {[repr(t.get_coro()) for t in left]}")

    def _add_operator(self, api: Any, transport: Transport) -> None:
        """The child-per-parent controller, on informers of its own (checked like the others)."""
        for ns in NAMESPACES:  # its creates go over HTTP, into namespaces that must exist
            with contextlib.suppress(StatusError):
                self.server.create(NAMESPACES_RESOURCE, {"metadata": {"name": ns}})
        spec = InformerSpec(None, None, 3, "auto", (30, 30))
        parents = Informer(transport, CONFIGMAPS, options=self.options(spec))
        fast = _Deliveries("fast-operator", self.out, slow=False)
        slow = _Deliveries("slow-operator", self.out, slow=True)
        handlers = (fast.attach(parents), slow.attach(parents))
        deltas = _Deliveries("deltas-operator", self.out, slow=False)
        deltas.observe_deltas(parents)
        self.watched.append(_Watched(spec, parents, fast, slow, deltas, handlers))
        children = Informer(transport, SECRETS, options=self.options(spec))
        self.operator = ChildOperator(
            api, parents, children, self.server, self.out.violate, self.out.figures
        )

    async def _body(self, steps: list[FaultStep]) -> None:
        sampler = asyncio.create_task(self.sampler())
        try:
            try:
                async with asyncio.timeout(SYNC_TIMEOUT):
                    await asyncio.gather(*(w.inf.wait_for_sync() for w in self.watched))
            except TimeoutError:
                self.out.violate("sync", "informers did not sync")
                return
            timeline = asyncio.create_task(self.timeline(steps))
            await asyncio.gather(*(self.writer(i) for i in range(self.s.writers)))
            async with self.progress:
                self.ops_done = self.s.total_ops  # steps past skipped no-op writes still run
                self.progress.notify_all()
            await timeline
            self.server.stale_lag = 0  # a lagging replica catches up once the storm is over
            await self._settle_waits()
            self.server.faults.clear()
            if await self._converge_all("final"):
                if self.operator is not None:
                    for problem in await self.operator.quiesce(self.server, CONVERGE_TIMEOUT):
                        self.out.violate("operator_end_state", problem)
                for w in self.watched:
                    for handler in w.handlers:
                        await asyncio.wait_for(handler.wait_idle(), CONVERGE_TIMEOUT)
                    self._check_final(w)
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler

    def _check_final(self, w: _Watched) -> None:
        cache = {o.key: int(o.resource_version) for o in w.inf.store.list()}
        for d in (w.fast, w.slow, w.deltas):
            if d.state != cache:
                diff = sorted(set(d.state.items()) ^ set(cache.items()))[:6]
                self.out.violate("replay", f"[{w.spec.describe()}] {d.name}: differing {diff}")
        self._sample(w)

    def figures(self) -> None:
        out = self.out
        expired_fired = too_large_fired = 0
        for kind, fault in self.fault_rules:
            if fault.fired:
                out.faults[kind] += fault.fired
            # a watch answered 410 (HTTP or ERROR event) is an expired RV; a stream fault set to
            # act after N events may never act (the stream ended first). List 410s are not
            # counted here: on a first NotOlderThan page they mean an old server's Exact reading
            if kind == "watch_410_http" or (kind == "watch_410_event" and not fault.after_events):
                # a rule fires on a request the server may still refuse (a watch-list on a
                # server without it is 422 before any event): count the streams it reached
                expired_fired += sum(
                    1 for r in self.server.requests if r.fault is fault and r.status in (200, 410)
                )
            if kind == "list_504_too_large":
                too_large_fired += fault.fired
        informers = [w.inf for w in self.watched]
        if self.operator is not None:
            informers.append(self.operator.children)  # fault rules meet its requests too
        stats = [inf.statistics() for inf in informers]
        for name in ("events_applied", "relists", "lists", "watches", "bookmarks", "expired"):
            out.figures[name] += sum(getattr(st, name) for st in stats)
        out.figures["stale_dropped"] += sum(
            st.stale_events_dropped + st.duplicate_events_dropped for st in stats
        )
        out.figures["deliveries"] += sum(w.fast.count + w.slow.count for w in self.watched)
        out.figures["deltas"] += sum(w.deltas.count for w in self.watched)
        if sum(st.expired for st in stats) < expired_fired:
            out.violate(
                "stats", f"{expired_fired} 410 faults fired, {sum(st.expired for st in stats)} seen"
            )
        if sum(st.too_large for st in stats) < too_large_fired:
            out.violate("stats", f"{too_large_fired} 504 faults fired, fewer counted")


async def run_schedule(schedule: Schedule) -> Outcome:
    """Execute ``schedule`` and check every invariant; never raises for a violation."""
    outcome = Outcome(schedule)
    run = _Run(schedule, outcome)
    capture = _LogCapture()
    logger = logging.getLogger("informer")
    logger.addHandler(capture)
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    unhandled: list[str] = []
    loop.set_exception_handler(
        lambda _loop, ctx: unhandled.append(f"{ctx.get('message')}: {ctx.get('exception')!r}")
    )
    started = time.monotonic()
    try:
        await run.run()
        run.figures()
    except Exception as exc:  # the harness itself must report, not crash the soak
        outcome.violate("unhandled", f"{type(exc).__name__}: {exc}")
    finally:
        logger.removeHandler(capture)
        loop.set_exception_handler(previous)
    outcome.seconds = time.monotonic() - started
    for record in capture.records:
        outcome.violate("error_log", f"{record.name}: {record.getMessage()[:200]}")
    for message in unhandled:
        outcome.violate("unhandled", message)
    outcome.figures["schedules"] += 1
    return outcome
