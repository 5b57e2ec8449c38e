"""The tasks a ``Manager`` runs (controllers, runnables, the election), each under a name, with
every failure read once and kept (controller-runtime's runnable groups and their error channel).

A part's failure (an exception other than its cancellation) is logged once with the part's name
(``manager.part_failed``), whenever it comes: while the manager runs (the manager then stops) or
while it stops (a runnable that raises on its cancellation). ``failures`` keeps them in order;
the manager's outcome is made of them. An exception that several parts raise in turn (a leader's
controller failing, re-raised by the term and by the election) is one failure, named by the first.

Once ``close()`` is called (the manager stops), nothing starts any more: ``spawn`` refuses, and a
part spawned earlier whose task has not begun yet does not call its function at all, so no part
of the application begins after a stop was asked for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

from informer._log import describe_error

__all__ = ["Parts"]

Start = Callable[[], Coroutine[Any, Any, None]]


class Parts:
    """The manager's named tasks (see the module docstring). ``on_failure`` is called after a
    failure was recorded (the manager asks for its stop)."""

    def __init__(self, log: Any, on_failure: Callable[[], None]) -> None:
        self.log = log
        self.failures: list[tuple[str, BaseException]] = []
        self._on_failure = on_failure
        self._tasks: dict[asyncio.Task[None], str] = {}
        self._open = True

    @property
    def open(self) -> bool:
        return self._open

    def close(self) -> None:
        """No part starts from now on."""
        self._open = False

    def spawn(self, name: str, start: Start) -> asyncio.Task[None] | None:
        """Run ``start()`` as the part ``name``; None once closed."""
        if not self._open:
            return None
        task = asyncio.create_task(self._run(start), name=f"informer-manager-{name}")
        self._tasks[task] = name
        task.add_done_callback(partial(self._ended, name))
        return task

    async def _run(self, start: Start) -> None:
        if not self._open:  # closed between the spawn and the task's first step
            return
        await start()  # a function that is not a coroutine function fails here, named

    def _ended(self, name: str, task: asyncio.Task[None]) -> None:
        self._tasks.pop(task, None)
        if task.cancelled():
            return
        exc = task.exception()  # read here: never "Task exception was never retrieved"
        if exc is not None:
            self.record(name, exc)

    def record(self, name: str, exc: BaseException) -> None:
        """Keep and log a failure of part ``name`` (once, however many parts re-raise it)."""
        if any(exc is seen for _, seen in self.failures):
            return
        self.failures.append((name, exc))
        self.log.error("manager.part_failed", part=name, error=describe_error(exc))
        self._on_failure()

    def named(self) -> list[tuple[str, asyncio.Task[None]]]:
        """Every part's name and task, not ended yet, in the order they started."""
        return [(name, task) for task, name in self._tasks.items() if not task.done()]

    def running(self) -> list[str]:
        """The names of the parts whose task has not ended, in the order they started."""
        return [name for task, name in self._tasks.items() if not task.done()]

    def tasks(self) -> list[asyncio.Task[None]]:
        """Every part's task not ended yet."""
        return [task for task in self._tasks if not task.done()]
