"""Giving freed heap memory back to the system: glibc's ``malloc_trim`` (elsewhere nothing).

glibc returns only the top of its heap on its own; memory freed below live allocations stays in
the process. A first list frees a page body (hundreds of KB) per page between the cache's own
allocations, and a compressed cache frees each object's plain JSON: without a trim the process
keeps them (100,000 ConfigMaps: 46 B per object, 10% of their JSON; ``benchmarks/object_bytes.py``).
Compression frees more (20,000 realistic Pods: 112 MB of RSS over the base plain, 208 MB after
packing them, 51 MB after the trim; the cache computes 20 MB). A trim walks the free chunks
only: 0.3 ms after a list of 100,000 ConfigMaps.
"""

from __future__ import annotations

from typing import Any

_malloc_trim: Any = None


def trim() -> None:
    """Give the heap's free pages back to the system (glibc; a no-op elsewhere)."""
    global _malloc_trim
    if _malloc_trim is None:
        import ctypes  # here: importing informer does not load it

        try:
            _malloc_trim = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):  # not glibc: nothing to call
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)
