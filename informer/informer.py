"""Informers: a reflector, its store, and event handlers that never block it.

Each handler has its own pending queue and task (``informer._handler``): a slow handler delays
only itself, and its successive changes of one object are coalesced meanwhile.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import AsyncGenerator, Awaitable, Callable, Hashable, Iterable, Mapping
from dataclasses import replace
from types import TracebackType
from typing import Any, Self

from informer import _checks
from informer._handler import DeliveryLatency, Handler, HandlerStats
from informer._log import describe_error, get_logger
from informer.errors import ConfigurationError
from informer.objects import KubeObject
from informer.reflector import (
    Reflector,
    ReflectorOptions,
    ReflectorStats,
    ShardedReflector,
    ShardStats,
)
from informer.resource import Resource
from informer.shards import ShardField, ShardRange, ShardSet, hash_value
from informer.store import Delta, Store, Tombstone
from informer.store._waiters import _meta_of
from informer.transport import Transport

__all__ = [
    "DeliveryLatency",
    "Handler",
    "HandlerStats",
    "Informer",
    "InformerState",
    "SharedInformerFactory",
]

_log = get_logger("informer.informer")

AddHandler = Callable[[KubeObject, bool], Awaitable[None] | None]
UpdateHandler = Callable[[KubeObject, KubeObject], Awaitable[None] | None]
DeleteHandler = Callable[[KubeObject | Tombstone], Awaitable[None] | None]


class InformerState(enum.Enum):
    """The lifecycle of an ``Informer`` or a ``SharedInformerFactory``."""

    STOPPED = "stopped"  # never started, or stopped
    RUNNING = "running"  # started (start, async with or run), until stop or cancellation
    STOPPING = "stopping"  # stop() is waiting for the reflector and handlers to end


class _Driver:
    """One start of an informer: the task running it, and the start it must wait for."""

    task: asyncio.Task[None]

    def __init__(self, previous: _Driver | None) -> None:
        self.previous = previous


async def _ended(driver: _Driver | None) -> None:
    """Until ``driver`` and every older driver it may still be waiting for have ended."""
    while driver is not None:
        await asyncio.wait([driver.task])
        driver = driver.previous  # None once it had waited for it; set if it never ran


def _transform_name(options: ReflectorOptions) -> str:
    """The name of ``options``' transform ("" without one): a function's, or its class's."""
    transform = options.transform
    if transform is None:
        return ""
    name = getattr(transform, "__qualname__", None)
    if not isinstance(name, str):
        return type(transform).__name__
    return name.rpartition("<locals>.")[2]


