"""A handler's queue gives back its memory once it has delivered a relist's changes: after a
sync of N objects it holds nothing proportional to N (a Python dict never shrinks by itself)."""

from __future__ import annotations

import dataclasses
import gc
import tracemalloc

import pytest

from informer.informer import Handler
from informer.objects import KubeObject
from informer.store import Delta


@pytest.mark.parametrize("push", ["push_all", "push_list"])
async def test_a_handler_holds_no_memory_for_the_changes_it_delivered(push: str) -> None:
    objs = [
        KubeObject.from_raw(b'{"metadata":{"name":"c%d","resourceVersion":"%d"}}' % (i, i + 1))
        for i in range(20_000)
    ]
    delivered: list[int] = []
    handler = Handler(lambda d: delivered.append(1) or None, "h")
    handler.start()
    try:
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        deltas = [Delta("added", o, None, True, from_list=True) for o in objs]
        getattr(handler, push)(deltas)
        del deltas
        await handler.wait_idle()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
    finally:
        await handler.stop()
    assert len(delivered) == 20_000
    # the delivered count's list grows by 20,000 pointers (~160 KB); a kept queue would add
    # a 20,000-key table (~1 MB) on top
    assert held < 400_000, held


@pytest.mark.parametrize("strategy", ["list", "stream"])
async def test_a_large_list_gives_the_freed_heap_back(
    strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page bodies a list frees lie between the cache's objects; glibc keeps them unless
    trimmed (100,000 ConfigMaps: 40 B per object of RSS, benchmarks/object_bytes.py). A list
    of _TRIM_AFTER_LIST objects or more trims once its handlers had their turn; a smaller one
    does not."""
    from conftest import FAST, cm, wait_until

    import informer.reflector._core as core
    from informer import Informer
    from informer.resource import CONFIGMAPS
    from informer.testing import ApiServer
    from informer.transport import Transport

    trims: list[int] = []
    seen: list[int] = []
    monkeypatch.setattr(core, "trim", lambda: trims.append(len(seen)))
    monkeypatch.setattr(core, "_TRIM_AFTER_LIST", 300)  # (10,000: too many to create here)
    async with ApiServer() as server:
        for i in range(core._TRIM_AFTER_LIST):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        api = server.api_client()
        options = dataclasses.replace(FAST, list_strategy=strategy, page_size=100)
        inf = Informer(Transport(api), CONFIGMAPS, options=options)
        inf.add_handler(on_add=lambda obj, initial: seen.append(1))
        async with inf:
            await wait_until(lambda: trims != [])
            assert trims == [core._TRIM_AFTER_LIST]  # after the handler saw every object
            server.delete(CONFIGMAPS, "c0", namespace="default")
            await inf.stop()  # started again: a relist of one object fewer
            inf.start()
            await wait_until(lambda: inf.statistics().relists == 1)
            assert trims == [core._TRIM_AFTER_LIST]
        await api.close()
