"""An event recorder: ``events.k8s.io/v1`` Events about objects, aggregated into series and
rate-limited, as client-go's recorders do (``tools/events`` and ``tools/record``).

``recorder = EventRecorder(client, "example.com/mirror")``, then, in a reconcile,
``recorder.event(obj, "Normal", "Mirrored", "Update", "copied 3 keys")`` (or ``normal`` /
``warning``): it returns at once; a background task writes. ``await recorder.aclose()`` (or
``async with``) writes what is pending and the final counts, and stops it.

- **Aggregation** (client-go's ``EventSeries``): occurrences with the same type, reason, action,
  reporting controller, regarding and related object and note are one Event. The first creates
  it; the second turns it into a series (``series.count: 2``, ``lastObservedTime``, a merge
  patch); later ones only count, and the count is written when the series is refreshed (every
  ``refresh_period``, 30 min: Events expire after an hour), when it ends (no occurrence for
  ``finish_after``, 6 min: the final count is written and a later occurrence starts a new
  Event) or on ``aclose``. So a reconcile failing in a loop costs two writes, not one per try.
  The regarding object's resourceVersion is written but not part of the aggregation key (a
  reconcile that updates its object would otherwise start a new Event each time).
- **Rate limiting** (``tools/record``'s spam filter): writes about one object (for this
  recorder) take a token from its bucket: ``burst`` 25, refilled one per ``refill_period``
  (300 s), for the 4,096 objects written about last. A new Event without a token is dropped
  (counted as ``throttled``); a series without one keeps counting and is written later.
- **Writes** go through the writes ``Client``: a transport error (or a malformed answer) is
  retried after ``retry_delay`` (10 s, jittered by 25%), up to ``max_tries`` (12) attempts; an
  API error is not (the request would fail the same way), except a series whose Event is gone
  (it is created again) or a create racing its own series. At most ``max_queued`` (1,000)
  writes wait; more are dropped (counted).
- **Logs** name the event's reason (``event_reason``), the regarding object
  (``regarding_kind``, ``regarding_namespace``, ``regarding_name``) and the error (type, HTTP
  status and reason, the request), never the note (it may quote object data).

The Event is in the regarding object's namespace (``default`` for a cluster-scoped object),
named ``<object name>.<nanoseconds, hex>``; ``reportingInstance`` defaults to
``<reporting controller>-<hostname>`` (client-go's). ``note`` is cut to 1 KiB (the API's
limit); ``type`` must be ``Normal`` or ``Warning``, ``reason`` and ``action`` non-empty, at most
128 characters (refused with ``ValueError``, as the server would refuse the write).
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import random
import socket
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Literal, Self

from informer._log import describe_failure, get_logger
from informer.client import Client
from informer.errors import AlreadyExists, ApiError, MalformedResponse, NotFound, TransportError
from informer.resource import EVENTS, Resource
from informer.workqueue import Clock, MonotonicClock, Timer

__all__ = ["EventRecorder", "EventRecorderStats"]

_log = get_logger("informer.event_recorder")

NOTE_LIMIT = 1024  # bytes: the API refuses a longer note
FIELD_LIMIT = 128  # reason, action, reportingInstance
LRU_SIZE = 4096  # objects whose rate limit is remembered (client-go's maxLruCacheEntries)
_RETRYABLE = (TransportError, MalformedResponse, TimeoutError, OSError)

_Ref = tuple[str, str, str, str, str]  # apiVersion, kind, namespace, name, uid


@dataclass(frozen=True, slots=True)
class EventRecorderStats:
    """Counters of an ``EventRecorder`` since it was made.

    ``recorded``: calls of ``event``; ``aggregated``: occurrences counted into an existing Event;
    ``created`` / ``series_writes``: Events created / series counts patched; ``throttled``: new
    Events dropped by the rate limit; ``dropped``: writes dropped because ``max_queued`` were
    waiting or the recorder was closed; ``failed``: writes given up (refused, or out of tries);
    ``retries``: writes retried; ``pending``: writes waiting now; ``series``: Events the recorder
    still aggregates into.
    """

    recorded: int
    aggregated: int
    created: int
    series_writes: int
    throttled: int
    dropped: int
    failed: int
    retries: int
    pending: int
    series: int


@dataclass(slots=True, eq=False)
class _Entry:
    """One Event the recorder aggregates into."""

    body: dict[str, Any]  # as created (without series)
    spam_key: _Ref
    count: int = 1
    last_observed: str = ""
    observed_at: float = 0.0  # monotonic
    created: bool = False  # the server has it (as far as the recorder knows)
    written: int = 0  # the count the server has


@dataclass(slots=True, eq=False)
class _Job:
    entry: _Entry
    kind: Literal["create", "series"]
    tries: int = 0


class _Bucket:
    """A token bucket: ``burst`` tokens, one more every ``period`` seconds."""

    __slots__ = ("tokens", "updated")

    def __init__(self, burst: int, now: float) -> None:
        self.tokens = float(burst)
        self.updated = now

    def take(self, burst: int, period: float, now: float) -> bool:
        self.tokens = min(float(burst), self.tokens + (now - self.updated) / period)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class EventRecorder:
    """Posts ``events.k8s.io/v1`` Events about objects (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        reporting_controller: str,
        *,
        reporting_instance: str | None = None,
        burst: int = 25,
        refill_period: float = 300.0,
        max_queued: int = 1000,
        retry_delay: float = 10.0,
        max_tries: int = 12,
        refresh_period: float = 1800.0,
        finish_after: float = 360.0,
        clock: Clock | None = None,
        wall_clock: Callable[[], datetime] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not reporting_controller:
            raise ValueError("reporting_controller is required (e.g. example.com/my-operator)")
        if burst < 1 or refill_period <= 0 or max_queued < 1 or max_tries < 1:
            raise ValueError("burst, refill_period, max_queued and max_tries must be positive")
        self.client = client
        self.reporting_controller = reporting_controller
        instance = reporting_instance or f"{reporting_controller}-{socket.gethostname()}"
        self.reporting_instance = instance[:FIELD_LIMIT]
        self.burst = burst
        self.refill_period = refill_period
        self.max_queued = max_queued
        self.retry_delay = retry_delay
        self.max_tries = max_tries
        self.refresh_period = refresh_period
        self.finish_after = finish_after
        self._clock = clock or MonotonicClock()
        self._wall = wall_clock or (lambda: datetime.now(UTC))
        self._rng = rng or random.Random()
        self._series: dict[tuple[Any, ...], _Entry] = {}
        self._buckets: OrderedDict[_Ref, _Bucket] = OrderedDict()
        self._jobs: deque[_Job] = deque()
        self._retrying: dict[_Job, Timer] = {}  # job -> its timer
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._writer: asyncio.Task[None] | None = None
        self._housekeeper: asyncio.Task[None] | None = None
        self._closed = False
        self._names = itertools.count()
        self._counts = dict.fromkeys(
            (
                "recorded",
                "aggregated",
                "created",
                "series_writes",
                "throttled",
                "dropped",
                "failed",
                "retries",
            ),
            0,
        )

    # -- recording --------------------------------------------------------------------------
    def event(
        self,
        regarding: Mapping[str, Any],
        type: str,
        reason: str,
        action: str,
        note: str = "",
        *,
        related: Mapping[str, Any] | None = None,
        resource: Resource | None = None,
    ) -> None:
        """Record that ``action`` happened to ``regarding`` (an object: a cached ``KubeObject``,
        what a write returned) for ``reason``; ``type`` is ``Normal`` or ``Warning``. Returns at
        once (the write is in the background). ``resource`` gives the object's kind and
        apiVersion when the object does not carry them."""
        if type not in ("Normal", "Warning"):
            raise ValueError(f"type must be Normal or Warning, not {type!r}")
        for field, value in (("reason", reason), ("action", action)):
            if not isinstance(value, str) or not value or len(value) > FIELD_LIMIT:
                raise ValueError(f"{field} must be 1 to {FIELD_LIMIT} characters")
        ref = _reference(regarding, resource)
        rel = _reference(related, None) if related is not None else None
        note = _cut(note or "")
        self._counts["recorded"] += 1
        if self._closed:
            self._counts["dropped"] += 1
            return
        self._start()
        now = self._clock.now()
        wall = self._wall()
        observed = _micro_time(wall)
        key = (type, action, reason, _ref_key(ref), _ref_key(rel) if rel else None, note)
        entry = self._series.get(key)
        if entry is not None:
            self._counts["aggregated"] += 1
            entry.count += 1
            entry.last_observed, entry.observed_at = observed, now
            if entry.count == 2 and self._take(entry.spam_key, now):  # it becomes a series
                self._enqueue(_Job(entry, "series"))
            return
        spam_key = _ref_key(ref)
        if not self._take(spam_key, now):
            self._counts["throttled"] += 1
            return
        namespace = ref.get("namespace") or "default"
        body: dict[str, Any] = {
            "apiVersion": EVENTS.api_version,
            "kind": EVENTS.kind,
            "metadata": {"name": self._name(ref["name"], wall), "namespace": namespace},
            "eventTime": observed,
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action,
            "reason": reason,
            "regarding": ref,
            "note": note,
            "type": type,
        }
        if rel is not None:
            body["related"] = rel
        entry = _Entry(body, spam_key, last_observed=observed, observed_at=now)
        if self._enqueue(_Job(entry, "create")):
            self._series[key] = entry

    def normal(self, regarding: Mapping[str, Any], reason: str, action: str, note: str = "",
               **kwargs: Any) -> None:  # fmt: skip
        """``event(regarding, "Normal", ...)``."""
        self.event(regarding, "Normal", reason, action, note, **kwargs)

    def warning(self, regarding: Mapping[str, Any], reason: str, action: str, note: str = "",
                **kwargs: Any) -> None:  # fmt: skip
        """``event(regarding, "Warning", ...)``."""
        self.event(regarding, "Warning", reason, action, note, **kwargs)

    def _name(self, regarding_name: str, wall: datetime) -> str:
        nanos = int(wall.timestamp() * 1_000_000) * 1000 + next(self._names) % 1000
        return f"{regarding_name[: 253 - 17]}.{nanos:x}"

    def _take(self, spam_key: _Ref, now: float) -> bool:
        bucket = self._buckets.get(spam_key)
        if bucket is None:
            bucket = self._buckets[spam_key] = _Bucket(self.burst, now)
            if len(self._buckets) > LRU_SIZE:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(spam_key)
        return bucket.take(self.burst, self.refill_period, now)

    def _enqueue(self, job: _Job) -> bool:
        if len(self._jobs) >= self.max_queued:
            self._counts["dropped"] += 1
            return False
        self._jobs.append(job)
        self._idle.clear()
        self._wakeup.set()
        return True

    # -- lifecycle --------------------------------------------------------------------------
    def _start(self) -> None:
        if self._writer is None:
            loop = asyncio.get_running_loop()
            clean = contextvars.Context()  # not a reconcile's: its writes are not the key's
            self._writer = loop.create_task(self._write_loop(), context=clean)
            self._housekeeper = loop.create_task(self._housekeeping(), context=clean)

    async def flush(self) -> None:
        """Until every write queued so far has been attempted (a write waiting for its retry
        is not waited for)."""
        await self._idle.wait()

    async def aclose(self) -> None:
        """Write what is pending (a write waiting for its retry: once more, now) and every
        series count not yet written, then stop. Later events are dropped (counted)."""
        if self._closed:
            return
        self._closed = True
        if self._housekeeper is not None:
            self._housekeeper.cancel()
        for job, timer in list(self._retrying.items()):
            timer.cancel()
            job.tries = self.max_tries - 1  # one last attempt
            self._jobs.append(job)
        self._retrying.clear()
        for entry in self._series.values():
            if entry.count >= 2 and entry.written != entry.count:
                self._jobs.append(_Job(entry, "series"))
        if self._jobs:
            self._idle.clear()
            self._wakeup.set()
        if self._writer is not None:
            await self._idle.wait()
            tasks = [t for t in (self._writer, self._housekeeper) if t is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self._series.clear()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def statistics(self) -> EventRecorderStats:
        return EventRecorderStats(
            pending=len(self._jobs) + len(self._retrying), series=len(self._series), **self._counts
        )

    # -- writing ----------------------------------------------------------------------------
    async def _write_loop(self) -> None:
        while True:
            while not self._jobs:
                self._idle.set()
                self._wakeup.clear()
                await self._wakeup.wait()
            job = self._jobs[0]
            try:
                await self._write(job)
            except Exception as exc:  # a bug must not end the loop: counted, logged, dropped
                self._fail(job.entry, exc, "event_recorder.write_failed")
            finally:
                self._jobs.popleft()
            if not self._jobs:
                self._idle.set()

    async def _write(self, job: _Job) -> None:
        entry = job.entry
        if entry.created and entry.written == entry.count:
            return  # already written (a retried create after its series, a series after a
            # create that came after the occurrences)
        job.tries += 1
        try:
            await self._record(entry)
        except _RETRYABLE as exc:
            if job.tries >= self.max_tries or self._closed:
                self._fail(entry, exc, "event_recorder.retries_exhausted")
            else:
                self._counts["retries"] += 1
                self._retry_later(job)
        except AlreadyExists as exc:
            entry.created = True  # an earlier attempt's answer was lost, or its series raced it
            if entry.count >= 2 and job.tries < self.max_tries and not self._closed:
                self._counts["retries"] += 1
                self._jobs.append(_Job(entry, "series", job.tries))
            elif entry.count >= 2:
                self._fail(entry, exc, "event_recorder.write_failed")
        except ApiError as exc:
            self._fail(entry, exc, "event_recorder.write_failed")

    async def _record(self, entry: _Entry) -> None:
        """Write the entry as it is now: patch its series, or create it (with its series when
        it has one; again when its series patch finds it gone)."""
        count, observed = entry.count, entry.last_observed
        series = {"count": count, "lastObservedTime": observed} if count >= 2 else None
        meta = entry.body["metadata"]
        if series is not None and entry.created:
            try:
                await self.client.patch(
                    EVENTS, meta["name"], {"series": series}, namespace=meta["namespace"]
                )
            except NotFound:
                entry.created = False  # expired or deleted: create it again
            else:
                entry.written = max(entry.written, count)
                self._counts["series_writes"] += 1
                return
        body = dict(entry.body, series=series) if series is not None else entry.body
        await self.client.create(EVENTS, body)
        entry.created = True
        entry.written = max(entry.written, count)
        self._counts["created"] += 1

    def _retry_later(self, job: _Job) -> None:
        delay = self.retry_delay * (1.0 + 0.25 * self._rng.random())

        def again() -> None:
            if self._retrying.pop(job, None) is not None:
                self._enqueue(job)

        self._retrying[job] = self._clock.call_at(self._clock.now() + delay, again)

    def _fail(self, entry: _Entry, exc: BaseException, event: str) -> None:
        self._counts["failed"] += 1
        regarding = entry.body["regarding"]
        _log.warning(
            event,
            event_reason=entry.body["reason"],
            regarding_kind=regarding.get("kind"),
            regarding_namespace=regarding.get("namespace", ""),
            regarding_name=regarding.get("name"),
            **describe_failure(exc),
        )

    async def _housekeeping(self) -> None:
        """End the series idle for ``finish_after`` (their final count written) and the single
        Events as old; refresh every series each ``refresh_period``."""
        next_refresh = self._clock.now() + self.refresh_period
        while True:
            await self._clock.sleep(min(self.finish_after, self.refresh_period))
            now = self._clock.now()
            for key, entry in list(self._series.items()):
                if now - entry.observed_at >= self.finish_after:
                    del self._series[key]
                    if entry.count >= 2 and entry.written != entry.count:
                        self._enqueue(_Job(entry, "series"))
            if now >= next_refresh:
                next_refresh = now + self.refresh_period
                for entry in self._series.values():
                    if entry.count >= 2 and entry.created:
                        entry.written = 0  # written again even if unchanged: it keeps it alive
                        self._enqueue(_Job(entry, "series"))


def _reference(obj: Mapping[str, Any] | None, resource: Resource | None) -> dict[str, str]:
    """An ``ObjectReference`` to ``obj`` (apiVersion, kind, namespace, name, uid, RV)."""
    if not isinstance(obj, Mapping):
        raise TypeError("an event is about an object (a mapping with metadata)")
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        raise ValueError("the object has no metadata.name")
    assert isinstance(meta, Mapping)
    api_version = obj.get("apiVersion") or (resource.api_version if resource else None)
    kind = obj.get("kind") or (resource.kind if resource else None)
    if not api_version or not kind:
        raise ValueError("the object has no kind/apiVersion: pass resource=")
    ref = {"apiVersion": str(api_version), "kind": str(kind)}
    if meta.get("namespace"):
        ref["namespace"] = str(meta["namespace"])
    ref["name"] = name
    for field, source in (("uid", "uid"), ("resourceVersion", "resourceVersion")):
        if meta.get(source):
            ref[field] = str(meta[source])
    return ref


def _ref_key(ref: Mapping[str, str]) -> _Ref:
    """What identifies the object of a reference (its resourceVersion left out)."""
    return (
        ref.get("apiVersion", ""),
        ref.get("kind", ""),
        ref.get("namespace", ""),
        ref.get("name", ""),
        ref.get("uid", ""),
    )


def _cut(note: str) -> str:
    """``note`` cut to ``NOTE_LIMIT`` bytes of UTF-8, on a character boundary."""
    encoded = note.encode()
    if len(encoded) <= NOTE_LIMIT:
        return note
    return encoded[:NOTE_LIMIT].decode(errors="ignore")


def _micro_time(moment: datetime) -> str:
    """``metav1.MicroTime``'s wire form: RFC 3339 in UTC with microseconds."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
