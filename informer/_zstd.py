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


class ZstdCodec:
    """Compress and decompress with one trained dictionary (one per training)."""

    __slots__ = ("_c", "_d", "content_size", "decompress", "dict_size", "level")

    def __init__(self, dictionary: bytes, level: int) -> None:
        zstd = _module()
        data = zstd.ZstdCompressionDict(dictionary) if dictionary else None
        self._c = zstd.ZstdCompressor(
            level=level,
            dict_data=data,
            write_checksum=False,
            write_content_size=True,
            write_dict_id=False,
        )
        self._d = zstd.ZstdDecompressor(dict_data=data)
        self.decompress = self._d.decompress
        self.content_size = zstd.frame_content_size
        self.dict_size = len(dictionary)
        self.level = level

    def compress(self, data: bytes) -> bytes:
        out: bytes = self._c.compress(data)
        return out

    @classmethod
    def train(cls, samples: Sequence[bytes], dict_size: int, level: int) -> ZstdCodec:
        """A codec whose dictionary is trained on ``samples`` (no dictionary when they are too
        few or too alike for zstd's trainer: plain zstd then)."""
        zstd = _module()
        total = sum(len(s) for s in samples)
        size = min(dict_size, max(total // 10, 1024))
        try:
            trained = zstd.train_dictionary(size, list(samples), level=level)
            dictionary = trained.as_bytes()
        except zstd.ZstdError:
            dictionary = b""
        return cls(dictionary, level)
