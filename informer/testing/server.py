"""``ApiServer``: a Kubernetes API server on loopback, faithful to the wire, for tests.

The server is assembled from layers, each a package that imports only the ones above it in
this list (and the leaves ``_status``, ``_signals``, ``_options``, ``faults``):

- ``_storage``: the revisioned store (revisions, change log, compaction, restore) and how it is
  read (wire resource versions, stale views, waiting for a revision);
- ``_query``: request parameters (list options, label/field/shard selectors, write options);
- ``_catalog``: what each served resource is (built-ins, CustomResourceDefinitions);
- ``_schemas``: object structure and validation;
- ``_patches``: patch formats and managed fields, pure functions of JSON;
- ``_lifecycle``: deletion rules and the controllers (garbage collector, namespaces, CRDs);
- ``_registry``: the served resources and their write rules (a ``Strategy`` per resource),
  server-side apply;
- ``_tls``: the self-signed CA and serving certificate of ``tls=True`` (HTTPS);
- ``_serving``: HTTP routing, content types, LIST/GET, WATCH, writes, discovery, OpenAPI,
  tables, and how fault rules change answers.

See the package docstring of ``informer.testing`` for the behaviour of each personality.
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, Literal, TypeVar

import msgspec
from aiohttp import web

from informer.resource import Resource
from informer.testing._lifecycle.deletion import DeleteOptions
from informer.testing._options import PERSONALITIES, Personality, ServerOptions, ShardSelectorMode
from informer.testing._registry.registry import BUILTINS, Registry
from informer.testing._serving.lists import ListServer
from informer.testing._serving.routing import HttpApi
from informer.testing._serving.watches import WatchServer
from informer.testing._signals import Signal, wait_until
from informer.testing._storage.history import History
from informer.testing.faults import Fault, FaultSet, RecordedRequest

__all__ = ["BUILTINS", "PERSONALITIES", "ApiServer", "Personality"]

Json = dict[str, Any]
T = TypeVar("T")

# The CA of plain-HTTP servers' configurations (see ApiServer.configuration): a certificate
# whose key was discarded when it was made.
_NO_AUTHORITY_PEM = str(Path(__file__).parent / "_tls" / "no_authority.pem")


class _Option(Generic[T]):
    """An ``ApiServer`` attribute that reads and writes the shared ``ServerOptions``."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, server: ApiServer, owner: type | None = None) -> T:
        value: T = getattr(server.options, self.name)
        return value

    def __set__(self, server: ApiServer, value: T) -> None:
        setattr(server.options, self.name, value)


