"""A handler's queue gives back its memory once it has delivered a relist's changes: after a
sync of N objects it holds nothing proportional to N (a Python dict never shrinks by itself)."""

from __future__ import annotations

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