class Informer:
    """Lists and watches one resource into a store and calls handlers with its changes.

    ``async with Informer(api_client, CONFIGMAPS, namespace="ns") as inf: await
    inf.wait_for_sync()``; or run ``await inf.run()`` in a task of your own.

    ``name`` tells apart, in metrics (the ``informer`` label) and logs, informers that watch the
    same selection differently (another transform); by default the transform's name, or "".

    Sharded (KEP-5866): with ``shards`` (hash ranges of ``shard_field``, the uid by default) the
    informer holds only the objects of those ranges. It sends ``shardSelector`` on every LIST,
    continue page, streaming list and WATCH, and checks each object's hash itself as well (a
    server with the feature gate off, older than v1.36, or without its watch cache sends
    objects of every range: they are dropped, counted in ``statistics().shard_filtered``,
    logged once). ``set_shards`` changes the ranges of a running informer, listing and
    watching only the ranges taken (see ``ShardedReflector``); the objects of ranges given up
    leave the cache with no delete delivered (they were not deleted). Freshness waits and
    read-your-writes keep their meaning: the cache RV is the lowest of the ranges' RVs.
    """

    def __init__(
        self,
        client: Transport | Any,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        options: ReflectorOptions | None = None,
        name: str | None = None,
        shards: ShardSet | Iterable[ShardRange] | None = None,
        shard_field: ShardField = ShardField.UID,
    ) -> None:
        transport = client if isinstance(client, Transport) else Transport(client)
        self.resource = resource
        # options are validated by the reflector (a typed error for anything else)
        compression = options.compression if isinstance(options, ReflectorOptions) else None
        self.store = Store(compression=compression)
        self.reflector: Reflector
        if shards is None:
            self.reflector = Reflector(
                transport,
                resource,
                self.store,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                options=options,
                on_deltas=self._dispatch,
            )
        else:
            if not isinstance(shard_field, ShardField):
                raise ConfigurationError(f"shard_field must be a ShardField: {shard_field!r}")
            self.reflector = ShardedReflector(
                transport,
                resource,
                self.store,
                shards=shards if isinstance(shards, ShardSet) else ShardSet(shards),
                field=shard_field,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                options=options,
                on_deltas=self._dispatch,
            )
        self.name = name if name is not None else _transform_name(self.reflector.options)
        if self.name:  # its records, like its series, tell it from a twin with another transform
            self.reflector.log = self.reflector.log.bind(informer=self.name)
        self._handlers: list[Handler] = []
        self._state = InformerState.STOPPED
        self._driver: _Driver | None = None  # the latest; an older one may still be ending
        self._serving = False  # handlers started by the driver and not yet being stopped

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def state(self) -> InformerState:
        return self._state

    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def start(self) -> None:
        """Run in a background task (``stop`` ends it; ``start`` again resumes from the cache).

        Does nothing while running. During a ``stop``, the informer runs again as soon as that
        stop's teardown has ended: one reflector at a time, every handler alive.
        """
        if self._state is not InformerState.RUNNING:
            self._launch()

    async def stop(self) -> None:
        """Cancel the reflector and the handler tasks, and return once they have ended.

        Every concurrent ``stop`` returns only then; an informer driven by ``run`` is stopped too
        (``run`` then returns). A ``start`` during the stop wins: the informer runs again after.
        """
        await _ended(self._begin_stop())

    def _begin_stop(self) -> _Driver | None:
        """Cancel the running driver (once); the driver ``stop`` must wait for, if any."""
        driver = self._driver
        if driver is not None and self._state is InformerState.RUNNING:
            self._state = InformerState.STOPPING
            driver.task.cancel()
        return driver

    async def run(self) -> None:
        """List, watch and deliver to handlers until ``stop`` (then returns) or cancelled (then
        stops and raises ``CancelledError``).

        Raises ``RuntimeError`` if the informer is already running (``start``, ``async with`` or
        another ``run``): two reflectors must never write one store.
        """
        if self._state is InformerState.RUNNING:
            raise RuntimeError("informer is already running")
        driver = self._launch()
        try:
            await _ended(driver)
        except asyncio.CancelledError:
            if self._driver is driver:  # not replaced by a later start: stop it
                await self.stop()
            raise
        if not driver.task.cancelled() and (exc := driver.task.exception()) is not None:
            raise exc

    def _launch(self) -> _Driver:
        """A new driver, chained after the one that may still be stopping."""
        driver = _Driver(self._driver)
        driver.task = asyncio.create_task(
            self._drive(driver), name=f"informer-{self.resource.plural}"
        )
        driver.task.add_done_callback(lambda _: self._ended(driver))  # also if it never ran
        self._driver = driver
        self._state = InformerState.RUNNING
        return driver

    async def _drive(self, driver: _Driver) -> None:
        try:
            await _ended(driver.previous)  # its teardown first: one reflector at a time
            driver.previous = None
            self._serving = True
            for handler in self._handlers:
                handler.start()
            await self.reflector.run()
        finally:
            if driver.previous is not None:  # stopped before the previous one had ended
                await _ended(driver.previous)
            else:
                self._serving = False
                self.store.close()  # the background compression: no task outlives the informer
                for handler in list(self._handlers):
                    await handler.stop()

    def _ended(self, driver: _Driver) -> None:
        task = driver.task
        if not task.cancelled() and (exc := task.exception()) is not None:
            # The reflector never raises by design: this is a bug, and the informer is dead
            # (a Manager's /healthz now fails). Said once here, not only by an unread task.
            _log.error(
                "informer.failed",
                resource=self.resource.group_resource,
                namespace=self.reflector.namespace,
                error=describe_error(exc),
            )
        if self._driver is driver:
            self._driver = None
            self._state = InformerState.STOPPED

    # -- sync and freshness ----------------------------------------------------------------
    @property
    def has_synced(self) -> bool:
        return self.reflector.has_synced

    async def wait_for_sync(self, timeout: float | None = None) -> None:
        """Until the first list is in the store (``TimeoutError`` after ``timeout`` seconds)."""
        async with asyncio.timeout(timeout):
            await self.reflector.synced.wait()

    async def wait_for_resource_version(self, rv: str, timeout: float | None = None) -> None:
        """Until the cache has seen ``rv`` (see ``Store.wait_for_resource_version``).

        A sharded informer holding no range has nothing to wait for: it returns at once."""
        if self._holds_nothing():
            return
        await self.store.wait_for_resource_version(rv, timeout)

    async def wait_for_write(
        self, obj: Mapping[str, Any] | Any, timeout: float | None = None
    ) -> KubeObject | None:
        """Read-your-writes: until the cache holds what a create/update/patch returned.

        A sharded informer returns None at once for an object outside its ranges (it never
        holds it)."""
        if self._holds_nothing() or not self._may_hold(obj):
            return None
        return await self.store.wait_for_write(obj, timeout)

    async def wait_for_deletion(
        self, obj: Mapping[str, Any] | Any, timeout: float | None = None
    ) -> None:
        """Until no cached object has the deleted object's uid (the object, or the ``Status`` a
        DELETE answers; see ``Store.wait_for_deletion``)."""
        if self._holds_nothing():
            return
        await self.store.wait_for_deletion(obj, timeout, namespace=self.reflector.namespace)

    def _holds_nothing(self) -> bool:
        r = self.reflector
        return isinstance(r, ShardedReflector) and not r.shards

    def _may_hold(self, obj: Mapping[str, Any] | Any) -> bool:
        """False when a sharded informer's ranges exclude ``obj`` (by its uid or namespace)."""
        r = self.reflector
        if not isinstance(r, ShardedReflector):
            return True
        try:
            _, namespace, uid, _ = _meta_of(obj)
        except (TypeError, ValueError, AttributeError):
            return True  # the store's wait says what is wrong with it
        value = uid if r.field is ShardField.UID else namespace
        if r.field is ShardField.UID and not uid:
            return True
        return r.shards.contains(hash_value(value))

    def statistics(self) -> ReflectorStats:
        return self.reflector.statistics()

    # -- shards (KEP-5866) -----------------------------------------------------------------
    @property
    def shards(self) -> ShardSet | None:
        """The hash ranges held now; None for an informer that is not sharded."""
        r = self.reflector
        return r.shards if isinstance(r, ShardedReflector) else None

    def set_shards(self, shards: ShardSet | Iterable[ShardRange]) -> None:
        """Hold ``shards`` from now on (running or not): the ranges taken are listed and
        watched, the ranges given up leave the cache; nothing kept is listed again."""
        r = self.reflector
        if not isinstance(r, ShardedReflector):
            raise ConfigurationError("set_shards needs an informer created with shards=")
        r.set_shards(shards if isinstance(shards, ShardSet) else ShardSet(shards))

    async def wait_for_shards(self, timeout: float | None = None) -> None:
        """Until every range held has been listed (those taken by ``set_shards`` too)."""
        r = self.reflector
        if not isinstance(r, ShardedReflector):
            await self.wait_for_sync(timeout)
            return
        async with asyncio.timeout(timeout):
            await r.lanes_synced.wait()

    def shard_statistics(self) -> ShardStats | None:
        """Ranges held, their share of the hash space, objects cached (None: not sharded)."""
        r = self.reflector
        return r.shard_statistics() if isinstance(r, ShardedReflector) else None

    # -- handlers --------------------------------------------------------------------------
    def add_handler(
        self,
        on_add: AddHandler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: DeleteHandler | None = None,
        *,
        name: str | None = None,
    ) -> Handler:
        """Register callbacks (sync or async). After sync, it first gets the current objects."""
        for arg, fn in (("on_add", on_add), ("on_update", on_update), ("on_delete", on_delete)):
            _checks.callable_or_none("add_handler", arg, fn)

        # called once per change and handler: no checks beyond the type (an added or updated
        # Delta holds a KubeObject, an updated one its old object too: Store makes them so)
        def deliver(delta: Delta) -> Awaitable[None] | None:
            kind = delta.type
            if kind == "added":
                if on_add is not None:
                    return on_add(delta.obj, delta.is_initial)  # type: ignore[arg-type]
            elif kind == "updated":
                if on_update is not None:
                    return on_update(delta.old, delta.obj)  # type: ignore[arg-type]
            elif on_delete is not None:
                return on_delete(delta.obj)
            return None

        return self._register(deliver, name or f"handler-{len(self._handlers)}")

    def add_delta_handler(
        self, deliver: Callable[[Delta], Awaitable[None] | None], *, name: str | None = None
    ) -> Handler:
        """Register one callback (sync or async) that gets every change as a ``Delta``, for
        consumers that need more than ``add_handler``'s arguments (e.g. ``Delta.from_list``: was
        the change found by a relist or seen on a live watch). After sync, it first gets the
        current objects."""
        _checks.callable_or_none("add_delta_handler", "deliver", deliver)
        return self._register(deliver, name or f"handler-{len(self._handlers)}")

    def _register(
        self,
        deliver: Callable[[Delta], Awaitable[None] | None],
        name: str,
        on_stop: Callable[[], None] | None = None,
    ) -> Handler:
        handler = Handler(deliver, name, self.reflector.log, on_stop)
        if self.has_synced:
            for obj in self.store.list():
                handler.push(Delta("added", obj, None, True, from_list=True))
        self._handlers.append(handler)
        if self._serving:
            handler.start()
        return handler

    @property
    def handlers(self) -> list[Handler]:
        """The registered handlers (``statistics()`` of each: queue depth, deliveries, errors)."""
        return list(self._handlers)

    async def remove_handler(self, handler: Handler) -> None:
        if handler in self._handlers:
            self._handlers.remove(handler)
            await handler.stop()

    async def events(self) -> AsyncGenerator[Delta, None]:
        """Every change as a ``Delta`` (coalesced when the consumer falls behind); ends when the
        informer stops."""
        queue: asyncio.Queue[Delta | None] = asyncio.Queue()

        async def deliver(delta: Delta) -> None:
            queue.put_nowait(delta)
            await queue.join()  # until the consumer took it: later changes coalesce meanwhile

        handler = self._register(
            deliver, f"events-{len(self._handlers)}", lambda: queue.put_nowait(None)
        )
        try:
            while True:
                delta = await queue.get()
                queue.task_done()
                if delta is None:
                    return
                yield delta
        finally:
            await self.remove_handler(handler)

    def _dispatch(self, deltas: list[Delta]) -> None:
        # the reflector hands over one list's changes (all from_list) or one read's watch events
        if deltas[0].from_list:
            for handler in self._handlers:
                handler.push_list(deltas)
        else:
            for handler in self._handlers:
                handler.push_all(deltas)


