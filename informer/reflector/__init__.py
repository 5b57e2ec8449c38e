"""The reflector: keeps a ``Store`` in step with the server by LIST and WATCH.

It owns "the last RV seen" and decides relist vs re-watch:

- first sync: a consistent paginated list (or "any", or a streaming list); every relist asks
  ``resourceVersion=<last>&resourceVersionMatch=NotOlderThan`` and verifies the answer is not older;
- 410 on a continuation restarts the list at the first page's RV, then falls back to a
  consistent read; 410 on a first NotOlderThan page (an old server applying Exact) falls back to
  a consistent read;
- a watch resumes from the last RV after a clean end or a broken connection; 410 relists; 429
  waits Retry-After and re-watches; other errors back off and relist;
- stale and duplicate events are dropped by the store (KEP-5504 comparisons), and a server whose
  RVs go backwards (an etcd restore) is detected and relisted with a consistent read.

Deltas go to one callback, synchronously, right after the store changed.

One phase per module, each importing only those before it: ``_options`` (``ReflectorOptions``),
``_stats`` (``StreamingState``, ``ReflectorStats``, the counters), ``_core`` (the state the phases
share and the steps that put what they read in the store), ``_paged_list``, ``_streaming_list``
and ``_watch`` (the phases), ``_reflector`` (``Reflector``: the loop that runs them),
``_sharded`` (``ShardedReflector``: one reflector per set of shard ranges, behind one store).
"""

from informer.reflector._options import ReflectorOptions
from informer.reflector._reflector import Reflector
from informer.reflector._sharded import ShardedReflector, ShardStats
from informer.reflector._stats import ReflectorStats, StreamingState

__all__ = [
    "Reflector",
    "ReflectorOptions",
    "ReflectorStats",
    "ShardStats",
    "ShardedReflector",
    "StreamingState",
]
