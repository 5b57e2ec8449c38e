"""The process-wide memo of recent full decodes (``set_decoded_cache_size``)."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from informer.objects._object import KubeObject

# The memo of full decodes: id(obj) -> (obj, dict), least recently used first. Holding obj keeps
# its id from being reused while the entry lives.
_memo: OrderedDict[int, tuple[KubeObject, dict[str, Any]]] = OrderedDict()
_memo_size = 256


def set_decoded_cache_size(size: int) -> int:
    """Keep at most ``size`` fully decoded objects (process-wide); returns the previous size.

    0 decodes on every access. Larger values trade memory (about 6.5x the JSON per Pod) for
    fewer decodes when a controller reads the same objects repeatedly.
    """
    global _memo_size
    if size < 0:
        raise ValueError("size must be >= 0")
    previous, _memo_size = _memo_size, size
    while len(_memo) > size:
        _memo.popitem(last=False)
    return previous


def remember(obj: KubeObject, decoded: dict[str, Any]) -> None:
    """Keep ``obj``'s full decode, dropping the least recently used beyond the memo's size."""
    if _memo_size:
        _memo[id(obj)] = (obj, decoded)
        if len(_memo) > _memo_size:
            _memo.popitem(last=False)
