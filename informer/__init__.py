"""informer: asyncio Kubernetes informers with comparable resource versions (KEP-5504)."""

from informer.errors import (
    ApiError,
    MalformedWatchLine,
    ResourceExpired,
    StaleCacheError,
    TooLargeResourceVersion,
    TooManyRequests,
    TransportError,
    WatchIdleTimeout,
    WatchLineTooLong,
    WatchStreamError,
)
from informer.objects import KubeObject
from informer.resource import CONFIGMAPS, LEASES, NAMESPACES, PODS, SECRETS, Resource
from informer.resource_version import (
    InvalidResourceVersion,
    compare_resource_versions,
    is_comparable,
)

__all__ = [
    "CONFIGMAPS",
    "LEASES",
    "NAMESPACES",
    "PODS",
    "SECRETS",
    "ApiError",
    "InvalidResourceVersion",
    "KubeObject",
    "MalformedWatchLine",
    "Resource",
    "ResourceExpired",
    "StaleCacheError",
    "TooLargeResourceVersion",
    "TooManyRequests",
    "TransportError",
    "WatchIdleTimeout",
    "WatchLineTooLong",
    "WatchStreamError",
    "compare_resource_versions",
    "is_comparable",
]
