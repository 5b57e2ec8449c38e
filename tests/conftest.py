"""Shared test helpers: reflector options with millisecond waits, informers on a test server."""

from __future__ import annotations

import importlib.util
import json
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, settings

from informer.backoff import BackoffPolicy
from informer.informer import Informer
from informer.reflector import ReflectorOptions
from informer.resource import CONFIGMAPS, Resource
from informer.testing import ApiServer, RecordedRequest
from informer.transport import Transport

# Property tests must not depend on how fast a loaded CI machine runs them: Hypothesis' default
# 200 ms deadline per example (and its too_slow health check) turn a descheduled process into a
# failure ("Unreliable test timings"). Tests that set their own @settings inherit this profile.
settings.register_profile("informer", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("informer")

# A certificate whose key was thrown away when it was made: nobody can present it.
_NO_AUTHORITY = """-----BEGIN CERTIFICATE-----
MIIBfzCCASagAwIBAgIUDgPwqhOnBbbvG01XJpbELXTIe4EwCgYIKoZIzj0EAwIw
MzExMC8GA1UEAwwoaW5mb3JtZXIgdGVzdHM6IG5vIGNlcnRpZmljYXRlIGF1dGhv
cml0eTAgFw0yNjAxMDEwMDAwMDBaGA8yMTI1MTIwODAwMDAwMFowMzExMC8GA1UE
AwwoaW5mb3JtZXIgdGVzdHM6IG5vIGNlcnRpZmljYXRlIGF1dGhvcml0eTBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABKJW2pVBO8WSQUuTDHDl+QHWH6993GGyBETE
vg1Fv14SJEAcd0Y6ooCMBdxEo3MhwHaW8EB41WtXEFn3WcKCPHijFjAUMBIGA1Ud
EwEB/wQIMAYBAf8CAQAwCgYIKoZIzj0EAwIDRwAwRAIgQxDz+EZhOKqn6/qG+82G
wKGtT7miL64R0eYJ3QtnNrYCIDDyI2EzI7jsrxCeO0PtKXZ9jKULfocZhBYu/MKh
l9LM
-----END CERTIFICATE-----
"""


@pytest.fixture(scope="session", autouse=True)
def _no_system_trust_store() -> Iterator[None]:
    """Client TLS contexts asked for without any CA trust a certificate nobody presents instead
    of the system's trust store, in this process (the commands a test runs are untouched).

    kubernetes_asyncio builds such a context for every ApiClient, plain-HTTP ones included:
    the system's ~140 roots parsed, 25 ms of CPU each time, about 860 times a run (20 s of the
    suite on an idle machine, 68 s at load 7). No test reaches a server a system authority
    vouches for: the test servers' CAs are always given (a file or cadata), and a handshake
    with a client given none fails as it would against the system store (unknown issuer).
    """
    original = ssl.create_default_context

    def create_default_context(
        purpose: ssl.Purpose = ssl.Purpose.SERVER_AUTH,
        *,
        cafile: str | None = None,
        capath: str | None = None,
        cadata: str | bytes | None = None,
    ) -> ssl.SSLContext:
        if purpose == ssl.Purpose.SERVER_AUTH and not (cafile or capath or cadata):
            cadata = _NO_AUTHORITY
        return original(purpose, cafile=cafile, capath=capath, cadata=cadata)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ssl, "create_default_context", create_default_context)
        yield

FAST = ReflectorOptions(
    page_size=2,
    list_strategy="list",
    watch_timeout=(30, 30),
    idle_timeout=10.0,
    backoff=BackoffPolicy(initial=0.001, maximum=0.02, reset_after=120.0),
    stream_idle_limit=0.3,
    too_large_retries=2,
    stale_list_retries=2,
)


