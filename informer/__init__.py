"""informer: asyncio Kubernetes informers with comparable resource versions (KEP-5504).

Data flows one way: ``transport`` (raw LIST/WATCH) -> ``reflector`` (the list/watch state machine)
-> ``store`` (the cache, indexes, freshness) -> ``informer`` (handlers, shared factory) ->
``workqueue`` (keys to reconcile).
"""

from informer.backoff import BackoffPolicy
from informer.client import (
    Client,
    ClientStats,
    PatchType,
    RetryPolicy,
    WriteRecord,
    request_deadline,
)
from informer.connect import connect
from informer.controller import Controller, ControllerState, ControllerStats, Request, Result
from informer.discovery import DiscoveryError, UnknownResource, discover
from informer.errors import (
    AlreadyExists,
    ApiError,
    ConfigurationError,
    Conflict,
    Forbidden,
    Invalid,
    MalformedResponse,
    MalformedWatchLine,
    NotFound,
    ResourceExpired,
    ShardSelectorRejected,
    StaleCacheError,
    TooLargeResourceVersion,
    TooManyRequests,
    TransportError,
    WatchIdleTimeout,
    WatchLineTooLong,
    WatchStreamError,
)
from informer.informer import (
    DeliveryLatency,
    Handler,
    HandlerStats,
    Informer,
    InformerState,
    SharedInformerFactory,
)
from informer.leader_election import ElectionState, LeaderElectionStats, LeaderElector
from informer.manager import Manager, ManagerState
from informer.objects import KubeObject
from informer.ownership import (
    AlreadyOwned,
    has_finalizer,
    is_being_deleted,
    owner_reference,
    set_controller_reference,
)
from informer.pager import ResourceVersionMismatch
from informer.reflector import (
    Reflector,
    ReflectorOptions,
    ReflectorStats,
    ShardedReflector,
    ShardStats,
    StreamingState,
)
from informer.resource import CONFIGMAPS, LEASES, NAMESPACES, PODS, SECRETS, Resource
from informer.resource_version import (
    InvalidResourceVersion,
    compare_resource_versions,
    is_comparable,
)
from informer.shards import (
    HASH_SPACE,
    InvalidShardSelector,
    ShardField,
    ShardRange,
    ShardSelector,
    ShardSet,
    format_selector,
    parse_selector,
)
from informer.store import (
    CacheNotComparable,
    CacheWentBackwards,
    Delta,
    Freshness,
    Store,
    Tombstone,
)
from informer.transforms import DROP_MANAGED_FIELDS, DropFields
from informer.transport import ListPage, Transport, WatchEvent
from informer.workqueue import Priority, QueueShutDown, WorkQueue, WorkQueueStats

__all__ = [
    "CONFIGMAPS",
    "DROP_MANAGED_FIELDS",
    "HASH_SPACE",
    "LEASES",
    "NAMESPACES",
    "PODS",
    "SECRETS",
    "AlreadyExists",
    "AlreadyOwned",
    "ApiError",
    "BackoffPolicy",
    "CacheNotComparable",
    "CacheWentBackwards",
    "Client",
    "ClientStats",
    "ConfigurationError",
    "Conflict",
    "Controller",
    "ControllerState",
    "ControllerStats",
    "DeliveryLatency",
    "Delta",
    "DiscoveryError",
    "DropFields",
    "ElectionState",
    "Forbidden",
    "Freshness",
    "Handler",
    "HandlerStats",
    "Informer",
    "InformerState",
    "Invalid",
    "InvalidResourceVersion",
    "InvalidShardSelector",
    "KubeObject",
    "LeaderElectionStats",
    "LeaderElector",
    "ListPage",
    "MalformedResponse",
    "MalformedWatchLine",
    "Manager",
    "ManagerState",
    "NotFound",
    "PatchType",
    "Priority",
    "QueueShutDown",
    "Reflector",
    "ReflectorOptions",
    "ReflectorStats",
    "Request",
    "Resource",
    "ResourceExpired",
    "ResourceVersionMismatch",
    "Result",
    "RetryPolicy",
    "ShardField",
    "ShardRange",
    "ShardSelector",
    "ShardSelectorRejected",
    "ShardSet",
    "ShardStats",
    "ShardedReflector",
    "SharedInformerFactory",
    "StaleCacheError",
    "Store",
    "StreamingState",
    "Tombstone",
    "TooLargeResourceVersion",
    "TooManyRequests",
    "Transport",
    "TransportError",
    "UnknownResource",
    "WatchEvent",
    "WatchIdleTimeout",
    "WatchLineTooLong",
    "WatchStreamError",
    "WorkQueue",
    "WorkQueueStats",
    "WriteRecord",
    "compare_resource_versions",
    "connect",
    "discover",
    "format_selector",
    "has_finalizer",
    "is_being_deleted",
    "is_comparable",
    "owner_reference",
    "parse_selector",
    "request_deadline",
    "set_controller_reference",
]
