"""A replay API server for benchmarks: pre-encoded bytes, in its own process.

Every response body is built before the first request, so serving costs a ``write`` of bytes
that already exist: the client under test, not the server, is what a benchmark measures. It runs
in a child process (the other core), never in the client's event loop.

The URL path starts with a scenario, then a token (one per client run), then the Kubernetes path:
``http://127.0.0.1:PORT/<scenario>/<token>/api/v1/pods``. A client points its ``host`` there.

Scenarios (``N`` objects, ``W`` watch events, list RV ``R``):
  ``list``    LIST pages (``limit``/``continue``, or everything without ``limit``); a watch from R
              stays open and silent; ``sendInitialEvents=true`` streams N ADDED lines, then the
              initial-events-end bookmark, then stays open.
  ``fill``    an empty list at R; a watch sends W ADDED lines of new objects, then stays open.
  ``steady``  the N objects; a watch from R sends W MODIFIED lines of them, then stays open.
  ``many``    ``/api/v1/namespaces/<ns>/configmaps``: K objects per namespace, watches stay open.
A watch that is open and silent answers an ERROR 410 line and ends once the client calls
``GET /control/expire/<token>`` (a forced relist). ``GET /control/stats`` counts open watches.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import socket
from dataclasses import dataclass, field
from typing import Any

from _objects import make_items, make_real_items  # type: ignore[import-not-found,unused-ignore]
from aiohttp import web

CHUNK = 1 << 20
FIRST_RV = 1_000_000


@dataclass
class Dataset:
    kind: str  # "pods", "realpods" (``_objects.make_real_items``) or "configmaps"
    count: int
    watch_events: int
    page: int = 500
    per_namespace: int = 0  # "many": objects per namespace
    namespaces: int = 0


@dataclass
class _Built:
    list_rv: int
    json_bytes: int
    fill_json_bytes: int
    pages: list[bytes]
    unpaginated: bytes
    initial_lines: list[bytes]
    fill_lines: list[bytes]
    steady_lines: list[bytes]
    empty_list: bytes
    ns_lists: dict[str, bytes] = field(default_factory=dict)


def pod_items(count: int, first_rv: int = FIRST_RV) -> list[bytes]:
    """~6.6 KB Pods with managedFields, as list items (no kind/apiVersion, as servers send)."""
    return [
        i.replace(b'"kind":"Pod","apiVersion":"v1",', b"", 1)
        for i in make_items(count, first_rv=first_rv)
    ]


def real_pod_items(count: int, first_rv: int = FIRST_RV) -> list[bytes]:
    """The realistic Pods (``_objects.make_real_items``: 60 workloads, per-Pod high-entropy
    fields), as list items. A watch-fill set (first_rv past the list) draws other Pods."""
    return [
        i.replace(b'"kind":"Pod","apiVersion":"v1",', b"", 1)
        for i in make_real_items(count, first_rv=first_rv, seed=22 + (first_rv != FIRST_RV))
    ]


def configmap_items(count: int, first_rv: int = FIRST_RV, ns: str | None = None) -> list[bytes]:
    """~474 B ConfigMaps with labels and a small managedFields entry, as list items."""
    out = []
    for i in range(count):
        namespace = ns or f"team-{i % 200:03d}"
        out.append(
            b'{"metadata":{"name":"config-%07d","namespace":"%s","uid":"9c1d2e3f-%04x-4a5b-8c6d-'
            b'%012x","resourceVersion":"%d","creationTimestamp":"2026-01-01T00:00:00Z","labels":'
            b'{"app":"app-%d","team":"team-%d"},"managedFields":[{"manager":"kubectl","operation":'
            b'"Apply","apiVersion":"v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1",'
            b'"fieldsV1":{"f:data":{"f:config.yaml":{}}}}]},"data":{"config.yaml":"port: 8080\\n'
            b'level: info\\nfeature: %08d\\n"}}'
            % (i, namespace.encode(), i % 65536, i, first_rv + i, i % 50, i % 20, i)
        )
    return out


def _wrap_list(kind: str, items: list[bytes], rv: int, cont: str, remaining: int | None) -> bytes:
    meta = b'"resourceVersion":"%d"' % rv
    if cont:
        meta += b',"continue":"%s","remainingItemCount":%d' % (cont.encode(), remaining or 0)
    return (
        b'{"kind":"%sList","apiVersion":"v1","metadata":{%s},"items":[' % (kind.encode(), meta)
        + b",".join(items)
        + b"]}"
    )


def _event(kind: str, type_: str, item: bytes) -> bytes:
    return b'{"type":"%s","object":{"kind":"%s","apiVersion":"v1",%s}\n' % (
        type_.encode(),
        kind.encode(),
        item[1:],
    )


def build(ds: Dataset) -> _Built:
    kind = "ConfigMap" if ds.kind == "configmaps" else "Pod"
    make = {"pods": pod_items, "realpods": real_pod_items, "configmaps": configmap_items}[ds.kind]
    items = make(ds.count)
    list_rv = FIRST_RV + ds.count
    pages = []
    for start in range(0, max(len(items), 1), ds.page):
        chunk = items[start : start + ds.page]
        more = start + ds.page < len(items)
        remaining = len(items) - start - ds.page if more else None
        pages.append(
            _wrap_list(kind, chunk, list_rv, str(len(pages) + 1) if more else "", remaining)
        )
    initial = [_event(kind, "ADDED", i) for i in items]
    initial.append(
        b'{"type":"BOOKMARK","object":{"kind":"%s","apiVersion":"v1","metadata":{"resourceVersion":'
        b'"%d","annotations":{"k8s.io/initial-events-end":"true"}}}}\n' % (kind.encode(), list_rv)
    )
    w = ds.watch_events
    fill_items = make(w, first_rv=list_rv + 1)
    fill_json = sum(len(i) for i in fill_items) + 4 * len(fill_items)  # with "new-" (below)
    fill = [_event(kind, "ADDED", i) for i in fill_items]
    del fill_items
    # renamed so they are new objects: the fill watch starts from an empty list
    fill = [line.replace(b'"name":"', b'"name":"new-', 1) for line in fill]
    steady = []
    for j in range(w):
        src = items[j % len(items)] if items else b"{}"
        old_rv = b'"resourceVersion":"%d"' % (FIRST_RV + j % max(len(items), 1))
        new = src.replace(old_rv, b'"resourceVersion":"%d"' % (list_rv + 1 + j), 1)
        steady.append(_event(kind, "MODIFIED", new))
    unpaginated = b""
    if ds.count <= 20_000:  # peers that cannot paginate (the official client's informer)
        unpaginated = _wrap_list(kind, items, list_rv, "", None)
    built = _Built(
        list_rv=list_rv,
        json_bytes=sum(len(i) for i in items),
        fill_json_bytes=fill_json,
        pages=pages,
        unpaginated=unpaginated,
        initial_lines=initial,
        fill_lines=fill,
        steady_lines=steady,
        empty_list=_wrap_list(kind, [], list_rv, "", None),
    )
    for n in range(ds.namespaces):
        ns = f"ns-{n:04d}"
        ns_items = configmap_items(ds.per_namespace, FIRST_RV + n * ds.per_namespace, ns)
        built.ns_lists[ns] = _wrap_list("ConfigMap", ns_items, list_rv, "", None)
    return built


class _Server:
    def __init__(self, built: _Built) -> None:
        self.b = built
        self.expired: set[str] = set()
        self.open_watches = 0
        self.requests = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        parts = request.path.split("/")
        if parts[1] == "control":
            return self.control(parts)
        scenario, token = parts[1], parts[2]
        q = request.query
        if q.get("watch") in ("true", "1", "True"):
            return await self.watch(request, scenario, token)
        b = self.b
        if scenario == "many":
            return web.Response(
                body=b.ns_lists.get(parts[6], b.empty_list), content_type="application/json"
            )
        if scenario == "fill":
            body = b.empty_list
        elif "limit" not in q:
            body = b.unpaginated
        else:
            body = b.pages[int(q.get("continue") or 0)]
        return web.Response(body=body, content_type="application/json")

    def control(self, parts: list[str]) -> web.Response:
        if parts[2] == "expire":
            self.expired.add(parts[3])
            return web.json_response({})
        b = self.b
        return web.json_response(
            {
                "open_watches": self.open_watches,
                "requests": self.requests,
                "list_rv": b.list_rv,
                "json_bytes": b.json_bytes,
                "fill_json_bytes": b.fill_json_bytes,
            }
        )

    async def watch(self, request: web.Request, scenario: str, token: str) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        b = self.b
        if request.query.get("sendInitialEvents") == "true":
            lines = b.initial_lines
        elif scenario == "fill":
            lines = b.fill_lines
        elif scenario == "steady":
            lines = b.steady_lines
        else:
            lines = []
        self.open_watches += 1
        try:
            buf: list[bytes] = []
            size = 0
            for line in lines:
                buf.append(line)
                size += len(line)
                if size >= CHUNK:
                    await resp.write(b"".join(buf))
                    buf, size = [], 0
            if buf:
                await resp.write(b"".join(buf))
            while True:  # open and silent until the client goes or a relist is forced
                transport = request.transport
                if transport is None or transport.is_closing():
                    break
                if token in self.expired:
                    self.expired.discard(token)
                    await resp.write(
                        b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1",'
                        b'"metadata":{},"status":"Failure","message":"too old resource version",'
                        b'"reason":"Expired","code":410}}\n'
                    )
                    break
                await asyncio.sleep(0.02)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.open_watches -= 1
        return resp


def _serve(ds: Dataset, sock: socket.socket, ready: Any) -> None:
    import gc
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    gc.disable()
    built = build(ds)
    server = _Server(built)

    async def main() -> None:
        app = web.Application(client_max_size=1 << 20)
        app.router.add_route("GET", "/{tail:.*}", server.handle)
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await runner.setup()
        site = web.SockSite(runner, sock, backlog=2048)
        await site.start()
        ready.set()
        await asyncio.Event().wait()

    asyncio.run(main())


class Replay:
    """The replay server in a child process: ``with Replay(ds) as r: r.url("list", token)``."""

    def __init__(self, ds: Dataset) -> None:
        self.ds = ds
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(2048)
        self.port = self.sock.getsockname()[1]
        ctx = multiprocessing.get_context("fork")
        self._ready = ctx.Event()
        self._proc = ctx.Process(target=_serve, args=(ds, self.sock, self._ready), daemon=True)

    def __enter__(self) -> Replay:
        self._proc.start()
        if not self._ready.wait(600):
            raise RuntimeError("replay server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._proc.terminate()
        self._proc.join(10)
        self.sock.close()

    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"
