"""Compressed objects (opt-in per informer): ``Compression`` and the store's packer.

A store built with ``Compression`` holds each object's JSON compressed by zstd with a dictionary
trained on the informer's own objects: Kubernetes objects of one resource repeat most of their
bytes (every Pod of a ReplicaSet), so a dictionary makes each a fraction of its JSON
(``benchmarks/RESULTS.md``). What the hot paths read stays outside the compressed bytes: the
key, namespace, name and resourceVersion (always), the uid and labels (decoded before packing;
equal label sets share one dict). Everything else decompresses on access, through the memo of
recent full decodes (``informer.objects``): ``obj["spec"]`` then ``obj["status"]`` decompress
once.

When: a list's objects as they arrive, before they reach the cache (the reflector's
``PagePacking``). A list's page is decoded into objects that keep their slice of the page (no
copy of their bytes) with uid and labels decoded in the same pass; the page is compressed (in a
worker thread for a page of large objects: zstd releases the GIL, and the next page, requested
before, arrives meanwhile) and each object packed; then the page goes. A plain copy of the list
is never held: the peak is a page. The dictionary is trained on the first ``min_objects``
objects of the first list (those gathered until then are held plain for that long, then packed
with the rest); a streaming list's initial events are packed the same way before they are
applied. A relist keeps the cached instance of every unchanged object (same key and RV), packed
already.

A watch's objects are applied as they come (each its own copy of its bytes, uid and labels
decoded with its head) and packed soon after by the background task, in batches compressed in
the worker thread while the loop applies the next events: packing them before applying them
put zstd's time on the loop, and a watch fill ran at half the rate of a plain cache. The plain
share is bounded: past ``_BACKLOG_BATCHES`` batches (or ``_BACKLOG_BYTES``) waiting, the watch
packs a batch on the loop itself (``room``: the worker thread lags on a busy machine).

The background task also packs what stays cold: objects that arrived before a dictionary
(a cache below ``min_objects``, filled by a watch), objects a transform function on dicts made
(after the list), objects written to the store directly (``apply_event`` from tests), and the
re-encoding after a retraining. Every packing is IN PLACE: the instance's ``_raw`` and
``_form`` change (``KubeObject._pack_in_place``), never the instance, so no new struct, key or
RV string is made (replacing instances left the old small objects' holes in the heap), handlers
and the memo keep the same object (equal before and after), and a reader on another thread sees
the old bytes or the new ones, never a mix (``KubeObject._state``).

The dictionary is trained (in the worker thread) from up to ``train_objects`` objects; retrained
from the objects held then when the objects packed since compress ``retrain_ratio`` times worse
than the first ones packed with it (a rollout changed every image), and the entries packed with
the old dictionary are re-encoded in place in the background (each stays readable with the codec
that packed it until then).
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import concurrent.futures
import os
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from informer._log import get_logger
from informer._malloc import trim as _trim
from informer._zstd import ZstdCodec, available
from informer.errors import ConfigurationError
from informer.objects import KubeObject, _Form
from informer.objects._forms import ITEM, PACKED, _Packed
from informer.objects._uid import uid_value
from informer.objects._wire import _PackedMeta

_log = get_logger("informer.store")


@dataclass(frozen=True, slots=True)
class Compression:
    """Hold the cache's objects compressed (``ReflectorOptions(compression=Compression())``).

    Needs the ``kube-informer[compression]`` extra (the ``zstandard`` binding).
    """

    level: int = 3
    """zstd level: 3 compresses an 8 KB Pod in ~9 us; higher levels gain little with a
    dictionary (0.073x at 3 and 5 on the realistic Pods) and cost 5x the time."""
    dict_size: int = 112 * 1024
    """Bytes of the trained dictionary (capped at a tenth of the samples' size)."""
    train_objects: int = 1000
    """Objects sampled (evenly over the cache) to train a dictionary."""
    min_objects: int = 1000
    """The dictionary is trained once this many objects are at hand (a list's so far and the
    cache's); until then they are held plain. A dictionary of the first 64 objects of a watch
    compressed the next ones badly and was retrained again and again as the cache grew; one of
    500 realistic Pods compresses others to 0.076x, of 1,000 to 0.074x."""
    retrain_ratio: float = 1.5
    """Retrain when the last ``train_objects`` objects packed compress this many times worse
    than the first ``train_objects`` packed after the training did (not the training set:
    a dictionary compresses the objects it was trained on far better than any other), and
    at least as many objects as the cache holds were packed since (never a retraining loop)."""
    batch: int = 512
    """Objects compressed per step of the background task."""
    in_thread: bool = True
    """Compress and train in a worker thread (False: on the event loop, one batch per step)."""

    def __post_init__(self) -> None:
        if not 1 <= self.level <= 22:
            raise ConfigurationError(f"Compression.level must be 1-22: {self.level}")
        if self.min_objects < 1 or self.train_objects < 1 or self.batch < 1:
            raise ConfigurationError("Compression counts must be >= 1")
        if self.retrain_ratio <= 1.0:
            raise ConfigurationError("Compression.retrain_ratio must be > 1")
        available()


class _Packer:
    """The compression of one store's objects (see the module docstring): on the paths that
    bring objects in (``__call__``, the ``PagePacking`` of lists), and a
    background task for the cold ones (``note``, ``note_all``)."""

    def __init__(self, options: Compression, items: Callable[[], dict[str, KubeObject]]) -> None:
        self.options = options
        self._items = items  # the store's current contents (swapped by replace)
        self.codec: ZstdCodec | None = None
        # the keys whose objects wait for the background task (a dict: a key changed again and
        # again while it waits is there once), and the JSON of an object the last batch packed
        # (how many bytes they hold, about)
        self._pending: dict[str, None] = {}
        self._size_per_object = 0
        self._scan = False  # look at every key (after a replace or a training)
        self._task: asyncio.Task[None] | None = None
        self._stepped: asyncio.Future[None] | None = None  # what ``room`` waits for
        self._inflight: collections.deque[asyncio.Future[None]] = collections.deque()
        self._training: asyncio.Future[None] | None = None
        # the ratio of the first window of objects packed after a training (objects it was not
        # trained on: the training set itself compresses far better than any other would)
        self.trained_ratio: float | None = None
        self._since_training = 0
        self._window_in = 0
        self._window_out = 0
        self._window_n = 0
        self.trainings = 0
        self.packed = 0  # objects packed (a generation for the store's size)
        self.loop_batches = 0  # batches a watch packed on the loop (``room``: the thread lagged)
        self.codecs: builtins.list[ZstdCodec] = []
        self._freed = 0  # bytes of plain JSON packed since the last trim
        # equal label sets share one dict (read-only: ``KubeObject.labels`` is a proxy)
        self.labels: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}

    # -- the paths that bring objects in (``PagePacking``) ----------------------------------
    async def __call__(
        self, objs: builtins.list[KubeObject], gathered: Collection[KubeObject] = ()
    ) -> None:
        """Pack ``objs`` in place (those the current codec has not packed): a list's page as
        it arrives, a streaming list's initial events before they are applied.

        ``gathered``: the objects of the same list so far (not in the cache yet; may include
        ``objs``: a streaming list's initial objects). The
        dictionary is trained here once ``objs``, ``gathered`` and the cache hold
        ``min_objects`` (the objects gathered plain until then are packed with them). No item
        keeps its slice of the page: those not packed get their own bytes.

        Returns once the page is on its way: its compression (in the worker thread) and
        packing overlap the next page's decoding on the loop, ``_PAGES_AHEAD`` pages at most
        (the peak stays a few pages); ``drain`` waits for them all (before the list reaches
        the cache).
        """
        if self.codec is None:
            try:
                items = self._items()
                if len(objs) + len(gathered) + len(items) < self.options.min_objects:
                    raise _Plain
                if gathered:
                    for o in gathered:
                        o._settle()
                    objs = [*gathered, *objs]
                await self._train([*items.values(), *objs])  # the cache's and these
                if self.codec is None:
                    raise _Plain
            except BaseException as exc:
                for o in objs:
                    o._settle()
                if isinstance(exc, _Plain):
                    return
                raise
        inflight = self._inflight
        inflight.append(asyncio.ensure_future(self._pack_page(objs)))
        while len(inflight) > _PAGES_AHEAD:
            await inflight.popleft()

    async def drain(self) -> None:
        """Until every page handed to ``__call__`` is packed (or given its own bytes)."""
        inflight = self._inflight
        while inflight:
            await inflight.popleft()

    async def _pack_page(self, objs: builtins.list[KubeObject]) -> None:
        try:
            await self._pack(objs)
        except Exception as exc:  # never lose a list over compression: its objects stay plain
            _log.error("store.compression_failed", error=type(exc).__name__, detail=str(exc))
        finally:
            for o in objs:
                if type(o._raw) is not bytes:  # not packed: its own bytes, the page goes
                    o._settle()

    # -- what the store calls --------------------------------------------------------------
    def note(self, key: str) -> None:
        """The object at ``key`` changed and is plain: packed by the background task (a watch's
        objects: applied as they came, compressed in batches in the worker thread)."""
        self._pending[key] = None
        if self._task is None:
            self._kick()

    def note_all(self) -> None:
        self._scan = True
        self._pending.clear()
        if self._task is None:
            self._kick()

    @property
    def backlogged(self) -> bool:
        """Whether more plain objects wait for the background task than a watch may add to
        before it waits (``room``): the bound on the plain bytes the cache holds meanwhile."""
        waiting = len(self._pending)
        return (
            waiting > _BACKLOG_BATCHES * self.options.batch
            or waiting * self._size_per_object > _BACKLOG_BYTES
            or (self._scan and self._task is not None)
        )

    async def room(self) -> None:
        """Until the backlog is under its bound (or the background task stopped: a cache too
        small to train holds its few objects plain, a failure leaves them so).

        While the worker thread lags (a machine whose other core is busy with other work)
        the loop packs a batch itself, as it comes: never slower than packing on the loop
        (what a busy machine leaves), never more plain objects than the bound. While a
        dictionary is trained it waits for it."""
        while self.backlogged and self._task is not None:
            if self.codec is not None:
                self.loop_batches += 1
                await self._pack(self._take_batch(self.options.batch), thread=False)
                continue
            stepped = self._stepped
            if stepped is None:
                stepped = self._stepped = asyncio.get_running_loop().create_future()
            await stepped

    def _step_done(self) -> None:
        stepped, self._stepped = self._stepped, None
        if stepped is not None and not stepped.done():
            stepped.set_result(None)

    def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()

    async def compact(self) -> None:
        """Until every object noted so far is packed (or the cache is too small to train)."""
        while True:
            task = self._task
            if task is None:
                if not self._work_left():
                    return
                await self._run()
                return
            await asyncio.shield(task)

    # -- the work --------------------------------------------------------------------------
    def _work_left(self) -> bool:
        if not (self._pending or self._scan):
            return self._freed >= _TRIM_AFTER
        return self.codec is not None or len(self._items()) >= self.options.min_objects

    def _kick(self) -> None:
        if not self._work_left():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a store used without a loop: compact() does the work
            return
        self._task = loop.create_task(self._run_task(), name="informer-compression")

    async def _run_task(self) -> None:
        try:
            await self._run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # never lose the cache over compression: it stays plain
            _log.error("store.compression_failed", error=type(exc).__name__, detail=str(exc))
        finally:
            if self._task is asyncio.current_task():
                self._task = None

    async def _call(self, fn: Callable[..., object], *args: object) -> object:
        if self.options.in_thread:
            return await _in_thread(fn, *args)
        await asyncio.sleep(0)  # one batch per step: the loop's other work goes in between
        return fn(*args)

    async def _run(self) -> None:
        try:
            while self._pending or self._scan:
                if not self._work_left():
                    break
                await self._step()
                self._step_done()
        finally:
            self._step_done()
            if self._freed >= _TRIM_AFTER:
                self._freed = 0
                await self._call(_trim)

    async def _step(self) -> None:
        """Train, or pack one batch of the cold objects."""
        if self.codec is None:
            await self._train([*self._items().values()])
            return
        opts = self.options
        if (
            opts.in_thread
            and not self._scan
            and len(self._pending) < opts.batch // 4
            and len(self._pending) * self._size_per_object < _THREAD_BYTES
        ):
            # a few objects: let a watch's next ones join them (one batch is one handoff to
            # the worker thread and back, each a wait for the GIL while the loop is busy)
            await asyncio.sleep(_GATHER_SECONDS)
        await self._pack(self._take_batch(opts.batch), thread=True)

    def _take_batch(self, n: int) -> builtins.list[KubeObject]:
        """Up to ``n`` objects the cache holds that the current codec has not packed."""
        items = self._items()
        current = self.codec
        if self._scan:  # (after every list: its objects are packed already, most often)
            self._scan = False
            self._pending = {
                k: None
                for k, o in items.items()
                if not ((f := o._form).code == PACKED and f.codec is current)  # type: ignore[attr-defined]
            }
        pending = self._pending
        out: builtins.list[KubeObject] = []
        pop = pending.popitem
        append = out.append
        while pending and len(out) < n:
            obj = items.get(pop()[0])
            if obj is None:
                continue
            form = obj._form
            if form.code == PACKED and form.codec is current:  # type: ignore[attr-defined]
                continue
            append(obj)
        return out

    async def _pack(self, objs: Sequence[KubeObject], thread: bool | None = None) -> None:
        """Compress those of ``objs`` the current codec has not packed and pack each in place:
        in the worker thread (``thread``; None: when they are many), where zstd releases the
        GIL and the loop applies the watch's next events meanwhile, or on the loop.

        (Every object a watch brings goes through here: comprehensions, one set of forms per
        form of the batch, no method per object but ``_pack_in_place``.)"""
        codec = self.codec
        if codec is None:
            return  # retraining (a list's page packed after): the scan after it packs them
        # (the loop's thread, the only writer: ``_raw`` and ``_form`` read directly are a pair)
        todo = [o for o in objs if not ((f := o._form).code == PACKED and f.codec is codec)]  # type: ignore[attr-defined]
        if not todo:
            return
        forms = [o._form for o in todo]
        raws: builtins.list[Any] = [
            o._raw if f.code <= ITEM else o._object_bytes()[0]  # a line's object member
            for o, f in zip(todo, forms, strict=True)
        ]
        for o in todo:
            held = o._lazy
            if held is None or type(held) is str:  # (a list's item; a watch's, its RV alone)
                o._meta()  # the uid and labels, while the bytes are plain
        size_in = sum(map(len, raws))
        if thread is None:
            thread = size_in >= _THREAD_BYTES
        if thread and self.options.in_thread:
            out = await _in_thread(_compress_all, codec, raws)
        else:
            out = _compress_all(codec, raws)
        if self._retrained(codec):
            return  # retrained meanwhile: the scan after the training packs them
        shared = self.labels
        if len(shared) > 2 * len(self._items()) + 1024:  # label sets of objects long gone
            shared.clear()
        share = shared.setdefault
        steps: dict[_Form, tuple[_Form, _Packed]] = {}
        meta = _PackedMeta
        pack_forms = KubeObject._pack_forms
        n = skipped = 0
        for obj, form, data, raw in zip(todo, forms, out, raws, strict=True):
            if obj._form is not form:
                skipped += len(raw)  # packed meanwhile (another path, a newer codec)
                continue
            lazy: Any = obj._lazy
            labels = lazy.labels
            if labels:
                labels = share(tuple(labels.items()), labels)
            uid = lazy.uid
            step = steps.get(form)
            if step is None:
                step = steps[form] = pack_forms(form, codec)
            obj._pack_in_place(
                data,
                codec,
                meta(
                    uid if type(uid) is int else uid_value(uid),
                    labels,
                    lazy.deletion_timestamp,
                    lazy.resource_version,
                ),
                step,
            )
            n += 1
        size_in -= skipped
        self.packed += n
        self._freed += size_in
        self._size_per_object = size_in // max(n, 1)
        self._window(size_in, sum(map(len, out)), n)

    def _retrained(self, codec: ZstdCodec) -> bool:
        return self.codec is not codec

    async def _train(self, objs: Sequence[KubeObject]) -> None:
        """A dictionary from up to ``train_objects`` of ``objs`` (evenly sampled); one
        training at a time (a list's and the background task's wait for the same)."""
        if self._training is not None:
            await asyncio.shield(self._training)
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._training = done
        try:
            step = max(1, len(objs) // self.options.train_objects)
            samples = [bytes(o._object_bytes()[0]) for o in objs[::step]]
            samples = samples[: self.options.train_objects]
            opts = self.options
            out = await self._call(_train, samples, opts.dict_size, opts.level)
            assert isinstance(out, tuple)
            codec: ZstdCodec = out[0]
            ratio: float = out[1]
            self.codec = codec
            self.codecs = [c for c in (*self.codecs[-1:], codec)]
            self.trained_ratio = None  # the first window after it sets the reference
            self._since_training = 0
            self._window_in = self._window_out = self._window_n = 0
            self.trainings += 1
            self.note_all()  # every object: the new ones and those of an older dictionary
            _log.debug(
                "store.compression_trained",
                samples=len(samples),
                dictionary_bytes=codec.dict_size,
                ratio=round(ratio, 4),
            )
        finally:
            self._training = None
            done.set_result(None)

    def _window(self, size_in: int, size_out: int, n: int) -> None:
        self._since_training += n
        self._window_in += size_in
        self._window_out += size_out
        self._window_n += n
        if self._window_n < self.options.train_objects or not self._window_in:
            return
        ratio = self._window_out / self._window_in
        self._window_in = self._window_out = self._window_n = 0
        reference = self.trained_ratio
        if reference is None:
            self.trained_ratio = ratio
        elif ratio > reference * self.options.retrain_ratio and self._since_training >= len(
            self._items()
        ):
            _log.info(
                "store.compression_retrain",
                ratio=round(ratio, 4),
                trained_ratio=round(reference, 4),
            )
            self.codec = None  # trained again from the objects held now
            self.note_all()

    def retrain(self) -> None:
        """Train a new dictionary at the next step (tests; ``_window`` decides it otherwise)."""
        self.codec = None
        self.note_all()


_THREAD_BYTES = 1 << 20
"""Compress in a worker thread from this many bytes on (a page of a list of large objects:
the next page arrives meanwhile); fewer on the loop (a streaming list's events: the handoff to a
thread and back costs more than it overlaps). The background task always uses the thread."""

_TRIM_AFTER = 8 << 20

_GATHER_SECONDS = 0.005
"""How long the background task lets a few noted objects wait for more (a watch's next
reads) before it hands them to the worker thread."""

_BACKLOG_BYTES = 8 << 20
_BACKLOG_BATCHES = 2
"""A watch waits (``_Packer.room``) once more than this many bytes of JSON, or batches of
objects, wait plain for the background task: the cache's plain share stays bounded however
fast events come (1,024 objects at the default batch: 8 MB of 8 KB Pods)."""


class _Plain(Exception):
    """(``_Packer.__call__``: no dictionary yet, the objects stay plain.)"""


_PAGES_AHEAD = 2
"""Pages of a list whose compression may still run while the next one is decoded."""

_executor: concurrent.futures.ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _forget_executor() -> None:
    """A forked child has no compression thread: it starts its own when it needs one (the
    parent's executor would queue work for a thread that is not there)."""
    global _executor, _executor_lock
    _executor = None
    _executor_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_executor)


def _in_thread(fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
    """``fn(*args)`` in THE compression thread: one for the process, so every store's zstd
    work (a list's pages, the watches' batches, trainings) takes one core at most, and the
    event loop's thread keeps the other (two jobs at once in the default executor's threads
    took both cores from the loop on a 2-core machine)."""
    global _executor
    if _executor is None:
        with _executor_lock:
            if _executor is None:
                _executor = concurrent.futures.ThreadPoolExecutor(1, "informer-compression")
    return asyncio.get_running_loop().run_in_executor(_executor, fn, *args)


def _compress_all(codec: ZstdCodec, raws: builtins.list[bytes]) -> builtins.list[bytes]:
    return codec.compress_many(raws)


def _train(samples: builtins.list[bytes], size: int, level: int) -> tuple[ZstdCodec, float]:
    codec = ZstdCodec.train(samples, size, level)
    some = samples[:: max(1, len(samples) // 50)]  # logged only: 50 samples tell it
    total = sum(len(s) for s in some) or 1
    return codec, sum(len(c) for c in codec.compress_many(some)) / total