class ApiServer:
    """A fault-injecting Kubernetes API server for tests; see ``informer.testing``."""

    personality: _Option[str] = _Option()
    compaction_window: _Option[int | None] = _Option()
    history_max_age: _Option[float | None] = _Option()
    too_large_wait: _Option[float] = _Option()
    bookmark_interval: _Option[float] = _Option()
    bookmark_before_timeout: _Option[float] = _Option()
    stale_lag: _Option[int] = _Option()
    watch_cache_quirks: _Option[bool] = _Option()
    shard_selectors: _Option[ShardSelectorMode] = _Option()

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
        shard_selectors: ShardSelectorMode | str | None = None,
        tls: bool = False,
        root_ca_configmaps: bool = False,
    ) -> None:
        self.options = ServerOptions.of(
            personality,
            compaction_window=compaction_window,
            history_max_age=history_max_age,
            too_large_wait=too_large_wait,
            bookmark_interval=bookmark_interval,
            bookmark_before_timeout=bookmark_before_timeout,
            stale_lag=stale_lag,
            watch_cache_quirks=watch_cache_quirks,
            shard_selectors=shard_selectors,
            root_ca_configmaps=root_ca_configmaps,
        )
        self.host = host
        self._port = port
        self.history = History(self.options)
        self.store = self.history.store
        self.registry = Registry(self.history)
        self.faults = FaultSet()
        self.requests: list[RecordedRequest] = []
        self._activity = Signal()  # requests and watch streams come and go
        self.lists = ListServer(self.history, self.registry)
        self.watches = WatchServer(self.history, self._activity)
        self.http = HttpApi(
            self.history,
            self.registry,
            self.lists,
            self.watches,
            self.faults,
            self.requests,
            self._activity,
        )
        self._runner: web.AppRunner | None = None
        self._url: str | None = None
        self.tls = tls
        self._ca_pem: bytes | None = None
        self._ca_dir: tempfile.TemporaryDirectory[str] | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> ApiServer:
        """Serve on ``host``:``port`` (0 = an ephemeral port); ``url`` is valid afterwards."""
        self.history.start()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.http.handle)
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0
        )
        await self._runner.setup()
        ssl_context = None
        if self.tls:
            from informer.testing._tls.certificates import CertificateAuthority

            ca = CertificateAuthority()
            hosts = tuple(dict.fromkeys((self.host, "127.0.0.1", "localhost", "::1")))
            ssl_context = ca.issue(hosts).server_context()
            self._ca_pem = ca.pem
            if self.options.root_ca_configmaps:
                self.registry.controllers.publish_root_ca(ca.pem.decode())
        site = web.TCPSite(self._runner, self.host, self._port, ssl_context=ssl_context)
        await site.start()
        address = self._runner.addresses[0]
        self._port = int(address[1])
        scheme = "https" if self.tls else "http"
        self._url = f"{scheme}://{self.host}:{self._port}"
        return self

    async def stop(self) -> None:
        """Close every open watch and stop serving."""
        self.history.stop()
        self._activity.notify()
        await self.http.writes.admission.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._ca_dir is not None:
            self._ca_dir.cleanup()
            self._ca_dir = None

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
        """``http://127.0.0.1:PORT`` (``https://`` with ``tls``) once started."""
        if self._url is None:
            raise RuntimeError("ApiServer is not started")
        return self._url

    @property
    def port(self) -> int:
        self.url  # noqa: B018 - raises when not started
        return self._port

    @property
    def webhook_services(self) -> dict[tuple[str, ...], str]:
        """Where admission webhooks given as ``clientConfig.service`` are called: ``(namespace,
        name)`` or ``(namespace, name, port)`` -> base URL (``"https://127.0.0.1:8443"``), the
        reference's ``path`` appended. Webhooks given by ``clientConfig.url`` need nothing."""
        return self.http.writes.admission.services

    @property
    def ca_pem(self) -> bytes | None:
        """With ``tls``, once started: the PEM of the self-signed CA that signed the serving
        certificate (for 127.0.0.1, localhost, ::1 and ``host``); a new one each start."""
        return self._ca_pem

    def ca_file(self) -> str | None:
        """With ``tls``: a file holding ``ca_pem`` (removed when the server stops), for
        clients that take a path (``ssl_ca_cert``, ``--certificate-authority``)."""
        if self._ca_pem is None:
            return None
        if self._ca_dir is None:
            self._ca_dir = tempfile.TemporaryDirectory(prefix="informer-ca-")
        path = Path(self._ca_dir.name, "ca.crt")
        if not path.exists():
            path.write_bytes(self._ca_pem)
        return str(path)

    def configuration(self) -> Any:
        """A ``kubernetes_asyncio.client.Configuration`` pointing at this server (verifying
        its certificate against ``ca_pem`` with ``tls``).

        Without ``tls`` its CA is a certificate whose key was discarded (nobody can present
        it): kubernetes_asyncio builds a TLS context for every ApiClient, plain-HTTP ones
        included, and without a CA that context parses the system's whole trust store (~25 ms
        of CPU per client; ~0.5 ms with this one certificate). The client never speaks TLS to
        this server; were it pointed at an https server, its handshake would fail closed."""
        from kubernetes_asyncio import client

        config = client.Configuration(host=self.url)
        config.ssl_ca_cert = self.ca_file() if self._ca_pem is not None else _NO_AUTHORITY_PEM
        return config

    def api_client(self) -> Any:
        """A ``kubernetes_asyncio.client.ApiClient`` for this server (the caller closes it)."""
        from kubernetes_asyncio import client

        return client.ApiClient(configuration=self.configuration())

    def write_kubeconfig(self, path: str | Path) -> Path:
        """Write a kubeconfig (JSON, valid YAML) whose current context is this server (with
        ``tls``, its CA as ``certificate-authority-data``: clients verify the server)."""
        path = Path(path)
        cluster: Json = {"server": self.url}
        if self._ca_pem is not None:
            cluster["certificate-authority-data"] = base64.b64encode(self._ca_pem).decode()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "informer-test", "cluster": cluster}],
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
        path.write_bytes(msgspec.json.format(msgspec.json.encode(config), indent=2))
        return path

    # -- resources ----------------------------------------------------------------------------

    def register(self, resource: Resource, *, _list_items_typed: bool = True) -> None:
        """Serve ``resource`` (a custom resource: list items keep kind and apiVersion)."""
        self.registry.register(resource, list_items_typed=_list_items_typed)

    # -- revisions ----------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        """The current global revision (like etcd's)."""
        return self.store.revision

    def format_resource_version(self, revision: int) -> str:
        """The wire form of ``revision`` (decimal, or opaque in the ``opaque-rv`` personality)."""
        return self.history.format_rv(revision)

    def parse_resource_version(self, rv: str) -> int:
        """The revision of wire resource version ``rv``; raises a 400 ``BadRequest``."""
        return self.history.parse_rv(rv)

    def compact(self, revision: int | None = None) -> None:
        """Drop history before ``revision`` (None: everything before now); older RVs get 410."""
        self.history.compact(revision)

    @property
    def compacted_revision(self) -> int:
        """The oldest revision still readable (Exact lists) and watchable."""
        self.history.auto_compact()
        return self.store.compacted

    def restore(self, revision: int) -> None:
        """Simulate an etcd restore to ``revision``: state and counter go back, watches close.

        The history window restarts at ``revision`` (like an apiserver restarted on the restored
        etcd), so older RVs get 410 and newer ones are in the future until writes reach them.
        """
        self.history.restore(revision)

    # -- direct Python API --------------------------------------------------------------------

    def create(self, resource: Resource, obj: Json) -> Json:
        """Create ``obj`` (namespace from its metadata, "default" if unset); 409 if it exists.

        As test setup, a missing namespace is created and ``status`` is stored as given (over
        HTTP the first is 404 and the second the server's, as on a real cluster).
        """
        return self.registry.create(resource, obj, setup=True)

    def replace(self, resource: Resource, obj: Json) -> Json:
        """Update ``obj``; 409 Conflict when its ``metadata.resourceVersion`` is set and stale."""
        meta = obj.get("metadata") or {}
        return self.registry.update(
            resource, obj, meta.get("name") or "", meta.get("namespace"), setup=True
        )

    def patch(
        self, resource: Resource, name: str, patch: Json, namespace: str | None = None
    ) -> Json:
        """Apply a JSON merge patch; a ``metadata.resourceVersion`` in it is a precondition."""
        return self.registry.merge_patch(resource, name, patch, namespace, setup=True)

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        uid: str | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
        grace_period_seconds: int | None = None,
    ) -> Json:
        """Delete as an HTTP DELETE does: the object as last stored (stamped with the deletion
        revision) when it goes now, or the object being deleted (``deletionTimestamp`` set)
        while finalizers or a grace period hold it. The garbage collector and the namespace
        controller run before this returns."""
        return self.registry.delete(
            resource,
            name,
            namespace,
            options=DeleteOptions(propagation_policy, grace_period_seconds, resource_version, uid),
        )

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Json | None:
        """The current object, or None."""
        return self.registry.get(resource, name, namespace)

    def list_objects(self, resource: Resource, namespace: str | None = None) -> list[Json]:
        """Current objects of ``resource`` (in one namespace if given), in key order."""
        return self.registry.list_objects(resource, namespace)

    def seed(self, objects: Iterable[Json]) -> list[Json]:
        """Create manifests (``apiVersion`` and ``kind`` name the resource), as test setup:
        CustomResourceDefinitions first (their resources are then served), then namespaces,
        then the rest in order. Returns the created objects; ``ValueError`` for a kind that is
        not served."""
        pending = list(objects)
        rank = {"CustomResourceDefinition": 0, "Namespace": 1}
        pending.sort(key=lambda o: rank.get(str(o.get("kind")), 2))
        created = []
        for obj in pending:
            api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
            resource = self.registry.resource_of(api_version, kind)
            if resource is None:
                raise ValueError(f"{api_version} {kind} is not served here")
            created.append(self.create(resource, obj))
        return created

    def bulk_load(self, resource: Resource, objs: Iterable[Json]) -> None:
        """Create many objects fast (one revision each); watchers get them as ADDED events.

        Millions of new dicts would make the cyclic GC run over and over (most of the time in a
        large process), so the collector is paused during the load and its previous state
        restored afterwards. The server takes ownership of the objects passed in (nothing is
        deep-copied, the stored form shares their nested values): do not mutate them afterwards.
        """
        self.registry.bulk_load(resource, objs)

    # -- watchers -----------------------------------------------------------------------------

    def watcher_count(self, resource: Resource | str | None = None) -> int:
        """Watch streams open now (headers sent), for ``resource`` (or plural) if given."""
        return self.watches.count(resource)

    def send_bookmarks(self, resource: Resource | None = None, *, force: bool = False) -> int:
        """Send a BOOKMARK now on every eligible watch; returns how many watches were asked.

        Eligible: ``allowWatchBookmarks=true``, the watch has reached its start RV and, with the
        watch-cache quirks on, an event newer than its start RV was seen (``force`` skips that).
        """
        return self.watches.send_bookmarks(resource, force=force)

    def disrupt_watches(self, fault: Fault, resource: Resource | str | None = None) -> int:
        """Apply a stream ``Fault`` to the watches open now; returns how many it reached.

        A rule added to ``faults`` only meets requests made after it; this reaches streams that
        are already running, e.g. to cut or stall a long-lived watch: ``cut_mid_line`` (at once,
        half a line then the connection drops), ``stall``, ``malformed_line``, ``replay_stale``,
        ``duplicate_events``, ``error_event``, ``close_after_events``, counting ``after_events``
        from now. Each reached stream counts one ``fired``.
        """
        if not fault.affects_stream:
            raise ValueError("disrupt_watches needs a stream fault (cut, stall, error event...)")
        return self.watches.disrupt(fault, resource)

    async def wait_for_watchers(
        self, count: int, resource: Resource | str | None = None, timeout: float = 10.0
    ) -> None:
        """Until at least ``count`` watch streams are open (headers sent)."""

        async def check() -> bool:
            return self.watcher_count(resource) >= count

        await wait_until(
            self._activity,
            check,
            timeout,
            lambda: f"{self.watcher_count(resource)} watches open, wanted {count}",
        )

    async def wait_for_watchers_closed(
        self, resource: Resource | str | None = None, timeout: float = 10.0
    ) -> None:
        """Until no watch stream (of ``resource`` if given) is open any more."""

        async def check() -> bool:
            return self.watcher_count(resource) == 0

        await wait_until(
            self._activity,
            check,
            timeout,
            lambda: f"{self.watcher_count(resource)} watches still open",
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

        await wait_until(
            self._activity,
            check,
            timeout,
            lambda: f"{len(found)} matching requests, wanted {count}",
        )
        return found
