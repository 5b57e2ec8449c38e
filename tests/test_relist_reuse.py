"""A relist keeps the cached instance of every object whose RV did not change.

The new list's bytes of an unchanged object are dropped as its page is decoded, so a relist never
holds two full copies of the cache; only changed objects are new. Paginated and streaming lists
alike, with and without a transform.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import cm, running_informer, wait_until

from informer.objects import KubeObject
from informer.resource import CONFIGMAPS
from informer.store import Compression
from informer.testing import ApiServer, Fault
from informer.transforms import DROP_MANAGED_FIELDS


def upper_data(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "data": {k: v.upper() for k, v in obj.get("data", {}).items()}}


@pytest.mark.parametrize("compression", [None, Compression(min_objects=3, train_objects=8)])
@pytest.mark.parametrize("strategy", ["list", "stream"])
@pytest.mark.parametrize("transform", [None, DROP_MANAGED_FIELDS, upper_data])
async def test_relist_that_changes_nothing_keeps_every_instance(
    strategy: str,
    transform: Any,
    compression: Compression | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with ApiServer() as server:
        for i in range(7):
            server.create(CONFIGMAPS, cm(f"c{i}", namespace=f"ns{i % 2}"))
        async with running_informer(
            server, list_strategy=strategy, transform=transform, compression=compression, sync=False
        ) as inf:
            await inf.wait_for_sync(timeout=10)
            before = {o.key: o for o in inf.store.list()}
            created: list[KubeObject] = []
            make = KubeObject._make.__func__  # type: ignore[attr-defined]

            def counting(cls: type[KubeObject], *args: Any) -> KubeObject:
                obj: KubeObject = make(cls, *args)
                created.append(obj)
                return obj

            monkeypatch.setattr(KubeObject, "_make", classmethod(counting))
            line = KubeObject.from_event_line.__func__  # type: ignore[attr-defined]

            def counting_line(cls: type[KubeObject], raw: bytes) -> tuple[str, KubeObject]:
                type_, obj = line(cls, raw)  # builds its object inline, not through _make
                created.append(obj)
                return type_, obj

            monkeypatch.setattr(KubeObject, "from_event_line", classmethod(counting_line))
            await inf.stop()  # started again, it relists an unchanged set
            inf.start()
            await wait_until(lambda: inf.statistics().relists == 1)
            after = {o.key: o for o in inf.store.list()}
            assert after.keys() == before.keys()
            assert all(after[k] is before[k] for k in before)
            if strategy == "list":  # pages are matched to the cache as they are decoded
                assert created == []
            # a streamed relist decodes each line into a short-lived object, dropped at once
            assert not any(o is after.get(o.key) for o in created)
            if strategy == "stream" and transform is not DROP_MANAGED_FIELDS:
                assert created  # (a trimmed line is built by _from_fields: not counted)
            if transform is upper_data:
                assert after["ns0/c0"]["data"] == {"k": "C0"}


async def test_relist_replaces_only_changed_objects() -> None:
    async with ApiServer() as server:
        for name in ("a", "b", "c"):
            server.create(CONFIGMAPS, cm(name))
        server.faults.add(Fault(verb="watch", nth=1, status=410))
        async with running_informer(server, sync=False) as inf:
            await inf.wait_for_sync(timeout=10)
            before = {o.key: o for o in inf.store.list()}
            await server.wait_for_requests(lambda r: r.verb == "watch", count=1)
            server.patch(CONFIGMAPS, "b", {"data": {"k": "b2"}}, namespace="default")
            await wait_until(lambda: inf.statistics().relists >= 1)
            await wait_until(lambda: inf.store.get("b", "default")["data"] == {"k": "b2"})
            assert inf.store.get("a", "default") is before["default/a"]
            assert inf.store.get("c", "default") is before["default/c"]
            assert inf.store.get("b", "default") is not before["default/b"]
