"""Random interleavings of ``start``/``stop``/``run``/``async with`` on one object with an
explicit lifecycle (an ``Informer``, a ``Controller``), and the model each must end in.

Each op runs in its own task (``start`` in the caller's), then the caller yields a few times.
The order in which the calls took effect is logged by the tasks themselves; the model, last call
wins: start/enter/run -> running (a run while running is refused), stop/exit -> stopped.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import pytest
from hypothesis import strategies as st

from tests.conftest import wait_until

OPS = st.lists(
    st.tuples(st.sampled_from(["start", "stop", "run", "enter", "exit"]), st.integers(0, 3)),
    min_size=1,
    max_size=8,
)

Step = tuple[str, int]


class Lifecycle(Protocol):
    def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def run(self) -> None: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc: Any) -> Any: ...


@dataclass
class Interleaving:
    """What the calls did, and the model's answer: ``running`` at the end, ever ``started``, the
    ``run`` calls ``refused``, and the ``run`` call (``driver``) driving it at the end, if any."""

    effective: list[Step] = field(default_factory=list)
    runs: dict[int, asyncio.Task[Any]] = field(default_factory=dict)
    running: bool = False
    started: bool = False
    refused: set[int] = field(default_factory=set)
    driver: int | None = None


@asynccontextmanager
async def interleaved(
    target: Lifecycle, ops: list[Step], stopped: Callable[[list[Step], Step], bool]
) -> AsyncIterator[Interleaving]:
    """Run ``ops`` on ``target``; yields once every call took effect, every stop returned and
    every ``run`` that no longer drives it returned (or was refused) as the model says.
    ``stopped(effective, step)``: what must hold when that ``stop`` returned. On exit the
    ``run`` tasks still going are cancelled."""
    out = Interleaving()
    effective, runs = out.effective, out.runs
    stops: list[asyncio.Task[Any]] = []

    async def call(op: str, i: int) -> None:
        effective.append((op, i))  # the same step as the call's synchronous effect
        if op == "stop":
            await target.stop()
            assert stopped(effective, (op, i))
        elif op == "exit":
            await target.__aexit__(None, None, None)
        elif op == "enter":
            await target.__aenter__()
        else:
            await target.run()

    try:
        for i, (op, yields) in enumerate(ops):
            if op == "start":
                effective.append((op, i))
                target.start()
            else:
                task = asyncio.create_task(call(op, i))
                (runs.__setitem__(i, task) if op == "run" else stops.append(task))
            for _ in range(yields):
                await asyncio.sleep(0)
        await wait_until(lambda: len(effective) == len(ops))  # every call has taken effect
        for op, i in effective:
            if op == "run" and out.running:
                out.refused.add(i)
            elif op in ("start", "enter") and out.running:
                pass  # already running: nothing changes, whoever drives it
            elif op in ("start", "enter", "run"):
                out.running, out.driver, out.started = True, (i if op == "run" else None), True
            else:
                out.running, out.driver = False, None
        async with asyncio.timeout(10):  # bounds a hang only
            await asyncio.gather(*stops)
            for i, task in runs.items():
                if i in out.refused:
                    with pytest.raises(RuntimeError, match="already running"):
                        await task
                elif i != out.driver:
                    assert await task is None  # stopped: run() returned
        yield out
    finally:
        for task in runs.values():
            task.cancel()
        await asyncio.gather(*runs.values(), return_exceptions=True)
