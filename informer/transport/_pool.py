"""The connection pool of one ApiClient, as our watches use it (shared by every Transport on it).

A watch holds its connection for minutes, so watches beyond a bounded pool's limit would wait,
silently, for another watch to end: ``_pool_of`` accounts for each ApiClient's pool and sends the
watches it cannot serve through an unbounded pool of their own.
"""

from __future__ import annotations

import copy
import weakref
from typing import Any

from informer._log import get_logger

log = get_logger("informer.transport")  # the package's logger, as named in users' logging config


class _Pool:
    """How our watches use one ApiClient's connection pool, shared by every Transport on it.

    Over HTTP/1.1 a watch holds its connection for minutes (client-go multiplexes watches over
    HTTP/2; aiohttp cannot). A bounded pool (kubernetes_asyncio's default: 100) would make the
    watches beyond its limit wait, silently, for one of the others to end. So watches take at
    most ``limit - reserve`` of its connections (the reserve serves lists and the application's
    own calls); the others go through ``beyond``: a client with the same configuration and an
    unbounded pool, created when first needed and closed with its last watch.
    """

    def __init__(self, api_client: Any, limit: int) -> None:
        self.api_client = api_client
        self.limit = limit
        self.watch_limit = limit - max(1, limit // 10) if limit else 0
        self.watches = 0  # our watches holding one of the pool's connections
        self.beyond: Any = None
        self.beyond_watches = 0

    async def acquire(self) -> tuple[Any, bool]:
        """The client for a new watch, and whether it is the one beyond the pool."""
        if not self.limit or self.watches < self.watch_limit:
            self.watches += 1
            return self.api_client, False
        if self.beyond is None:
            from kubernetes_asyncio.client import ApiClient

            cfg = copy.copy(self.api_client.configuration)
            cfg.connection_pool_maxsize = 0  # aiohttp: no limit
            beyond = ApiClient(cfg)
            beyond.default_headers = dict(self.api_client.default_headers)
            beyond.cookie = self.api_client.cookie
            self.beyond = beyond
            log.warning(
                "transport.watches_beyond_pool",
                pool_limit=self.limit,
                watches=self.watches,
                detail="each watch holds a connection: the pool of this ApiClient cannot serve "
                "more, so further watches use an unbounded pool of their own; set "
                "Configuration.connection_pool_maxsize = 0 or use informer.connect()",
            )
        self.beyond_watches += 1
        return self.beyond, True

    async def release(self, beyond: bool) -> None:
        if not beyond:
            self.watches -= 1
            return
        self.beyond_watches -= 1
        if self.beyond_watches == 0 and self.beyond is not None:
            client, self.beyond = self.beyond, None
            await client.close()


_pools: weakref.WeakKeyDictionary[Any, _Pool] = weakref.WeakKeyDictionary()


def _pool_of(api_client: Any) -> _Pool:
    """The shared accounting of ``api_client``'s pool (unbounded when it cannot be read)."""
    try:
        pool = _pools.get(api_client)
    except TypeError:  # not weak-referenceable: not an ApiClient we can account for
        return _Pool(api_client, 0)
    if pool is None:
        try:
            limit = int(api_client.rest_client.pool_manager.connector.limit or 0)
        except (AttributeError, TypeError, ValueError):
            limit = 0
        pool = _pools[api_client] = _Pool(api_client, limit)
    return pool
