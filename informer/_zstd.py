"""A zstd codec with a dictionary trained on one informer's own objects (``Compression``).

The binding is ``zstandard`` (the ``kube-informer[compression]`` extra), chosen by measuring the
three maintained ones on the realistic Pod set of ``benchmarks/_objects.py`` (a 112 KB
dictionary trained on 2,000 Pods, level 3, 10,000 other Pods of 8.1 KB): ``zstandard`` 9.3 us
to compress and 6.6-8.2 us to decompress a Pod, ``pyzstd`` 20.6 / 13.5-14.8 us and
``backports.zstd`` 21.6-23.3 / 13.4-17.5 us with digested dictionaries (the per-call
dictionary load of their plain functions costs 80-500 us); the ratio is the same (0.073-0.074).
``zstandard``'s reusable compressor and decompressor objects keep the dictionary loaded.

Frames are written without checksum and dictionary id (the codec that packed an object is
known: its form points to it), with the content size (``content_size`` reads it back: the
cache's JSON size without decompressing).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from informer.errors import ConfigurationError


def _module() -> Any:
    try:
        import zstandard
    except ImportError as exc:  # pragma: no cover - the extra is installed with [test]
        raise ConfigurationError(
            "compressed caches need the zstd binding: pip install 'kube-informer[compression]'"
        ) from exc
    return zstandard


def available() -> None:
    """Raise ``ConfigurationError`` unless the binding is installed."""
    _module()


_MULTI = 16


class ZstdCodec:
    """Compress and decompress with one trained dictionary (one per training).

    Safe from any thread: ``zstandard``'s compressor and decompressor objects are not (two
    threads decompressing with one at once corrupt its state), so each thread has its own pair,
    made on its first call (the loop's thread, the packer's worker thread, a reader's thread).
    """

    __slots__ = ("_data", "_local", "content_size", "dict_size", "level")

    def __init__(self, dictionary: bytes, level: int) -> None:
        zstd = _module()
        data = zstd.ZstdCompressionDict(dictionary) if dictionary else None
        if data is not None:  # digested now, not lazily by two threads at once
            data.precompute_compress(level=level)
        self._data = data
        self._local = threading.local()
        self.content_size = zstd.frame_content_size
        self.dict_size = len(dictionary)
        self.level = level

    def _contexts(self) -> Any:
        local = self._local
        zstd = _module()
        local.c = zstd.ZstdCompressor(
            level=self.level,
            dict_data=self._data,
            write_checksum=False,
            write_content_size=True,
            write_dict_id=False,
        )
        local.d = zstd.ZstdDecompressor(dict_data=self._data)
        local.decompress = local.d.decompress  # bound once: one lookup per read, not two
        return local

    def decompress(self, data: bytes) -> bytes:
        try:
            decompress = self._local.decompress
        except AttributeError:
            decompress = self._contexts().decompress
        out: bytes = decompress(data)
        return out

    def compress(self, data: bytes) -> bytes:
        try:
            c = self._local.c
        except AttributeError:
            c = self._contexts().c
        # ``zstandard`` allocates the frame's bound (about the input's size) and only sets the
        # bytes' length: the 650 bytes of a Pod's frame held an 8 KB allocation (20,000 Pods:
        # 163 MB for 13 MB of frames). A copy of the frame's length gives the rest back.
        return memoryview(c.compress(data)).tobytes()

    def compress_many(self, data: Sequence[bytes]) -> list[bytes]:
        """``compress`` of each; from ``_MULTI`` items on in one call that holds no GIL
        throughout (``multi_compress_to_buffer``: the worker thread compressing a batch takes
        the GIL once, not once per object from the event loop's thread, which applies a
        watch's events meanwhile; it loads the dictionary into a new context on every call,
        about 100 us, so fewer items are compressed one by one)."""
        try:
            c = self._local.c
        except AttributeError:
            c = self._contexts().c
        if len(data) >= _MULTI:
            try:
                frames = c.multi_compress_to_buffer(data)
            except (ValueError, TypeError, _module().ZstdError):  # pragma: no cover - an empty item
                pass
            else:
                return [frames[i].tobytes() for i in range(len(data))]
        compress = c.compress
        return [memoryview(compress(d)).tobytes() for d in data]

    @classmethod
    def train(cls, samples: Sequence[bytes], dict_size: int, level: int) -> ZstdCodec:
        """A codec whose dictionary is trained on ``samples`` (no dictionary when they are too
        few or too alike for zstd's trainer: plain zstd then)."""
        zstd = _module()
        total = sum(len(s) for s in samples)
        size = min(dict_size, max(total // 10, 1024))
        try:
            # segments of 2 KB, d=8: 1,000 realistic Pods train in 0.07 s for 0.0737x, against
            # 0.28 s for 0.0723x when zstd searches the parameters (k and d not given)
            trained = zstd.train_dictionary(size, list(samples), k=2048, d=8, level=level)
            dictionary = trained.as_bytes()
        except zstd.ZstdError:
            dictionary = b""
        return cls(dictionary, level)
