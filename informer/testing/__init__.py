"""A faithful, fault-injecting Kubernetes list/watch API server on loopback, for tests.

It judges the client independently: it imports only ``informer.resource`` and
``informer.resource_version`` from this project. The wire contract is list-watch-semantics.md
(with the KEP texts beside it); bodies and messages are those of a real kube-apiserver.

Usage::

    async with ApiServer("modern", too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "default"}})
        async with aiohttp.ClientSession() as http:
            await http.get(server.url + "/api/v1/namespaces/default/configmaps?limit=5")

Public API:
  - ``ApiServer(personality="modern", *, host, port, compaction_window, history_max_age,
    too_large_wait, bookmark_interval, bookmark_before_timeout, stale_lag, watch_cache_quirks,
    shard_selectors)``;
    ``async with`` or ``await start()`` / ``await stop()``; ``url``, ``port``, ``configuration()``,
    ``api_client()``, ``write_kubeconfig(path)``, ``register(resource)``.
  - Direct, synchronous writes that notify watchers: ``create``, ``replace``, ``patch`` (JSON merge
    patch), ``delete`` (returns the object stamped with the deletion RV, where an HTTP DELETE
    answers, as the real registry does, a Status naming it, except for pods and namespaces; an
    object held by finalizers or a grace period is returned with its ``deletionTimestamp``;
    ``resource_version`` / ``uid`` preconditions, ``propagation_policy``,
    ``grace_period_seconds``), ``get`` (None when absent), ``list_objects``, ``bulk_load``,
    ``seed(manifests)`` (kind from apiVersion/kind; CRDs and namespaces first). They are setup:
    a missing namespace is created, ``status`` is stored as given. Failures raise
    ``StatusError`` subclasses (``NotFound``, ``AlreadyExists``, ``Conflict``, ``BadRequest``,
    ``Invalid``, ``Forbidden``) carrying the Status body the HTTP API would send.
  - History: ``revision``, ``compacted_revision``, ``compact(revision=None)``,
    ``restore(revision)``, ``format_resource_version(n)`` / ``parse_resource_version(rv)``.
  - Watches: ``send_bookmarks(resource=None, *, force=False) -> int``, ``watcher_count(resource)``,
    ``await wait_for_watchers(count, resource=None, timeout=10.0)``,
    ``await wait_for_watchers_closed(resource=None, timeout=10.0)``.
  - Recording: ``requests`` (``RecordedRequest``: method, path, query, verb, resource, namespace,
    name, status, page, fault), ``await wait_for_requests(predicate, count=1, timeout=10.0)``.
  - Faults: ``server.faults.add(Fault(...)) -> Fault``, ``server.faults.clear()``; see ``Fault``.
  - ``await eventually(condition, timeout=10.0, interval=0.01)``: poll a sync or async condition
    until it returns a true value (exceptions and false values are retried); ``AssertionError``
    with the last failure after ``timeout``.

Storage is etcd-like: one global revision (a fresh server is at 1, the first write gets 2); every
write bumps it, except a no-op update or patch (same RV, no event); objects get uid,
creationTimestamp and, where the real server keeps one (workloads, pods, custom resources; not
ConfigMaps, Secrets, ...), a generation bumped on spec changes. History is compacted by count
(``compaction_window``), age (``history_max_age``) or ``compact()``; an RV older than
``compacted_revision`` is gone (410), but a watch already running never loses events to a
compaction.

Lifecycle (``_lifecycle``): finalizers and graceful deletion, propagation
policies, a garbage collector by owner uid, namespaces ``default``, ``kube-system``,
``kube-public``, ``kube-node-lease`` at revision 1, 404 for an HTTP create into a missing
namespace, 403 into a Terminating one, namespace deletion that empties then removes it; each
namespace's ``default`` ServiceAccount, and with ``root_ca_configmaps=True`` (``informer serve``)
its ``kube-root-ca.crt`` ConfigMap kept by the root CA publisher. Subresources: ``/status``
where the real resource has it (status written only there). Discovery with short names,
categories and verbs (aggregated too), ``/openapi/v2|v3``, a complete ``/version``, ``Table``
answers for kubectl; CustomResourceDefinitions created over HTTP are served (``_catalog.crd``);
built-ins: see ``_catalog.specs.BUILTIN_SPECS``.

Custom resources follow their CRD's structural schema per served version (``_schemas``): 422
with the apiextensions server's causes and messages, pruning of unknown fields (400 under
``fieldValidation=Strict``, a ``Warning`` under ``Warn``, silent without the parameter),
``default:`` on create, update and read, ratcheting updates, list types, embedded resources, CEL
``x-kubernetes-validations`` (``cel-python``; a ``Warning`` names a rule it cannot evaluate);
``/status`` and ``/scale`` subresources; served versions share the storage version's collection
(``conversion: None``: ``apiVersion`` rewritten).

Writes over HTTP are those of a real apiserver (the Python API above stores what it is given,
like a write straight to etcd): ``dryRun=All`` answers without storing (no revision, no event),
other values 422; patches are JSON patch, merge patch, strategic merge patch (built-in types, with
their patch merge keys and ``$patch``/``$setElementOrder``/``$retainKeys``/
``$deleteFromPrimitiveList``; 415 for custom resources) and server-side apply
(``application/apply-patch+yaml``, YAML or JSON; ``fieldManager`` required; 409 on fields another
manager owns with another value unless ``force=true``); every write records ``managedFields``
(``fieldManager``, else the User-Agent's product); names, kind/apiVersion, required Pod and
workload fields, labels and data keys are validated; unknown fields (from the published schemas,
``_schemas.known_fields``) and fields named twice are refused with ``fieldValidation=Strict``
(400, or 422 for a patch), reported in ``Warning`` headers with ``Warn``, and dropped; server-side
apply of an undeclared field is a 500 whatever the directive, as in v1.36; bodies
are JSON, YAML, or protobuf for the types kubectl's typed ``create`` sends (others 415).
Answers carry keys in the order Go's encoders write them (``_schemas.key_order``): a built-in's
maps (labels, annotations, data, nodeSelector, resources.limits, a CRD schema's properties) with
sorted keys and its metadata in ObjectMeta's field order (other structs' fields as written: the
published schemas do not give Go's field order); a custom resource's keys all sorted, at every
level, list envelope included (unstructured).

LIST, per the resourceVersion x resourceVersionMatch x limit table: RV unset is a consistent read
at the current revision, paginated; Exact N (or RV=N with a limit and no match) is served from
history, 410 "The resourceVersion for the provided list is too old." when compacted, 500
"etcdserver: mvcc: required revision is a future revision" when in the future; NotOlderThan N
with a limit is served from "etcd" at the newest revision (future: 504 at once, no
retryAfterSeconds); NotOlderThan N without a limit and RV=0 are served by the "watch cache"
(future: wait ``too_large_wait``, then 504 Too large resource version with retryAfterSeconds 1
and Retry-After: 1; without the quirks, 504 at once). Continue tokens are Kubernetes tokens
(URL-safe base64 without padding of ``{"v":"meta.k8s.io/v1","rv":N,"start":"<key>\\u0000"}``,
keys relative to the namespace); every page keeps the first page's RV; ``remainingItemCount``
when no selector is set; an expired token answers 410 with an inconsistent token (rv -1, read at
the newest revision) in ``metadata.continue``. Invalid combinations answer 400/422 worded like the
personality's apiserver version.

WATCH: RV unset/"0": synthetic ADDEDs (in key order) then changes; RV=N: changes after N (a future
N simply waits, on every personality); compacted N: 200, one ERROR event (410 Expired, "too old
resource version: N (M)" from the watch cache with the quirks, else etcd's "The resourceVersion for
the provided watch is too old.") and a clean end. ``timeoutSeconds`` ends the stream cleanly. With
``allowWatchBookmarks``, BOOKMARKs (``{"kind","apiVersion","metadata":{"resourceVersion"}}``,
with ``"creationTimestamp":null`` as well on the v1.21-like personalities, at the RV the watch has
caught up to)
every ``bookmark_interval`` and ``bookmark_before_timeout`` before the end (none after that one,
none at all when ``timeoutSeconds`` is shorter than that margin). Label-selector transitions arrive
as DELETED/ADDED. ``sendInitialEvents=true&resourceVersionMatch=NotOlderThan``: initial ADDEDs,
then a BOOKMARK annotated ``k8s.io/initial-events-end: "true"`` at the state's RV (only with
``allowWatchBookmarks=true``, as the real cacher), then changes; an RV the view does not reach
within ``too_large_wait`` gives a 200 stream with one ERROR event (504 Too large).

Personalities:
  - ``modern``: all of the above, current validation (sendInitialEvents forbidden on lists, ...).
  - ``legacy`` (pre-1.19): ignores resourceVersionMatch and sendInitialEvents entirely.
  - ``no-watch-list`` (v1.21 as observed): resourceVersionMatch on lists; a watch carrying it is
    422 "resourceVersionMatch is forbidden for watch"; sendInitialEvents ignored (no end bookmark).
  - ``stale-replica``: RV="0"/Any lists, NotOlderThan lists without limit, GETs with an RV and
    watches with an RV are served from a view ``stale_lag`` revisions behind; an RV newer than that
    view waits ``too_large_wait`` then answers 504 Too large; a watch from such an RV is
    established and waits for the view; consistent reads (RV unset) and Exact reads are fresh.
  - ``opaque-rv``: RVs are ``"x"`` + lowercase hex of the revision (not decimal, not ordered as
    strings); they are accepted back in requests.
  - ``restored``: as modern; ``restore(revision)`` rolls state and counter back (any personality
    may call it, this one documents the intent).
  ``watch_cache_quirks`` (default on for modern and no-watch-list): RV=0 ignores ``limit``;
  cache-served lists (RV=0, NotOlderThan without limit) come in hash order, not sorted; bookmarks
  only once the watch saw an event of its resource newer than its start RV.

Sharded LIST and WATCH (KEP-5866, ``_query.sharding``), ``shard_selectors`` (``ShardSelectorMode``):
``"on"`` (default for the personalities that stream lists: a v1.36 server with the
``ShardedListAndWatch`` gate) filters LISTs, every continue page (by the selector that page
carries), WATCHes and streaming lists by ``shardSelector``, answers every filtered LIST with
``metadata.shardInfo.selector`` in the server's spelling and a ``remainingItemCount`` of the
unfiltered collection, and refuses a malformed selector with a bare 500 (``invalid shard
selector: ...``); ``"off"`` (default for legacy and no-watch-list) ignores the parameter;
``"no-watch-cache"`` filters LISTs but not WATCHes with no label or field selector (and turns the
watch cache's quirks off unless ``watch_cache_quirks`` is given).
"""

from informer.testing._eventually import eventually
from informer.testing._options import ShardSelectorMode
from informer.testing._status import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Invalid,
    NotFound,
    StatusError,
)
from informer.testing.faults import Fault, FaultSet, RecordedRequest
from informer.testing.server import BUILTINS, PERSONALITIES, ApiServer, Personality

__all__ = [
    "BUILTINS",
    "PERSONALITIES",
    "AlreadyExists",
    "ApiServer",
    "BadRequest",
    "Conflict",
    "Fault",
    "FaultSet",
    "Invalid",
    "NotFound",
    "Personality",
    "RecordedRequest",
    "ShardSelectorMode",
    "StatusError",
    "eventually",
]
