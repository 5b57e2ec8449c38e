"""What a caller is told about the cache's freshness: the :class:`Freshness` report, and the errors
of a question the cache cannot answer honestly (:class:`CacheNotComparable`,
:class:`CacheWentBackwards`).

The rules these follow are in the ``informer.store`` docstring ("Freshness: what a caller can rely
on").
"""

from __future__ import annotations

from dataclasses import dataclass

from informer.errors import StaleCacheError
from informer.resource_version import InvalidResourceVersion


class CacheNotComparable(InvalidResourceVersion):
    """The store's resource versions are not comparable, so it cannot tell whether an RV is reached.

    Raised by the freshness API (``is_fresh``, ``wait_for_resource_version``) when the server's RVs
    are opaque (not KEP-5504) and the wanted RV is not exactly the cache RV. A subclass of
    ``InvalidResourceVersion``: one ``except InvalidResourceVersion`` covers "cannot judge this RV".
    """

    def __init__(self, cache_rv: str, wanted_rv: str) -> None:
        super().__init__(
            wanted_rv,
            f"the cache's resource versions are not comparable (server is not KEP-5504 "
            f"conformant; cache RV {cache_rv!r}): only the cache RV itself can be confirmed",
        )
        self.cache_rv = cache_rv
        self.wanted_rv = wanted_rv


class CacheWentBackwards(StaleCacheError):
    """The cache was relisted at an older resource version than a pending wait wanted.

    The server's RVs went back (an etcd restore): the wanted RV belongs to a history the server no
    longer has, and its number will be reused by other writes, so the wait cannot be satisfied
    honestly. Raised into every freshness wait pending above the new cache RV (a subclass of
    ``StaleCacheError``: a caller falls back to a live read, as after a timeout).
    """

    def __init__(self, cache_rv: str, wanted_rv: str) -> None:
        super().__init__(cache_rv, wanted_rv, None)
        self.args = (
            f"the server's resource versions went back (etcd restore?): the cache was relisted "
            f"at {cache_rv!r}, below the wanted {wanted_rv!r}, which may now name another write",
        )


@dataclass(frozen=True, slots=True)
class Freshness:
    """What the cache has caught up to.

    ``seconds_since_progress`` is the time (monotonic clock) since the last applied list, event or
    bookmark, None before the first list. A bookmark that does not move the RV still counts: it
    shows that the stream is alive and nothing newer is pending.
    """

    resource_version: str
    comparable: bool
    seconds_since_progress: float | None