class NoApi:
    """An ApiClient stand-in for tests that never send a request."""

    async def call_api(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("this test sends no request")


@pytest.fixture
def fast() -> ReflectorOptions:
    return FAST


def is_probe(r: RecordedRequest) -> bool:
    """The reflector's ``limit=1`` consistent list checking the server's RV after a broken watch."""
    return r.verb == "list" and r.query == {"limit": "1"}


def verbs(server: ApiServer) -> list[str]:
    """The list/watch requests in order, probes named ``probe``."""
    return [
        "probe" if is_probe(r) else r.verb for r in server.requests if r.verb in ("list", "watch")
    ]


def relists(server: ApiServer) -> list[RecordedRequest]:
    """First pages of real lists (not probes)."""
    return [r for r in server.requests if r.verb == "list" and r.page == 1 and not is_probe(r)]


def cm(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    """A ConfigMap body."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"k": name},
    }


def three_then_backup_then_three(server: ApiServer) -> int:
    """Create ConfigMaps c0..c2, take the revision as a backup, create c3..c5; the backup (for
    ``server.restore``: a server restored from etcd, whose RVs go back)."""
    for i in range(3):
        server.create(CONFIGMAPS, cm(f"c{i}"))
    backup = server.revision
    for i in range(3, 6):
        server.create(CONFIGMAPS, cm(f"c{i}"))
    return backup


@asynccontextmanager
async def running_informer(
    server: ApiServer,
    resource: Resource = CONFIGMAPS,
    *,
    sync: bool = True,
    **kwargs: Any,
) -> AsyncIterator[Informer]:
    """An informer on ``server`` (options default to FAST), started, optionally synced."""
    options = kwargs.pop("options", FAST)
    overrides = {k: kwargs.pop(k) for k in list(kwargs) if hasattr(options, k)}
    if overrides:
        options = replace(options, **overrides)
    api = server.api_client()
    try:
        inf = Informer(Transport(api), resource, options=options, **kwargs)
        async with inf:
            if sync:
                await inf.wait_for_sync(timeout=10)
            yield inf
    finally:
        await api.close()


async def wait_until(cond: Callable[[], bool], timeout: float = 10) -> None:
    """Until ``cond()`` holds, checked on every loop iteration (for counters with no event)."""
    import asyncio

    async with asyncio.timeout(timeout):
        while not cond():  # noqa: ASYNC110 - no event to await for a counter
            await asyncio.sleep(0)


class Recorder:
    """Collects handler calls; ``await rec.wait(pred)`` until one matches."""

    def __init__(self) -> None:
        import asyncio

        self.calls: list[tuple[str, Any, Any]] = []
        self._changed = asyncio.Condition()

    def attach(self, inf: Informer) -> None:
        async def on_add(obj: Any, initial: bool) -> None:
            await self._add(("add", obj, initial))

        async def on_update(old: Any, new: Any) -> None:
            await self._add(("update", old, new))

        async def on_delete(obj: Any) -> None:
            await self._add(("delete", obj, None))

        inf.add_handler(on_add, on_update, on_delete, name="recorder")

    async def _add(self, call: tuple[str, Any, Any]) -> None:
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()

    async def wait(
        self, pred: Callable[[list[tuple[str, Any, Any]]], bool], timeout: float = 10
    ) -> None:
        import asyncio

        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: pred(self.calls))

    def of(self, kind: str) -> list[tuple[str, Any, Any]]:
        return [c for c in self.calls if c[0] == kind]


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ELECTION = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.2}
"""LeaderElector timings for tests that run examples in real time (short, in seconds)."""


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` (the examples are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def created_since(
    server: ApiServer, resource: Resource, namespace: str, after: str, sentinel: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every object created in ``namespace`` since RV ``after`` (one entry per creation, so a
    name created twice appears twice): the ADDED events of a watch replaying the server's
    history, read up to ``sentinel``, an object of ``resource`` written last (faults cleared)."""
    server.faults.clear()
    end = server.create(resource, sentinel)["metadata"]["uid"]
    created: list[dict[str, Any]] = []
    async with aiohttp.ClientSession() as http:
        query = {"watch": "true", "resourceVersion": after}
        async with http.get(server.url + resource.path(namespace), params=query) as resp:
            async for line in resp.content:
                event = json.loads(line)
                if event["object"]["metadata"]["uid"] == end:
                    break
                if event["type"] == "ADDED":
                    created.append(event["object"])
    return created


class VirtualClock:
    """A clock whose waits take no time: ``sleep`` records the seconds asked (``waits``), moves
    ``now`` on by them and yields once. For ``ReflectorOptions(clock=...)`` and the writes
    client: a test reads back what was waited instead of waiting it."""

    def __init__(self) -> None:
        self.time = 0.0
        self.waits: list[float] = []

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        import asyncio

        self.waits.append(seconds)
        self.time += seconds
        await asyncio.sleep(0)