class SharedInformerFactory:
    """One informer per (resource, namespace, selectors, transform), shared by its users."""

    def __init__(self, client: Transport | Any, *, options: ReflectorOptions | None = None) -> None:
        self.transport = client if isinstance(client, Transport) else Transport(client)
        self.options = options or ReflectorOptions()
        self._informers: dict[Hashable, Informer] = {}
        self._state = InformerState.STOPPED

    def informer(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Callable[[dict[str, Any]], Mapping[str, Any]] | None = None,
        name: str | None = None,
        shards: ShardSet | Iterable[ShardRange] | None = None,
        shard_field: ShardField = ShardField.UID,
    ) -> Informer:
        """The shared informer for this resource and scope (created on first use).

        ``None`` and ``""`` are one scope (all namespaces, no selector); the transform is part of
        the key by identity. ``name`` (see ``Informer``) is given to an informer this call
        creates. ``shards`` asks for a sharded informer (see ``Informer``): one per scope and
        ``shard_field``, shared whatever ranges it holds now (its ranges are changed with
        ``set_shards``, e.g. by a ring; ``shards`` only sets those of the one this call
        creates)."""
        namespace = namespace or None
        label_selector = label_selector or None
        field_selector = field_selector or None
        sharded = shard_field if shards is not None else None
        key = (resource, namespace, label_selector, field_selector, transform, sharded)
        inf = self._informers.get(key)
        if inf is None:
            options = replace(self.options, transform=transform or self.options.transform)
            inf = Informer(
                self.transport,
                resource,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                options=options,
                name=name,
                shards=shards,
                shard_field=shard_field,
            )
            self._informers[key] = inf
            if self._state is InformerState.RUNNING:
                inf.start()
        return inf

    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def start(self) -> None:
        """Start every informer (and those created later). During a ``stop``, this start wins:
        each informer runs again once its teardown has ended."""
        self._state = InformerState.RUNNING
        for inf in self._informers.values():
            inf.start()

    async def wait_for_sync(self, timeout: float | None = None) -> None:
        """Until every informer has synced."""
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(inf.reflector.synced.wait() for inf in self.informers))

    @property
    def state(self) -> InformerState:
        return self._state

    async def stop(self) -> None:
        """Stop every informer; returns once they have all ended (also for concurrent calls)."""
        if self._state is InformerState.RUNNING:
            self._state = InformerState.STOPPING
        await asyncio.gather(*(_ended(inf._begin_stop()) for inf in self.informers))
        stopped = all(inf.state is InformerState.STOPPED for inf in self.informers)
        if self._state is InformerState.STOPPING and stopped:  # else a later start won
            self._state = InformerState.STOPPED

    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
