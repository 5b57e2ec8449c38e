"""``ApiServer``: a Kubernetes list/watch API server on loopback, faithful to the wire.

See the package docstring of ``informer.testing`` for the behaviour of each personality.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import gc
import math
import posixpath
import uuid
import zlib
from bisect import bisect_left
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

import msgspec
from aiohttp import web

from informer.resource import CONFIGMAPS, LEASES, NAMESPACES, PODS, SECRETS, Resource
from informer.testing import _status as st
from informer.testing._selectors import Selector, parse_field_selector, parse_label_selector
from informer.testing._status import StatusError
from informer.testing._store import Change, Kind, Store, StoredObject
from informer.testing.faults import Fault, FaultSet, RecordedRequest

__all__ = ["PERSONALITIES", "ApiServer", "Personality"]

Json = dict[str, Any]
Personality = Literal["modern", "legacy", "no-watch-list", "stale-replica", "opaque-rv", "restored"]
PERSONALITIES: Final[tuple[str, ...]] = (
    "modern",
    "legacy",
    "no-watch-list",
    "stale-replica",
    "opaque-rv",
    "restored",
)
BUILTINS: Final[tuple[Resource, ...]] = (NAMESPACES, CONFIGMAPS, SECRETS, PODS, LEASES)

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}
_PRETTY_AGENTS = ("curl", "Wget", "Mozilla")
_CONTINUE_VERSION = "meta.k8s.io/v1"
_B64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_MALFORMED_LINE = b'{"type":"MODIFIED","object":{"kind": this is not json\n'
_MERGE_PATCH_TYPES = ("application/merge-patch+json", "application/strategic-merge-patch+json")
_RETURN_DELETED_OBJECT: Final[frozenset[str]] = frozenset({"pods", "namespaces"})
"""Resources whose registry returns the deleted object over HTTP; the others answer a Status."""

_SHORT_NAMES: Final[dict[tuple[str, str], list[str]]] = {
    ("", "configmaps"): ["cm"],
    ("", "namespaces"): ["ns"],
    ("", "pods"): ["po"],
}
"""Discovery's ``shortNames`` of the built-ins, as a real kube-apiserver lists them."""

_VERBS_BY_METHOD = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class _StreamEnd(Exception):
    """A fault (or the server) asks to end the watch stream cleanly."""


class _StreamCut(Exception):
    """The connection was dropped in the middle of a line."""


class _Watch:
    """An open watch stream: where it is in the change log and what it selects."""

    __slots__ = (
        "allow_bookmarks",
        "bookmark_now",
        "cursor",
        "epoch",
        "force_bookmark",
        "lagged",
        "prefix",
        "resource",
        "saw_newer",
        "selector",
        "start",
    )

    def __init__(
        self,
        resource: Resource,
        prefix: str,
        selector: Selector,
        start: int,
        lagged: bool,
        allow_bookmarks: bool,
        epoch: int,
    ) -> None:
        self.resource = resource
        self.prefix = prefix
        self.selector = selector
        self.start = start
        self.cursor = start
        self.lagged = lagged
        self.allow_bookmarks = allow_bookmarks
        self.epoch = epoch
        self.saw_newer = False
        self.bookmark_now = False
        self.force_bookmark = False


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_bool(q: dict[str, str], name: str) -> bool | None:
    value = q.get(name)
    if value is None:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise st.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def _parse_int(q: dict[str, str], name: str) -> int:
    value = q.get(name)
    if not value:
        return 0
    try:
        return int(value)
    except ValueError:
        raise st.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Any, operations: list[Any]) -> Any:
    """A minimal RFC 6902 JSON patch: add, remove, replace, test."""
    doc = _decode(_encode(target))
    for op in operations:
        if not isinstance(op, dict) or "path" not in op:
            raise st.bad_request("invalid JSON patch operation")
        parts = [p.replace("~1", "/").replace("~0", "~") for p in str(op["path"]).split("/")[1:]]
        parent: Any = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        last = parts[-1] if parts else ""
        kind = op.get("op")
        try:
            if kind in ("add", "replace"):
                if isinstance(parent, list):
                    index = len(parent) if last == "-" else int(last)
                    if kind == "add":
                        parent.insert(index, op.get("value"))
                    else:
                        parent[index] = op.get("value")
                else:
                    parent[last] = op.get("value")
            elif kind == "remove":
                del parent[int(last) if isinstance(parent, list) else last]
            elif kind == "test":
                got = parent[int(last)] if isinstance(parent, list) else parent.get(last)
                if got != op.get("value"):
                    raise st.StatusError(
                        st.status(
                            422,
                            "Invalid",
                            "the server rejected our request due to an error in our request",
                        )
                    )
            else:
                raise st.bad_request(f"Unexpected kind: {kind}")
        except (KeyError, IndexError, ValueError, TypeError):
            raise st.bad_request(
                f"jsonpatch {kind} operation does not apply: doc is missing path: {op['path']}"
            ) from None
    return doc


