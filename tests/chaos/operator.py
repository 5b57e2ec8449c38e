"""The controller of the chaos runs: one child Secret per parent ConfigMap, read-your-own-writes.

Its reconcile is the classic one that goes wrong on a stale cache: "if my cache shows no child,
create it". Checked:

- ``duplicate_create``: a child created twice for the same parent (same uid) and kept (a create
  for a parent already deleted on the server, which the garbage collector takes at once, is
  counted as ``children_collected_at_once``);
- ``stale_reconcile``: a reconcile started while the children's cache had not yet seen the
  controller's own last write for that key (what read-your-own-writes must prevent);
- ``operator_end_state``: after quiescence, every parent has exactly one child controlled by it
  (same uid) that carries the parent's last ``data`` (no change lost on the way to a
  reconcile), and no child outlives its parent (the server's garbage collector removes them).

A 409 AlreadyExists on a child create (a create whose answer was lost in a server restart, then
retried) is counted (``child_create_conflicts``), not a violation: nothing was created twice.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from informer.client import Client
from informer.controller import Controller, Request
from informer.errors import AlreadyExists, NotFound
from informer.informer import Informer
from informer.ownership import set_controller_reference
from informer.resource import CONFIGMAPS, SECRETS
from informer.testing import ApiServer
from informer.workqueue import ExponentialBackoff

Violate = Callable[[str, str], None]


VERSION = "chaos/parent-data"  # the child's copy of its parent's data: kept up to date


def child_name(parent: str) -> str:
    return f"{parent}-child"


def _version_of(parent: Mapping[str, Any]) -> str:
    return str((parent.get("data") or {}).get("v", ""))


class ChildOperator:
    """The controller under test and what it did."""

    def __init__(
        self,
        api: Any,
        parents: Informer,
        children: Informer,
        server: ApiServer,
        violate: Violate,
        figures: Counter[str],
    ) -> None:
        self.parents = parents
        self.children = children
        self.violate = violate
        self.figures = figures
        self.server = server
        self.client = Client(api)
        self.created: dict[tuple[str, str], int] = {}  # (child key, parent uid) -> creates
        self.last_write: dict[str, str] = {}  # request key -> RV of our last child write
        self.controller = Controller(
            self.reconcile,
            for_=parents,
            owns=[children],
            client=self.client,
            workers=2,
            freshness_timeout=2.0,
            shutdown_timeout=5.0,
            rate_limiter=ExponentialBackoff(base=0.005, maximum=0.2),
        )

    async def reconcile(self, request: Request) -> float | None:
        self.figures["reconciles"] += 1
        written = self.last_write.get(request.key)
        if written is not None and not self.children.store.is_fresh(written):
            self.violate(
                "stale_reconcile",
                f"{request.key}: children's cache at {self.children.store.resource_version}, "
                f"own last write at {written}",
            )
        parent = self.parents.store.get(request.name, request.namespace)
        if parent is None:
            return None  # the server's garbage collector removes its child
        name = child_name(request.name)
        child = self.children.store.get(name, request.namespace)
        version = _version_of(parent)
        if child is not None:
            meta = child.get("metadata", {})
            if not any(ref.get("uid") == parent.uid for ref in meta.get("ownerReferences") or []):
                return 0.05  # the child of an earlier parent of that name, being collected
            if (meta.get("annotations") or {}).get(VERSION) == version:
                return None
            try:
                patched = await self.client.patch(
                    SECRETS,
                    name,
                    {"metadata": {"annotations": {VERSION: version}}},
                    namespace=request.namespace,
                )
            except NotFound:  # collected meanwhile: the next reconcile creates it again
                return None
            self.figures["children_updated"] += 1
            self.last_write[request.key] = patched.resource_version
            return None
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": request.namespace,
                "annotations": {VERSION: version},
            },
            "data": {},
        }
        set_controller_reference(body, parent)
        try:
            created = await self.client.create(SECRETS, body)
        except AlreadyExists:
            self.figures["child_create_conflicts"] += 1
            raise
        except NotFound:  # the namespace or the parent is gone meanwhile
            return None
        self.figures["children_created"] += 1
        kept = self.server.get(SECRETS, name, request.namespace)
        if kept is None or kept["metadata"]["uid"] != created.uid:
            # the parent was already gone on the server (our cache had not seen its delete yet):
            # the garbage collector took the new child at once; nothing exists twice
            self.figures["children_collected_at_once"] += 1
            return None
        key = (f"{request.namespace}/{name}", parent.uid)
        self.created[key] = self.created.get(key, 0) + 1
        if self.created[key] > 1:
            self.violate("duplicate_create", f"{key[0]} created twice for parent uid {key[1]}")
        self.last_write[request.key] = created.resource_version
        return None

    def end_state_problems(self, server: ApiServer) -> list[str]:
        """What differs from "one child per parent, controlled by it, no orphans"."""
        parents = {
            (p["metadata"]["namespace"], p["metadata"]["name"]): p
            for p in server.list_objects(CONFIGMAPS)
        }
        problems = []
        children: dict[tuple[str, str], dict[str, Any]] = {}
        for c in server.list_objects(SECRETS):
            meta = c["metadata"]
            children[(meta["namespace"], meta["name"])] = meta
        for (ns, name), parent in parents.items():
            uid = parent["metadata"]["uid"]
            meta = children.get((ns, child_name(name)))
            if meta is None:
                problems.append(f"{ns}/{name} has no child")
                continue
            owners = [r.get("uid") for r in meta.get("ownerReferences") or []]
            if uid not in owners:
                problems.append(f"{ns}/{name}: child owned by {owners}, not {uid}")
            elif (meta.get("annotations") or {}).get(VERSION) != _version_of(parent):
                problems.append(f"{ns}/{name}: child not updated to its parent's last change")
        live = {p["metadata"]["uid"] for p in parents.values()}
        for (ns, name), meta in children.items():
            if not live.intersection(r.get("uid") for r in meta.get("ownerReferences") or []):
                problems.append(f"orphan child {ns}/{name}")
        return problems

    async def quiesce(self, server: ApiServer, timeout: float) -> list[str]:
        """Until the queue is idle and the end state holds (or ``timeout``); what still differs."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            stats = self.controller.statistics()
            problems = self.end_state_problems(server)
            idle = stats.active == 0 and stats.queue.depth == 0
            if (idle and not problems) or loop.time() >= deadline:
                return problems
            server.send_bookmarks(force=True)
            await asyncio.sleep(0.02)  # the queue's requeue delays have no event to await
