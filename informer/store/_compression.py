"""Compressed objects (opt-in per informer): ``Compression`` and the store's packer.

A store built with ``Compression`` holds each object's JSON compressed by zstd with a dictionary
trained on the informer's own objects: Kubernetes objects of one resource repeat most of their
bytes (every Pod of a ReplicaSet), so a dictionary makes each a fraction of its JSON
(``benchmarks/RESULTS.md``). What the hot paths read stays outside the compressed bytes: the
key, namespace, name and resourceVersion (always), the uid and labels (decoded before packing;
equal label sets share one dict). Everything else decompresses on access, through the memo of
recent full decodes (``informer.objects``): ``obj["spec"]`` then ``obj["status"]`` decompress
once.

When: as objects arrive, before they reach the cache (``_Packer.__call__``, the reflector's
``PagePacking``). A list's page is decoded into objects that keep their slice of the page (no
copy of their bytes) with uid and labels decoded in the same pass; the page is compressed (in a
worker thread for a page of large objects: zstd releases the GIL, and the next page, requested
before, arrives meanwhile) and each object packed; then the page goes. A plain copy of the list
is never held: the peak is a page. The dictionary is trained on the first ``min_objects``
objects of the first list (those gathered until then are held plain for that long, then packed
with the rest); a streaming list's initial events and a watch's events are packed the same way
before they are applied. A relist keeps the cached instance of every unchanged object (same key
and RV), packed already.

What stays cold, packed later by a background task: objects that arrived before a dictionary
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
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from informer._log import get_logger
from informer._malloc import trim as _trim
from informer._zstd import ZstdCodec, available
from informer.errors import ConfigurationError
from informer.objects import KubeObject, _Form

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
    bring objects in (``__call__``, the ``PagePacking`` of lists and watch events), and a
    background task for the cold ones (``note``, ``note_all``)."""

    def __init__(self, options: Compression, items: Callable[[], dict[str, KubeObject]]) -> None:
        self.options = options
        self._items = items  # the store's current contents (swapped by replace)
        self.codec: ZstdCodec | None = None
        self._pending: builtins.list[str] = []
        self._scan = False  # look at every key (after a replace or a training)
        self._task: asyncio.Task[None] | None = None
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
        self.codecs: builtins.list[ZstdCodec] = []
        self._freed = 0  # bytes of plain JSON packed since the last trim
        # equal label sets share one dict (read-only: ``KubeObject.labels`` is a proxy)
        self.labels: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}

    # -- the paths that bring objects in (``PagePacking``) ----------------------------------
    async def __call__(
        self, objs: builtins.list[KubeObject], gathered: Collection[KubeObject] = ()
    ) -> None:
        """Pack ``objs`` in place (those the current codec has not packed): a list's page as
        it arrives, a streaming list's or a watch's events before they are applied.

        ``gathered``: the objects of the same list so far (not in the cache yet; may include
        ``objs``: a streaming list's initial objects). The
        dictionary is trained here once ``objs``, ``gathered`` and the cache hold
        ``min_objects`` (the objects gathered plain until then are packed with them). No item
        keeps its slice of the page: those not packed get their own bytes.
        """
        try:
            if self.codec is None:
                items = self._items()
                if len(objs) + len(gathered) + len(items) < self.options.min_objects:
                    return
                if gathered:
                    for o in gathered:
                        o._settle()
                    objs = [*gathered, *objs]
                await self._train([*items.values(), *objs])  # the cache's and these
                if self.codec is None:
                    return
            await self._pack(objs)
        finally:
            for o in objs:
                o._settle()

    # -- what the store calls --------------------------------------------------------------
    def note(self, key: str) -> None:
        self._pending.append(key)
        if self._task is None:
            self._kick()

    def note_all(self) -> None:
        self._scan = True
        self._pending.clear()
        if self._task is None:
            self._kick()

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
            return await asyncio.to_thread(fn, *args)
        await asyncio.sleep(0)  # one batch per step: the loop's other work goes in between
        return fn(*args)

    async def _run(self) -> None:
        try:
            while self._pending or self._scan:
                if not self._work_left():
                    break
                await self._step()
        finally:
            if self._freed >= _TRIM_AFTER:
                self._freed = 0
                await self._call(_trim)

    async def _step(self) -> None:
        """Train, or pack one batch of the cold objects."""
        if self.codec is None:
            await self._train([*self._items().values()])
            return
        await self._pack(self._take_batch(self.options.batch))

    def _take_batch(self, n: int) -> builtins.list[KubeObject]:
        """Up to ``n`` objects the cache holds that the current codec has not packed."""
        items = self._items()
        if self._scan:
            self._scan = False
            self._pending = [*items]
        pending = self._pending
        current = self.codec
        out: builtins.list[KubeObject] = []
        while pending and len(out) < n:
            obj = items.get(pending.pop())
            if obj is None or (current is not None and obj._packed_by(current)):
                continue
            out.append(obj)
        return out

    async def _pack(self, objs: Sequence[KubeObject]) -> None:
        """Compress those of ``objs`` the current codec has not packed (in a worker thread
        when they are many: zstd releases the GIL) and pack each in place."""
        codec = self.codec
        assert codec is not None
        todo: builtins.list[tuple[KubeObject, _Form]] = []
        raws: builtins.list[bytes] = []
        size_in = 0
        for obj in objs:
            form = obj._form
            if obj._packed_by(codec):
                continue
            raw, _ = obj._object_bytes()
            obj._meta()  # the uid and labels, while the bytes are plain
            todo.append((obj, form))
            raws.append(raw)
            size_in += len(raw)
        if not todo:
            return
        if self.options.in_thread and size_in >= _THREAD_BYTES:
            out = await asyncio.to_thread(_compress_all, codec, raws)
        else:
            out = _compress_all(codec, raws)
        if codec is not self.codec:
            return  # retrained meanwhile: the scan after the training packs them
        shared = self.labels
        if len(shared) > 2 * len(self._items()) + 1024:  # label sets of objects long gone
            shared.clear()
        size_in = size_out = n = 0
        for (obj, form), raw, data in zip(todo, raws, out, strict=True):
            if obj._form is not form:
                continue  # packed meanwhile (another path, a newer codec)
            lazy = obj._meta()
            labels = lazy.labels
            if labels:
                same = shared.setdefault(tuple(labels.items()), labels)
                if same is not labels:
                    lazy = type(lazy)(lazy.uid, same, lazy.deletion_timestamp)  # type: ignore[arg-type]
            obj._pack_in_place(data, codec, lazy)
            size_in += len(raw)
            size_out += len(data)
            n += 1
        self.packed += n
        self._freed += size_in
        self._window(size_in, size_out, n)

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
the next page arrives meanwhile); fewer on the loop (a watch's batch: the handoff to a thread
and back costs more than it overlaps)."""

_TRIM_AFTER = 8 << 20


def _compress_all(codec: ZstdCodec, raws: builtins.list[bytes]) -> builtins.list[bytes]:
    return codec.compress_many(raws)


def _train(samples: builtins.list[bytes], size: int, level: int) -> tuple[ZstdCodec, float]:
    codec = ZstdCodec.train(samples, size, level)
    total = sum(len(s) for s in samples) or 1
    return codec, sum(len(codec.compress(s)) for s in samples) / total  # logged only
