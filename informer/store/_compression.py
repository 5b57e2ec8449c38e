"""Compressed objects (opt-in per informer): ``Compression`` and the store's packer.

A store built with ``Compression`` holds each object's JSON compressed by zstd with a dictionary
trained on the informer's own objects: Kubernetes objects of one resource repeat most of their
bytes (every Pod of a ReplicaSet), so a dictionary makes each a fraction of its JSON
(``benchmarks/RESULTS.md``). What the hot paths read stays outside the compressed bytes: the
key, namespace, name and resourceVersion (always), the uid and labels (decoded before packing).
Everything else decompresses on access, through the memo of recent full decodes
(``informer.objects``): ``obj["spec"]`` then ``obj["status"]`` decompress once.

When: cold, not on the sync path. Writes (a list's ``replace``, each event) only note the keys
they wrote; a task of the store's event loop then compresses them in batches in a worker thread
(zstd releases the GIL) and swaps each packed object in if the cache still holds the same
instance. A list reaches its handlers as fast as without compression (compressing an 8 KB Pod
costs about 9 us, half of what its whole sync costs: on the sync path a list would take ~1.5x as
long); a watch filling the cache pays for the packing beside it (0.65x D's events/s, measured on
a loaded machine). The price of cold packing is memory: the peak is the plain cache's, and the
objects replaced leave holes in the heap (``malloc_trim`` gives back the large ones): RSS
stays well above ``Store.size()`` (realistic Pods: 0.675x the JSON against 0.129x computed;
ConfigMaps, all small objects, above the plain cache: ``benchmarks/RESULTS.md``). Packing list
items straight from the page's bytes would avoid both; not done. A handler may hold the plain
instance of an object the cache holds packed (they are equal: same key, RV and JSON).

The dictionary is trained (in the worker thread) from up to ``train_objects`` objects of the
cache once it holds ``min_objects``; retrained from the objects held then when the objects
packed since compress ``retrain_ratio`` times worse than the first ones packed with it (a rollout
changed every image), and the entries packed with the old dictionary are re-encoded in the
background (each stays readable with the codec that packed it until then).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable
from dataclasses import dataclass

from informer._log import get_logger
from informer._malloc import trim as _trim
from informer._zstd import ZstdCodec, available
from informer.errors import ConfigurationError
from informer.objects import KubeObject

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
    """A cache holding fewer objects stays uncompressed: the dictionary is trained once it
    holds this many (a dictionary of the first 64 objects of a watch compressed the next ones
    badly and was retrained again and again as the cache grew)."""
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
    """The background compression of one store's objects (see the module docstring)."""

    def __init__(self, options: Compression, items: Callable[[], dict[str, KubeObject]]) -> None:
        self.options = options
        self._items = items  # the store's current contents (swapped by replace)
        self.codec: ZstdCodec | None = None
        self._pending: builtins.list[str] = []
        self._scan = False  # look at every key (after a replace or a retraining)
        self._task: asyncio.Task[None] | None = None
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
        # equal label sets share one dict (read-only: ``KubeObject.labels`` is a proxy)
        self._labels: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}

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
            return False
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
        freed = 0  # bytes of plain JSON replaced since the last trim
        try:
            while self._work_left():
                freed += await self._step()
        finally:
            if freed >= _TRIM_AFTER:
                await self._call(_trim)

    async def _step(self) -> int:
        """Train, or pack one batch; returns the bytes of plain JSON the batch replaced."""
        if self.codec is None:
            await self._train()
            return 0
        batch = self._take_batch(self.options.batch)
        if not batch:
            return 0
        codec = self.codec
        raws = [raw for _, _, raw, _ in batch]
        out = await self._call(_compress_all, codec, raws)
        packed: builtins.list[bytes] = out  # type: ignore[assignment]
        if codec is not self.codec:
            return 0  # retrained meanwhile: the keys were queued again by the scan
        items = self._items()
        shared = self._labels
        if len(shared) > 2 * len(items) + 1024:  # label sets of objects long gone
            shared.clear()
        size_in = size_out = 0
        for (key, obj, raw, _), data in zip(batch, packed, strict=True):
            if items.get(key) is obj:
                labels = obj._meta().labels
                if labels:
                    labels = shared.setdefault(tuple(labels.items()), labels)
                items[key] = obj._packed(data, codec, labels or None)
                self.packed += 1
                size_in += len(raw)
                size_out += len(data)
        self._window(size_in, size_out, len(batch))
        return size_in

    def _take_batch(self, n: int) -> builtins.list[tuple[str, KubeObject, bytes, bool]]:
        """Up to ``n`` objects the cache holds that the current codec has not packed."""
        items = self._items()
        if self._scan:
            self._scan = False
            self._pending = [*items]
        pending = self._pending
        current = self.codec
        out: builtins.list[tuple[str, KubeObject, bytes, bool]] = []
        seen: set[str] = set()
        while pending and len(out) < n:
            key = pending.pop()
            obj = items.get(key)
            if obj is None or key in seen:
                continue
            if current is not None and obj._packed_by(current):
                continue
            seen.add(key)
            raw, complete = obj._object_bytes()
            obj._meta()  # the uid and labels, while the bytes are plain
            out.append((key, obj, raw, complete))
        return out

    async def _train(self) -> None:
        items = self._items()
        objs = [*items.values()]
        step = max(1, len(objs) // self.options.train_objects)
        samples = [o._object_bytes()[0] for o in objs[::step][: self.options.train_objects]]
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
        self._scan = True  # every object: the new ones and those of an older dictionary
        _log.debug(
            "store.compression_trained",
            samples=len(samples),
            dictionary_bytes=codec.dict_size,
            ratio=round(ratio, 4),
        )

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
            self.codec = None  # the loop trains again from the objects held now

    def retrain(self) -> None:
        """Train a new dictionary at the next step (tests; ``_window`` decides it otherwise)."""
        self.codec = None
        self._scan = True
        if self._task is None:
            self._kick()


_TRIM_AFTER = 8 << 20


def _compress_all(codec: ZstdCodec, raws: builtins.list[bytes]) -> builtins.list[bytes]:
    compress = codec.compress
    return [compress(r) for r in raws]


def _train(samples: builtins.list[bytes], size: int, level: int) -> tuple[ZstdCodec, float]:
    codec = ZstdCodec.train(samples, size, level)
    total = sum(len(s) for s in samples) or 1
    return codec, sum(len(codec.compress(s)) for s in samples) / total  # logged only