class ApiServer:
    """A fault-injecting Kubernetes API server for tests; see ``informer.testing``."""

    def __init__(
        self,
        personality: Personality | str = "modern",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        compaction_window: int | None = None,
        history_max_age: float | None = None,
        too_large_wait: float = 3.0,
        bookmark_interval: float = 60.0,
        bookmark_before_timeout: float = 2.0,
        stale_lag: int = 5,
        watch_cache_quirks: bool | None = None,
    ) -> None:
        if personality not in PERSONALITIES:
            raise ValueError(f"unknown personality {personality!r}; one of {PERSONALITIES}")
        self.personality: str = personality
        self.host = host
        self._port = port
        self.compaction_window = compaction_window
        self.history_max_age = history_max_age
        self.too_large_wait = too_large_wait
        self.bookmark_interval = bookmark_interval
        self.bookmark_before_timeout = bookmark_before_timeout
        self.stale_lag = stale_lag if personality == "stale-replica" else 0
        self.watch_cache_quirks = (
            personality in ("modern", "no-watch-list")
            if watch_cache_quirks is None
            else watch_cache_quirks
        )
        self._legacy = personality == "legacy"
        self._watch_list = personality not in ("legacy", "no-watch-list")
        self._opaque = personality == "opaque-rv"
        self.store = Store(self._format_rv)
        self.faults = FaultSet()
        self.requests: list[RecordedRequest] = []
        self._resources: dict[tuple[str, str, str], Kind] = {}
        for resource in BUILTINS:
            self.register(resource, _list_items_typed=False)
        self._watchers: set[_Watch] = set()
        self._changed = asyncio.Event()  # data, bookmarks, restore, stop: wakes watch streams
        self._activity = asyncio.Event()  # requests and watch streams come and go
        self._epoch = 0
        self._stopping = False
        self._stop_event: asyncio.Event | None = None
        self._token_pages: dict[str, int] = {}
        self._generate_counter = 0
        self._runner: web.AppRunner | None = None
        self._url: str | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> ApiServer:
        """Serve on ``host``:``port`` (0 = an ephemeral port); ``url`` is valid afterwards."""
        self._stopping = False
        self._stop_event = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self._port)
        await site.start()
        address = self._runner.addresses[0]
        self._port = int(address[1])
        self._url = f"http://{self.host}:{self._port}"
        return self

    async def stop(self) -> None:
        """Close every open watch and stop serving."""
        self._stopping = True
        if self._stop_event is not None:
            self._stop_event.set()
        self._notify()
        self._notify_activity()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ApiServer:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` once started."""
        if self._url is None:
            raise RuntimeError("ApiServer is not started")
        return self._url

    @property
    def port(self) -> int:
        self.url  # noqa: B018 - raises when not started
        return self._port

    def configuration(self) -> Any:
        """A ``kubernetes_asyncio.client.Configuration`` pointing at this server."""
        from kubernetes_asyncio import client

        return client.Configuration(host=self.url)

    def api_client(self) -> Any:
        """A ``kubernetes_asyncio.client.ApiClient`` for this server (the caller closes it)."""
        from kubernetes_asyncio import client

        return client.ApiClient(configuration=self.configuration())

    def write_kubeconfig(self, path: str | Path) -> Path:
        """Write a kubeconfig (JSON, valid YAML) whose current context is this server."""
        path = Path(path)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "informer-test", "cluster": {"server": self.url}}],
            "users": [{"name": "informer-test", "user": {"token": "informer-test"}}],
            "contexts": [
                {
                    "name": "informer-test",
                    "context": {
                        "cluster": "informer-test",
                        "user": "informer-test",
                        "namespace": "default",
                    },
                }
            ],
            "current-context": "informer-test",
        }
        path.write_bytes(msgspec.json.format(_encode(config), indent=2))
        return path

    # -- resources ----------------------------------------------------------------------------

    def register(self, resource: Resource, *, _list_items_typed: bool = True) -> None:
        """Serve ``resource`` (a custom resource: list items keep kind and apiVersion)."""
        key = (resource.group, resource.version, resource.plural)
        if key in self._resources:
            return
        self.store.register(resource, strip_items=not _list_items_typed)
        self._resources[key] = self.store.kinds[resource]

    def _kind(self, resource: Resource) -> Kind:
        kind = self.store.kinds.get(resource)
        if kind is None:
            raise KeyError(f"resource {resource.group_resource} is not registered")
        return kind

    # -- revisions ----------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        """The current global revision (like etcd's)."""
        return self.store.revision

    def _format_rv(self, revision: int) -> str:
        return f"x{revision:x}" if self._opaque else str(revision)

    def format_resource_version(self, revision: int) -> str:
        """The wire form of ``revision`` (decimal, or opaque in the ``opaque-rv`` personality)."""
        return self._format_rv(revision)

    def parse_resource_version(self, rv: str) -> int:
        """The revision of wire resource version ``rv``; raises a 400 ``BadRequest``."""
        if self._opaque:
            if rv.startswith("x"):
                with contextlib.suppress(ValueError):
                    return int(rv[1:], 16)
            raise st.bad_request(
                f'invalid resource version: resourceVersion: Invalid value: "{rv}": '
                "not a resource version of this server"
            )
        if rv.isascii() and rv.isdigit():
            return int(rv)
        raise st.bad_request(
            f'invalid resource version: resourceVersion: Invalid value: "{rv}": '
            f'strconv.ParseUint: parsing "{rv}": invalid syntax'
        )

    def compact(self, revision: int | None = None) -> None:
        """Drop history before ``revision`` (None: everything before now); older RVs get 410."""
        self.store.compact(self.store.revision if revision is None else revision)
        self._trim(force=True)

    @property
    def compacted_revision(self) -> int:
        """The oldest revision still readable (Exact lists) and watchable."""
        self._auto_compact()
        return self.store.compacted

    def restore(self, revision: int) -> None:
        """Simulate an etcd restore to ``revision``: state and counter go back, watches close.

        The history window restarts at ``revision`` (like an apiserver restarted on the restored
        etcd), so older RVs get 410 and newer ones are in the future until writes reach them.
        """
        if not self.store.compacted <= revision <= self.store.revision:
            raise ValueError(
                f"cannot restore to {revision}: "
                f"available {self.store.compacted}..{self.store.revision}"
            )
        self.store.restore(revision)
        self._epoch += 1
        self._notify()

    def _auto_compact(self) -> None:
        store = self.store
        if self.compaction_window is not None:
            store.compact(store.revision - self.compaction_window)
        if self.history_max_age is not None:
            store.compact_older_than(self.history_max_age)

    def _trim(self, force: bool = False) -> None:
        store = self.store
        if not force and store.compacted - store.log_base < 1024:
            return
        keep = min((w.cursor for w in self._watchers), default=store.compacted)
        store.trim(keep)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _notify_activity(self) -> None:
        self._activity.set()
        self._activity = asyncio.Event()

    def _after_write(self) -> None:
        self._auto_compact()
        self._trim()
        self._notify()

    def _visible(self, lagged: bool) -> int:
        """The newest revision a read may see: current, or the stale replica's lagging view."""
        store = self.store
        if lagged and self.stale_lag:
            return max(store.revision - self.stale_lag, store.compacted)
        return store.revision

    # -- direct Python API --------------------------------------------------------------------

    @staticmethod
    def _key(resource: Resource, namespace: str | None, name: str) -> str:
        return f"{namespace}/{name}" if resource.namespaced else name

    def _namespace_of(self, resource: Resource, namespace: str | None) -> str | None:
        if not resource.namespaced:
            return None
        return namespace or "default"

    def _build(
        self,
        kind: Kind,
        obj: Json,
        name: str,
        namespace: str | None,
        previous: StoredObject | None,
    ) -> Json:
        """The stored form of ``obj``: kind, apiVersion, server-owned metadata, then the rest."""
        resource = kind.resource
        given = obj.get("metadata") or {}
        meta: Json = {"name": name}
        if given.get("generateName"):
            meta["generateName"] = given["generateName"]
        if namespace is not None:
            meta["namespace"] = namespace
        old_meta = previous.data["metadata"] if previous is not None else {}
        meta["uid"] = old_meta.get("uid") or str(uuid.uuid4())
        meta["resourceVersion"] = ""
        rest = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion", "metadata")}
        generation = 1
        if previous is not None:
            generation = int(old_meta.get("generation", 1))
            old_rest = {
                k: v
                for k, v in previous.data.items()
                if k not in ("kind", "apiVersion", "metadata", "status")
            }
            new_rest = {k: v for k, v in rest.items() if k != "status"}
            if old_rest != new_rest:
                generation += 1
        meta["generation"] = generation
        meta["creationTimestamp"] = old_meta.get("creationTimestamp") or _now()
        for key, value in given.items():
            if key not in meta and key not in (
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "selfLink",
            ):
                meta[key] = value
        data: Json = {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": meta}
        data.update(rest)
        return data

    def create(self, resource: Resource, obj: Json) -> Json:
        """Create ``obj`` (namespace from its metadata, "default" if unset); 409 if it exists."""
        return self._create(resource, obj, None)

    def _create(self, resource: Resource, obj: Json, url_namespace: str | None) -> Json:
        kind = self._kind(resource)
        obj = _decode(_encode(obj))
        if not isinstance(obj, dict):
            raise st.bad_request("the object must be a JSON object")
        meta = obj.get("metadata") or {}
        namespace = self._namespace_of(resource, url_namespace or meta.get("namespace"))
        if url_namespace and meta.get("namespace") and meta["namespace"] != url_namespace:
            raise st.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        name = meta.get("name") or ""
        if not name and meta.get("generateName"):
            self._generate_counter += 1
            name = f"{meta['generateName']}{self._generate_counter:05x}"
        if not name:
            raise st.invalid_object(
                resource,
                resource.kind,
                "",
                [st.required("metadata.name", "name or generateName is required")],
            )
        key = self._key(resource, namespace, name)
        if key in self.store.objects[resource]:
            raise st.already_exists(resource, name)
        change = self.store.commit(resource, key, self._build(kind, obj, name, namespace, None))
        self._after_write()
        assert change.obj is not None
        return dict(_decode(change.obj.typed))

    def replace(self, resource: Resource, obj: Json) -> Json:
        """Update ``obj``; 409 Conflict when its ``metadata.resourceVersion`` is set and stale."""
        meta = obj.get("metadata") or {}
        return self._update(resource, obj, meta.get("name") or "", meta.get("namespace"))

    def _update(
        self,
        resource: Resource,
        obj: Json,
        name: str,
        namespace: str | None,
        precondition_rv: str | None = None,
    ) -> Json:
        kind = self._kind(resource)
        obj = _decode(_encode(obj))
        namespace = self._namespace_of(resource, namespace)
        key = self._key(resource, namespace, name)
        current = self.store.objects[resource].get(key)
        if current is None:
            raise st.not_found(resource, name)
        wanted = precondition_rv or (obj.get("metadata") or {}).get("resourceVersion")
        if wanted:
            self._check_rv_precondition(resource, name, wanted, current)
        data = self._build(kind, obj, name, namespace, current)
        data["metadata"]["resourceVersion"] = current.data["metadata"]["resourceVersion"]
        if data == current.data:
            # a no-op write is not written to etcd (GuaranteedUpdate short-circuits): same RV,
            # no new revision, no watch event
            return dict(_decode(current.typed))
        change = self.store.commit(resource, key, data)
        self._after_write()
        assert change.obj is not None
        return dict(_decode(change.obj.typed))

    def _check_rv_precondition(
        self, resource: Resource, name: str, wanted: str, current: StoredObject
    ) -> None:
        if wanted != current.data["metadata"]["resourceVersion"]:
            if not self._opaque and not (wanted.isascii() and wanted.isdigit()):
                raise st.bad_request(
                    f'metadata.resourceVersion: Invalid value: "{wanted}": '
                    f'strconv.ParseUint: parsing "{wanted}": invalid syntax'
                )
            raise st.conflict(resource, name)

    def patch(
        self, resource: Resource, name: str, patch: Json, namespace: str | None = None
    ) -> Json:
        """Apply a JSON merge patch; a ``metadata.resourceVersion`` in it is a precondition."""
        return self._patch(
            resource,
            name,
            namespace,
            lambda current: merge_patch(current, patch),
            (patch.get("metadata") or {}).get("resourceVersion")
            if isinstance(patch, dict)
            else None,
        )

    def _patch(
        self,
        resource: Resource,
        name: str,
        namespace: str | None,
        apply: Callable[[Json], Any],
        precondition_rv: str | None,
    ) -> Json:
        self._kind(resource)
        namespace = self._namespace_of(resource, namespace)
        current = self.store.objects[resource].get(self._key(resource, namespace, name))
        if current is None:
            raise st.not_found(resource, name)
        if precondition_rv:
            self._check_rv_precondition(resource, name, precondition_rv, current)
        patched = apply(_decode(current.typed))
        if not isinstance(patched, dict):
            raise st.bad_request("the patch must produce a JSON object")
        meta = patched.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        meta.pop("resourceVersion", None)
        return self._update(resource, patched, name, namespace)

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        uid: str | None = None,
    ) -> Json:
        """Delete and return the object as last stored (stamped with the deletion revision)."""
        self._kind(resource)
        namespace = self._namespace_of(resource, namespace)
        key = self._key(resource, namespace, name)
        current = self.store.objects[resource].get(key)
        if current is None:
            raise st.not_found(resource, name)
        meta = current.data["metadata"]
        if uid and uid != meta.get("uid"):
            raise st.conflict(
                resource,
                name,
                f"Precondition failed: UID in precondition: {uid}, "
                f"UID in object meta: {meta.get('uid')}",
            )
        if resource_version and resource_version != meta.get("resourceVersion"):
            raise st.conflict(
                resource,
                name,
                f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
            )
        change = self.store.commit(resource, key, None)
        self._after_write()
        return dict(_decode(change.deleted_object().typed))

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Json | None:
        """The current object, or None."""
        namespace = self._namespace_of(resource, namespace)
        found = self.store.objects[self._kind(resource).resource].get(
            self._key(resource, namespace, name)
        )
        return dict(_decode(found.typed)) if found is not None else None

    def list_objects(self, resource: Resource, namespace: str | None = None) -> list[Json]:
        """Current objects of ``resource`` (in one namespace if given), in key order."""
        live = self.store.objects[self._kind(resource).resource]
        prefix = f"{namespace}/" if namespace and resource.namespaced else ""
        return [
            dict(_decode(live[k].typed))
            for k in self.store.sorted_keys(resource, live)
            if k.startswith(prefix)
        ]

    def bulk_load(self, resource: Resource, objs: Iterable[Json]) -> None:
        """Create many objects fast (one revision each); watchers get them as ADDED events.

        Millions of new dicts would make the cyclic GC run over and over (most of the time in a
        large process), so the collector is paused during the load and its previous state
        restored afterwards. The server takes ownership of the objects passed in (nothing is
        deep-copied, the stored form shares their nested values): do not mutate them afterwards.
        """
        self._kind(resource)
        live = self.store.objects[resource]
        now = _now()
        kind_name, api_version = resource.kind, resource.api_version
        seen: set[str] = set()
        server_owned = ("uid", "resourceVersion", "generation", "creationTimestamp")

        def build() -> Iterable[tuple[str, Json]]:
            for obj in objs:
                given = obj.get("metadata") or {}
                name = given.get("name")
                if not name:
                    raise st.invalid_object(
                        resource,
                        kind_name,
                        "",
                        [st.required("metadata.name", "name or generateName is required")],
                    )
                namespace = self._namespace_of(resource, given.get("namespace"))
                key = self._key(resource, namespace, name)
                if key in live or key in seen:
                    raise st.already_exists(resource, name)
                seen.add(key)
                meta: Json = {"name": name}
                if namespace is not None:
                    meta["namespace"] = namespace
                meta["uid"] = str(uuid.uuid4())
                meta["resourceVersion"] = ""
                meta["generation"] = 1
                meta["creationTimestamp"] = now
                for k, v in given.items():
                    if k not in meta and k not in server_owned:
                        meta[k] = v
                data: Json = {"kind": kind_name, "apiVersion": api_version, "metadata": meta}
                for k, v in obj.items():
                    if k not in ("kind", "apiVersion", "metadata"):
                        data[k] = v
                yield key, data

        collecting = gc.isenabled()
        gc.disable()
        try:
            self.store.bulk_add(resource, build())
        finally:
            if collecting:
                gc.enable()
        self._after_write()

    # -- watchers -----------------------------------------------------------------------------

    def watcher_count(self, resource: Resource | str | None = None) -> int:
        """Watch streams open now (headers sent), for ``resource`` (or plural) if given."""
        return sum(1 for w in self._watchers if self._watch_matches(w, resource))

    @staticmethod
    def _watch_matches(w: _Watch, resource: Resource | str | None) -> bool:
        if resource is None:
            return True
        if isinstance(resource, str):
            return w.resource.plural == resource
        return w.resource == resource

    def send_bookmarks(self, resource: Resource | None = None, *, force: bool = False) -> int:
        """Send a BOOKMARK now on every eligible watch; returns how many watches were asked.

        Eligible: ``allowWatchBookmarks=true``, the watch has reached its start RV and, with the
        watch-cache quirks on, an event newer than its start RV was seen (``force`` skips that).
        """
        count = 0
        for w in self._watchers:
            if not w.allow_bookmarks or not self._watch_matches(w, resource):
                continue
            w.bookmark_now = True
            w.force_bookmark = w.force_bookmark or force
            count += 1
        self._notify()
        return count

    async def wait_for_watchers(
        self, count: int, resource: Resource | str | None = None, timeout: float = 10.0
    ) -> None:
        """Until at least ``count`` watch streams are open (headers sent)."""

        async def check() -> bool:
            return self.watcher_count(resource) >= count

        await self._wait_until(
            check, timeout, lambda: f"{self.watcher_count(resource)} watches open, wanted {count}"
        )

    async def wait_for_watchers_closed(
        self, resource: Resource | str | None = None, timeout: float = 10.0
    ) -> None:
        """Until no watch stream (of ``resource`` if given) is open any more."""

        async def check() -> bool:
            return self.watcher_count(resource) == 0

        await self._wait_until(
            check, timeout, lambda: f"{self.watcher_count(resource)} watches still open"
        )

    async def wait_for_requests(
        self,
        predicate: Callable[[RecordedRequest], bool],
        count: int = 1,
        timeout: float = 10.0,
    ) -> list[RecordedRequest]:
        """Until ``count`` recorded requests (past ones included) match; returns the matches."""
        found: list[RecordedRequest] = []

        async def check() -> bool:
            found[:] = [r for r in self.requests if predicate(r)]
            return len(found) >= count

        await self._wait_until(
            check, timeout, lambda: f"{len(found)} matching requests, wanted {count}"
        )
        return found

    async def _wait_until(
        self, check: Callable[[], Any], timeout: float, describe: Callable[[], str]
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not await check():
            changed = self._activity
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(describe())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await changed.wait()

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake up when the server stops."""
        if self._stop_event is None:
            await asyncio.sleep(seconds)
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._stop_event.wait()

    async def _await_revision(self, revision: int, lagged: bool) -> bool:
        """Wait up to ``too_large_wait`` for the (possibly lagging) view to reach ``revision``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.too_large_wait
        while self._visible(lagged) < revision:
            remaining = deadline - loop.time()
            if remaining <= 0 or self._stopping:
                return False
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await changed.wait()
        return True

    # -- HTTP ---------------------------------------------------------------------------------

    def _respond(
        self,
        request: web.Request,
        body: bytes,
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> web.Response:
        agent = request.headers.get("User-Agent", "")
        if agent.startswith(_PRETTY_AGENTS):
            body = msgspec.json.format(body, indent=2) + b"\n"
        return web.Response(
            body=body, status=status, headers=headers, content_type="application/json"
        )

    def _error(self, request: web.Request, error: StatusError) -> web.Response:
        return self._respond(request, _encode(error.status), error.code, error.headers)

    def _route(self, request: web.Request) -> tuple[str, Kind | None, str | None, str | None, bool]:
        """(verb, kind, namespace, name, watch-path) for a resource path; kind None otherwise."""
        parts = [p for p in request.path.split("/") if p]
        method = request.method.upper()
        if len(parts) >= 3 and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif len(parts) >= 4 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return method.lower(), None, None, None, False
        watch_path = bool(rest) and rest[0] == "watch"
        if watch_path:
            rest = rest[1:]
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            candidate = self._resources.get((group, version, rest[2]))
            if candidate is not None and candidate.resource.namespaced:
                namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 2:
            return method.lower(), None, None, None, False
        kind = self._resources.get((group, version, rest[0]))
        if kind is None:
            return method.lower(), None, None, None, False
        name = rest[1] if len(rest) == 2 else None
        query = request.query
        if method == "GET":
            if watch_path or query.get("watch") in _TRUE:
                verb = "watch"
            else:
                verb = "get" if name is not None else "list"
        else:
            verb = _VERBS_BY_METHOD.get(method, method.lower())
        return verb, kind, namespace, name, watch_path

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        verb, kind, namespace, name, watch_path = self._route(request)
        query = {k: v for k, v in request.query.items()}
        page = None
        if verb == "list":
            token = query.get("continue", "")
            page = self._token_pages.get(token, 2) if token else 1
        record = RecordedRequest(
            method=request.method.upper(),
            path=request.path,
            query=query,
            verb=verb,
            resource=kind.resource.plural if kind is not None else "",
            namespace=namespace,
            name=name,
            page=page,
        )
        self.requests.append(record)
        fault = self.faults.select(record)
        record.fault = fault
        self._notify_activity()
        try:
            if fault is not None and fault.latency:
                await self._sleep(fault.latency)
            if fault is not None and (
                fault.status or fault.text_body is not None or fault.status_body is not None
            ):
                response: web.StreamResponse = self._fault_response(request, record, fault)
            elif kind is None:
                response = self._non_resource(request)
            else:
                response = await self._dispatch(
                    request, record, verb, kind, namespace, name, watch_path, query, fault
                )
        except StatusError as error:
            response = self._error(request, error)
        if not record.status:
            record.status = response.status
            self._notify_activity()
        return response

    def _fault_response(
        self, request: web.Request, record: RecordedRequest, fault: Fault
    ) -> web.Response:
        code = fault.status or 500
        headers: dict[str, str] = {}
        if fault.retry_after is not None:
            headers["Retry-After"] = str(fault.retry_after)
        if fault.text_body is not None:
            return web.Response(
                text=fault.text_body, status=code, headers=headers, content_type="text/plain"
            )
        if fault.status_body is not None:
            return self._respond(request, _encode(fault.status_body), code, headers)
        if code == 410 and record.verb == "watch":
            error = st.expired(st.WATCH_TOO_OLD)
        else:
            error = st.generic(code, fault.message, fault.retry_after)
        if fault.reason is not None:
            error.status["reason"] = fault.reason
        if fault.message is not None and code != 500:
            error.status["message"] = fault.message
        return self._respond(request, _encode(error.status), code, {**error.headers, **headers})

    def _non_resource(self, request: web.Request) -> web.Response:
        parts = [p for p in request.path.split("/") if p]
        if request.method.upper() != "GET":
            raise st.method_not_allowed()
        if parts in (["healthz"], ["livez"], ["readyz"]):
            return web.Response(text="ok", content_type="text/plain")
        if parts == ["version"]:
            return self._respond(
                request,
                _encode(
                    {
                        "major": "1",
                        "minor": "21" if self.personality == "no-watch-list" else "35",
                        "gitVersion": "v1.21.0"
                        if self.personality == "no-watch-list"
                        else "v1.35.0",
                        "platform": "informer/testing",
                    }
                ),
            )
        if parts == ["api"]:
            return self._respond(
                request,
                _encode(
                    {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
                ),
            )
        groups: dict[str, list[str]] = {}
        for group, version, _ in self._resources:
            if group and version not in groups.setdefault(group, []):
                groups[group].append(version)
        if parts == ["apis"]:
            return self._respond(
                request,
                _encode(
                    {
                        "kind": "APIGroupList",
                        "apiVersion": "v1",
                        "groups": [
                            {
                                "name": g,
                                "versions": [
                                    {"groupVersion": f"{g}/{v}", "version": v} for v in vs
                                ],
                                "preferredVersion": {
                                    "groupVersion": f"{g}/{vs[0]}",
                                    "version": vs[0],
                                },
                            }
                            for g, vs in groups.items()
                        ],
                    }
                ),
            )
        if (len(parts) == 2 and parts[0] == "api") or (len(parts) == 3 and parts[0] == "apis"):
            group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
            resources = [
                k.resource
                for (g, v, _), k in self._resources.items()
                if g == group and v == version
            ]
            if resources:
                return self._respond(
                    request,
                    _encode(
                        {
                            "kind": "APIResourceList",
                            "apiVersion": "v1",
                            "groupVersion": f"{group}/{version}" if group else version,
                            "resources": [
                                {
                                    "name": r.plural,
                                    "singularName": r.kind.lower(),
                                    **(
                                        {"shortNames": _SHORT_NAMES[(group, r.plural)]}
                                        if (group, r.plural) in _SHORT_NAMES
                                        else {}
                                    ),
                                    "namespaced": r.namespaced,
                                    "kind": r.kind,
                                    "verbs": [
                                        "create",
                                        "delete",
                                        "get",
                                        "list",
                                        "patch",
                                        "update",
                                        "watch",
                                    ],
                                }
                                for r in resources
                            ],
                        }
                    ),
                )
        raise st.no_such_path()

    async def _body(self, request: web.Request) -> Any:
        raw = await request.read()
        try:
            return _decode(raw) if raw else None
        except msgspec.DecodeError as error:
            raise st.bad_request(f"the request body is not valid JSON: {error}") from None

    async def _dispatch(
        self,
        request: web.Request,
        record: RecordedRequest,
        verb: str,
        kind: Kind,
        namespace: str | None,
        name: str | None,
        watch_path: bool,
        query: dict[str, str],
        fault: Fault | None,
    ) -> web.StreamResponse:
        resource = kind.resource
        if verb == "watch":
            return await self._watch(request, record, kind, namespace, name, query, fault)
        if verb == "list":
            return self._respond(request, await self._list(kind, namespace, query, fault))
        if resource.namespaced and namespace is None and verb != "create":
            raise st.no_such_path()
        if verb == "get":
            assert name is not None
            return self._respond(request, await self._get(kind, namespace, name, query))
        if verb == "create":
            if name is not None:
                raise st.method_not_allowed()
            if resource.namespaced and namespace is None:
                raise st.no_such_path()
            body = await self._body(request)
            if not isinstance(body, dict):
                raise st.bad_request("the request body must be a JSON object")
            return self._respond(request, _encode(self._create(resource, body, namespace)), 201)
        if name is None:
            raise st.method_not_allowed()
        if verb == "update":
            body = await self._body(request)
            if not isinstance(body, dict):
                raise st.bad_request("the request body must be a JSON object")
            meta = body.get("metadata") or {}
            if meta.get("name") and meta["name"] != name:
                raise st.bad_request("the name of the object does not match the name on the URL")
            return self._respond(request, _encode(self._update(resource, body, name, namespace)))
        if verb == "patch":
            body = await self._body(request)
            ctype = request.content_type
            if ctype == "application/json-patch+json":
                if not isinstance(body, list):
                    raise st.bad_request("a JSON patch must be a list of operations")
                ops = body
                result = self._patch(
                    resource, name, namespace, lambda cur: json_patch(cur, ops), None
                )
            elif ctype in _MERGE_PATCH_TYPES:
                if not isinstance(body, dict):
                    raise st.bad_request("a merge patch must be a JSON object")
                result = self.patch(resource, name, body, namespace)
            else:
                raise st.unsupported_media_type()
            return self._respond(request, _encode(result))
        if verb == "delete":
            body = await self._body(request)
            pre = body.get("preconditions") if isinstance(body, dict) else None
            pre = pre if isinstance(pre, dict) else {}
            result = self.delete(
                resource,
                name,
                namespace,
                resource_version=pre.get("resourceVersion"),
                uid=pre.get("uid"),
            )
            if resource.plural not in _RETURN_DELETED_OBJECT:
                # the generic registry answers a Status naming the object (finalizeDelete)
                details: Json = {"name": name}
                if resource.group:
                    details["group"] = resource.group
                details["kind"] = resource.plural
                details["uid"] = result["metadata"].get("uid", "")
                result = {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                }
            return self._respond(request, _encode(result))
        raise st.method_not_allowed()

    # -- validation ---------------------------------------------------------------------------

    def _validate(self, watch: bool, rv: str, rvm: str, cont: str, sie: bool | None) -> None:
        """ListOptions validation as the personality's apiserver version does it (422)."""
        if self._legacy:
            return
        errs: list[tuple[str, str, str]] = []
        if not self._watch_list:  # v1.21
            if rvm:
                if watch:
                    errs.append(
                        st.forbidden(
                            "resourceVersionMatch", "resourceVersionMatch is forbidden for watch"
                        )
                    )
                errs.extend(self._list_rvm_errors(rv, rvm, cont))
        elif watch:
            if sie is not None and rvm != "NotOlderThan":
                errs.append(
                    st.forbidden(
                        "resourceVersionMatch",
                        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                    )
                )
            if rvm:
                if sie is None:
                    errs.append(
                        st.forbidden(
                            "resourceVersionMatch",
                            "resourceVersionMatch is forbidden for watch unless "
                            "sendInitialEvents is provided",
                        )
                    )
                if rvm != "NotOlderThan":
                    errs.append(st.not_supported("resourceVersionMatch", rvm, ["NotOlderThan"]))
                if cont:
                    errs.append(
                        st.forbidden(
                            "resourceVersionMatch",
                            "resourceVersionMatch is forbidden when continue is provided",
                        )
                    )
        else:
            if rvm:
                errs.extend(self._list_rvm_errors(rv, rvm, cont))
            if sie is not None:
                errs.append(
                    st.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")
                )
        if errs:
            raise st.invalid_list_options(errs)

    @staticmethod
    def _list_rvm_errors(rv: str, rvm: str, cont: str) -> list[tuple[str, str, str]]:
        errs: list[tuple[str, str, str]] = []
        if not rv:
            errs.append(
                st.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if cont:
            errs.append(
                st.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
        if rvm not in ("Exact", "NotOlderThan"):
            errs.append(
                st.not_supported("resourceVersionMatch", rvm, ["Exact", "NotOlderThan", ""])
            )
        if rvm == "Exact" and rv == "0":
            errs.append(
                st.forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
        return errs

    def _selector(self, query: dict[str, str], name: str | None = None) -> Selector:
        labels = parse_label_selector(query.get("labelSelector", ""))
        fields, _ = parse_field_selector(query.get("fieldSelector", ""))
        selector = labels & fields
        if name is not None:
            selector = selector & Selector(
                [lambda o: (o.get("metadata") or {}).get("name") == name]
            )
        return selector

    # -- LIST ---------------------------------------------------------------------------------

    def _encode_token(self, revision: int, start: str) -> str:
        raw = _encode({"v": _CONTINUE_VERSION, "rv": revision, "start": start})
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    @staticmethod
    def _decode_token(token: str) -> tuple[int, str]:
        """(rv, start key) of a continue token; raises 400 like ``storage.DecodeContinue``."""

        def invalid(why: str) -> StatusError:
            return st.bad_request(f"invalid continue token: continue key is not valid: {why}")

        body = token.rstrip("=")
        for index, char in enumerate(body):
            if char not in _B64URL:
                raise invalid(f"illegal base64 data at input byte {index}")
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError):
            raise invalid(f"illegal base64 data at input byte {len(body) - 1}") from None
        try:
            data = _decode(raw)
        except msgspec.DecodeError as error:
            raise invalid(str(error)) from None
        if not isinstance(data, dict):
            raise invalid("json: cannot unmarshal into Go value of type storage.continueToken")
        if data.get("v") != _CONTINUE_VERSION:
            raise invalid(f'server does not recognize this encoded version "{data.get("v", "")}"')
        rv = data.get("rv")
        if not isinstance(rv, int) or isinstance(rv, bool) or rv == 0:
            raise invalid(f"incorrect encoded start resourceVersion (version {_CONTINUE_VERSION})")
        start = data.get("start")
        if not isinstance(start, str) or not start:
            raise invalid(f"encoded start key empty (version {_CONTINUE_VERSION})")
        key = start if start.startswith("/") else "/" + start
        cleaned = posixpath.normpath(key)
        if cleaned != key and not (key.endswith("/") and cleaned + "/" == key):
            raise invalid(start)
        return rv, start

    def _list_body(
        self,
        kind: Kind,
        revision: int,
        items: list[bytes],
        token: str | None = None,
        remaining: int | None = None,
    ) -> bytes:
        meta: Json = {"resourceVersion": self._format_rv(revision)}
        if token:
            meta["continue"] = token
        if remaining is not None:
            meta["remainingItemCount"] = remaining
        head = _encode(
            {"kind": kind.list_kind, "apiVersion": kind.resource.api_version, "metadata": meta}
        )
        return head[:-1] + b',"items":[' + b",".join(items) + b"]}"

    def _page(
        self,
        kind: Kind,
        namespace: str | None,
        selector: Selector,
        revision: int,
        limit: int,
        start: str = "",
        page: int = 1,
    ) -> bytes:
        """A page at ``revision`` in key order from ``start`` (a relative key), ``limit`` items."""
        resource = kind.resource
        state = self.store.state_at(resource, revision)
        keys = self.store.sorted_keys(resource, state)
        prefix = f"{namespace}/" if namespace and resource.namespaced else ""
        lo, hi = Store.key_range(keys, prefix)
        if start:
            lo = bisect_left(keys, prefix + start, lo, hi)
        if selector.empty and limit <= 0:
            return self._list_body(kind, revision, [state[k].item for k in keys[lo:hi]])
        items: list[bytes] = []
        last = ""
        index = lo
        while index < hi:
            key = keys[index]
            index += 1
            obj = state[key]
            if selector.empty or selector.matches(obj.data):
                items.append(obj.item)
                last = key
                if 0 < limit <= len(items):
                    break
        token = remaining = None
        if 0 < limit <= len(items) and index < hi:
            token = self._encode_token(revision, last[len(prefix) :] + "\x00")
            if len(self._token_pages) >= 10_000:  # only for Fault(page=...); keep it bounded
                self._token_pages.clear()
            self._token_pages[token] = page + 1
            if selector.empty:
                remaining = hi - index
        return self._list_body(kind, revision, items, token, remaining)

    def _cache_list(
        self, kind: Kind, namespace: str | None, selector: Selector, revision: int, limit: int
    ) -> bytes:
        """A list as a watch cache serves it: with the quirks, the limit is ignored and the items
        come in hash order (not sorted); without them, like etcd."""
        if not self.watch_cache_quirks:
            return self._page(kind, namespace, selector, revision, limit)
        resource = kind.resource
        state = self.store.state_at(resource, revision)
        prefix = f"{namespace}/" if namespace and resource.namespaced else ""
        keys = [k for k in state if k.startswith(prefix)]
        keys.sort(key=lambda k: zlib.crc32(k.encode()))
        items = [state[k].item for k in keys if selector.empty or selector.matches(state[k].data)]
        return self._list_body(kind, revision, items)

    async def _list(
        self, kind: Kind, namespace: str | None, query: dict[str, str], fault: Fault | None
    ) -> bytes:
        rv = query.get("resourceVersion", "")
        rvm = query.get("resourceVersionMatch", "")
        cont = query.get("continue", "")
        limit = _parse_int(query, "limit")
        sie = None if not self._watch_list else _parse_bool(query, "sendInitialEvents")
        selector = self._selector(query)
        self._validate(False, rv, rvm, cont, sie)
        if self._legacy:
            rvm = ""
        self._auto_compact()
        store = self.store
        if fault is not None and fault.list_lag is not None:
            revision = max(store.revision - fault.list_lag, store.compacted)
            start = self._decode_token(cont)[1] if cont else ""
            return self._page(kind, namespace, selector, revision, limit, start)
        wanted = self.parse_resource_version(rv) if rv not in ("", "0") else 0
        if cont:
            return self._list_continue(kind, namespace, selector, rv, cont, limit)
        if rv == "":
            return self._page(kind, namespace, selector, store.revision, limit)
        if rvm == "Exact" or (rvm == "" and rv != "0" and limit > 0):
            if wanted < store.compacted:
                raise st.expired(st.LIST_TOO_OLD)
            if wanted > store.revision:
                raise st.future_revision()
            return self._page(kind, namespace, selector, wanted, limit)
        lagged = True
        if rv == "0":
            return self._cache_list(kind, namespace, selector, self._visible(lagged), limit)
        if rvm == "NotOlderThan" and limit > 0:  # served from etcd at the newest revision
            if wanted > store.revision:
                raise st.too_large(rv, self._format_rv(store.revision), 0)
            return self._page(kind, namespace, selector, store.revision, limit)
        # NotOlderThan without a limit: the watch cache (or etcd when the quirks are off)
        revision = await self._not_older_than(rv, wanted, lagged)
        return self._cache_list(kind, namespace, selector, revision, 0)

    async def _not_older_than(self, rv: str, wanted: int, lagged: bool) -> int:
        """The view to serve a "not older than ``wanted``" read from, or 504 Too large."""
        cache = self.watch_cache_quirks or (lagged and self.stale_lag > 0)
        if self._visible(lagged) < wanted:
            if not cache:
                raise st.too_large(rv, self._format_rv(self.store.revision), 0)
            if not await self._await_revision(wanted, lagged):
                raise st.too_large(rv, self._format_rv(self._visible(lagged)), 1)
        return self._visible(lagged)

    def _list_continue(
        self, kind: Kind, namespace: str | None, selector: Selector, rv: str, cont: str, limit: int
    ) -> bytes:
        revision, start = self._decode_token(cont)
        if rv not in ("", "0"):
            raise st.bad_request("specifying resource version is not allowed when using continue")
        store = self.store
        if revision < 0:
            revision = store.revision
        elif revision < store.compacted:
            raise st.expired(st.CONTINUE_EXPIRED, self._encode_token(-1, start))
        elif revision > store.revision:
            raise st.future_revision()
        page = self._token_pages.get(cont, 2)
        return self._page(kind, namespace, selector, revision, limit, start, page)

    # -- GET ----------------------------------------------------------------------------------

    async def _get(
        self, kind: Kind, namespace: str | None, name: str, query: dict[str, str]
    ) -> bytes:
        resource = kind.resource
        rv = query.get("resourceVersion", "")
        key = self._key(resource, namespace, name)
        self._auto_compact()
        if rv == "":
            revision = self.store.revision
        elif rv == "0":
            revision = self._visible(True)
        else:
            revision = await self._not_older_than(rv, self.parse_resource_version(rv), True)
        found = self.store.object_at(resource, key, revision)
        if found is None:
            raise st.not_found(resource, name)
        return found.typed

    # -- WATCH --------------------------------------------------------------------------------

    @staticmethod
    def _bookmark(kind: Kind, rv: str, initial_end: bool = False) -> bytes:
        meta: Json = {"resourceVersion": rv, "creationTimestamp": None}
        if initial_end:
            meta["annotations"] = {_INITIAL_EVENTS_END: "true"}
        obj = {
            "kind": kind.resource.kind,
            "apiVersion": kind.resource.api_version,
            "metadata": meta,
        }
        return _encode({"type": "BOOKMARK", "object": obj}) + b"\n"

    async def _watch(
        self,
        request: web.Request,
        record: RecordedRequest,
        kind: Kind,
        namespace: str | None,
        name: str | None,
        query: dict[str, str],
        fault: Fault | None,
    ) -> web.StreamResponse:
        resource = kind.resource
        rv = query.get("resourceVersion", "")
        rvm = query.get("resourceVersionMatch", "")
        cont = query.get("continue", "")
        sie = _parse_bool(query, "sendInitialEvents") if self._watch_list else None
        allow_bookmarks = bool(_parse_bool(query, "allowWatchBookmarks"))
        timeout = _parse_int(query, "timeoutSeconds")
        selector = self._selector(query, name)
        self._validate(True, rv, rvm, cont, sie)
        self._auto_compact()
        store = self.store
        lagged = rv != ""  # consistent reads (RV unset) are always fresh
        wanted = self.parse_resource_version(rv) if rv not in ("", "0") else 0
        initial = end_bookmark = False
        error: Json | None = None  # sent as the only event of a 200 stream, like a real watch
        if sie:
            # the end bookmark only with allowWatchBookmarks (cacher: isListWatchRequest)
            initial, end_bookmark = True, allow_bookmarks
            if wanted and not await self._reached(wanted, lagged):
                # waitUntilFreshLocked fails inside the watch: an ERROR event, not an HTTP 504
                error = st.too_large(rv, self._format_rv(self._visible(lagged)), 1).status
            start = self._visible(lagged)
        elif sie is False and rv == "":
            start = store.revision
        elif rv in ("", "0"):
            initial = sie is None
            start = self._visible(lagged)
        else:
            start = wanted
            if wanted < store.compacted:
                error = self._watch_expired(wanted).status
            # an N beyond the (possibly lagging) view: the watch is established and simply waits
            # for changes after N (a real watch never answers "Too large resource version")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout if timeout > 0 else math.inf
        response = web.StreamResponse(status=200)
        response.content_type = "application/json"
        response.enable_chunked_encoding()
        await response.prepare(request)
        record.status = 200
        watch = _Watch(
            resource,
            f"{namespace}/" if namespace and resource.namespaced else "",
            selector,
            start,
            lagged,
            allow_bookmarks,
            self._epoch,
        )
        writer = _Writer(
            self, request, response, fault if fault is not None and fault.affects_stream else None
        )
        self._watchers.add(watch)
        self._notify_activity()
        try:
            await writer.begin()
            if error is not None:
                await writer.write(_encode({"type": "ERROR", "object": error}) + b"\n")
                return response
            if initial:
                state = store.state_at(resource, start)
                lines = [state[k].added_line() for k in self._initial_keys(watch, state)]
                trailer = None
                if end_bookmark:
                    trailer = self._bookmark(kind, self._format_rv(start), True)
                await writer.send(lines, trailer)
            await self._stream(kind, watch, writer, deadline)
        except (_StreamEnd, ConnectionError):
            pass
        except _StreamCut:
            return response
        finally:
            self._watchers.discard(watch)
            self._notify_activity()
        return response

    async def _reached(self, wanted: int, lagged: bool) -> bool:
        """Whether the (possibly lagging) view reaches ``wanted`` within ``too_large_wait``."""
        return self._visible(lagged) >= wanted or await self._await_revision(wanted, lagged)

    def _watch_expired(self, wanted: int) -> StatusError:
        """410 for a watch from a compacted RV: the watch cache's wording when it serves the
        watch (the quirks), else etcd's (list-watch-semantics.md, observed on v1.21)."""
        if self.watch_cache_quirks:
            return st.expired(
                f"too old resource version: {self._format_rv(wanted)} "
                f"({self._format_rv(self.store.compacted)})"
            )
        return st.expired(st.WATCH_TOO_OLD)

    def _initial_keys(self, watch: _Watch, state: dict[str, StoredObject]) -> list[str]:
        keys = self.store.sorted_keys(watch.resource, state)
        lo, hi = Store.key_range(keys, watch.prefix)
        if watch.selector.empty:
            return keys[lo:hi]
        return [k for k in keys[lo:hi] if watch.selector.matches(state[k].data)]

    def _collect(self, watch: _Watch, upto: int, lines: list[bytes]) -> None:
        """Append the lines for changes after the watch's cursor up to ``upto``."""
        resource, prefix, selector = watch.resource, watch.prefix, watch.selector
        everything = selector.empty
        changes: list[Change] = self.store.changes(watch.cursor, upto)
        watch.cursor = upto
        for change in changes:
            if change.resource != resource:
                continue
            watch.saw_newer = True
            if prefix and not change.key.startswith(prefix):
                continue
            if everything:
                lines.append(change.line(change.type))
                continue
            old = change.prev is not None and selector.matches(change.prev.data)
            new = change.obj is not None and selector.matches(change.obj.data)
            if old and new:
                lines.append(change.line("MODIFIED"))
            elif new:
                lines.append(change.line("ADDED"))
            elif old:
                lines.append(change.line("DELETED"))

    async def _stream(self, kind: Kind, watch: _Watch, writer: _Writer, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        interval = self.bookmark_interval
        # cacheWatcher.nextBookmarkTime: the next bookmark is due at min(now + interval,
        # deadline - bookmark_before_timeout); once that moment has passed, none is scheduled
        # again (so none at all when timeoutSeconds is shorter than bookmark_before_timeout)
        next_bookmark = now + interval if watch.allow_bookmarks else math.inf
        pre_timeout = deadline - self.bookmark_before_timeout
        if not watch.allow_bookmarks:
            pre_timeout = math.inf
        elif pre_timeout <= now:
            next_bookmark = pre_timeout = math.inf
        while True:
            if self._stopping or watch.epoch != self._epoch:
                return
            changed = self._changed
            now = loop.time()
            if now >= deadline:
                return
            visible = self._visible(watch.lagged)
            lines: list[bytes] = []
            if watch.cursor < visible:
                self._collect(watch, visible, lines)
            trailer = None
            if watch.allow_bookmarks and (
                watch.bookmark_now or now >= next_bookmark or now >= pre_timeout
            ):
                if now >= next_bookmark:
                    next_bookmark = now + interval
                if now >= pre_timeout:
                    next_bookmark = pre_timeout = math.inf
                eligible = not self.watch_cache_quirks or watch.saw_newer or watch.force_bookmark
                if watch.bookmark_now or eligible:
                    watch.bookmark_now = False
                if eligible and visible >= watch.start:
                    trailer = self._bookmark(kind, self._format_rv(watch.cursor))
                watch.force_bookmark = False
            if lines or trailer:
                await writer.send(lines, trailer)
                continue
            wake = min(deadline, next_bookmark, pre_timeout) - now
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(None if math.isinf(wake) else max(wake, 0.0)):
                    await changed.wait()


class _Writer:
    """Writes watch lines, applying a stream fault when there is one."""

    def __init__(
        self,
        server: ApiServer,
        request: web.Request,
        response: web.StreamResponse,
        fault: Fault | None,
    ) -> None:
        self.server = server
        self.request = request
        self.response = response
        self.fault = fault
        self.sent = 0
        self.first: bytes | None = None
        self.done: set[str] = set()

    async def write(self, data: bytes) -> None:
        await self.response.write(data)

    async def begin(self) -> None:
        if self.fault is not None:
            await self._actions()

    async def send(self, events: list[bytes], trailer: bytes | None = None) -> None:
        if self.fault is None:
            if trailer is not None:
                events = [*events, trailer]
            if events:
                await self.response.write(b"".join(events))
            return
        fault = self.fault
        for line in events:
            if fault.cut_mid_line and self.sent >= fault.after_events:
                await self.response.write(line[: max(len(line) // 2, 1)])
                transport = self.request.transport
                if transport is not None:
                    transport.close()
                raise _StreamCut
            await self.response.write(line)
            self.sent += 1
            if self.first is None:
                self.first = line
            if fault.duplicate_events and self.sent > fault.after_events:
                await self.response.write(line)
            await self._actions()
        if trailer is not None:
            await self.response.write(trailer)

    async def _actions(self) -> None:
        fault = self.fault
        assert fault is not None
        reached = self.sent >= fault.after_events
        if fault.stall and reached and "stall" not in self.done:
            self.done.add("stall")
            await self.server._sleep(fault.stall)
        if fault.malformed_line and reached and "malformed" not in self.done:
            self.done.add("malformed")
            await self.response.write(_MALFORMED_LINE)
        if fault.replay_stale and reached and self.first is not None and "replay" not in self.done:
            self.done.add("replay")
            await self.response.write(self.first)
        if fault.error_event is not None and reached:
            line = _encode({"type": "ERROR", "object": fault.error_event}) + b"\n"
            await self.response.write(line)
            raise _StreamEnd
        if fault.close_after_events is not None and self.sent >= fault.close_after_events:
            raise _StreamEnd
