"""Raw LIST pages and WATCH streams for any resource, over aiohttp, with no state.

Auth, TLS and the server URL come from a ``kubernetes_asyncio`` ``ApiClient`` (kubeconfig,
in-cluster config, exec plugins, token refresh); requests go through its aiohttp session with
streaming bodies. Objects come back as ``KubeObject`` (raw JSON + decoded metadata). HTTP errors
and watch ``ERROR`` events become the typed errors of ``informer.errors``.

Its parts, each importing only the parts listed before it:

- ``_pool``: how our watches use each ApiClient's connection pool (``_pool_of``);
- ``_decode``: LIST bodies and watch lines decoded (``ListPage``, ``WatchEvent``);
- ``_watch_stream``: an open WATCH (``WatchStream``): reads, line splitting, events;
- ``_transport``: the requests (``Transport``: ``list_page``, ``watch``, ``get_json``).
"""

from informer.transport._decode import INITIAL_EVENTS_END, ListPage, WatchEvent
from informer.transport._transport import DEFAULT_MAX_LINE_BYTES, Transport
from informer.transport._watch_stream import WatchStream

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "INITIAL_EVENTS_END",
    "ListPage",
    "Transport",
    "WatchEvent",
    "WatchStream",
]
