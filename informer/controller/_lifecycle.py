"""A controller's lifecycle: its states, and the driver that runs one start (or ``run``) of it.

Invariant (the informer's, ``informer.informer``): at most one run of a controller is active at a
time (one set of handlers, one set of workers on its one queue). A start during a stop is chained
after it: its driver first waits for the teardown of the driver it replaces, so the old run's
handlers are removed and its workers ended before the new run registers and queues anything.
Only the latest driver writes the controller's state; an older one ending does not.
"""

from __future__ import annotations

import asyncio
import enum

__all__ = ["ControllerState", "Driver", "ended"]


class ControllerState(enum.Enum):
    """Where a controller is in its lifecycle (``Controller.state``).

    ``NEW`` -> ``SYNCING`` -> ``RUNNING`` -> ``STOPPING`` -> ``STOPPED`` (or ``FAILED``), and
    from ``STOPPED``, ``FAILED`` or ``STOPPING`` back to ``SYNCING`` on the next start or run.
    """

    NEW = "new"  # never started
    SYNCING = "syncing"  # started: waiting for a previous run's teardown, the informers' sync,
    # the initial state in the queue and (catch_up) the caches to catch up with the server
    RUNNING = "running"  # workers reconciling
    STOPPING = "stopping"  # no new key taken; reconciles in flight finishing
    STOPPED = "stopped"  # stopped (stop, cancellation): may be started again
    FAILED = "failed"  # the last run ended with an error (``Controller.error``): may be started
    # again


ACTIVE = frozenset({ControllerState.SYNCING, ControllerState.RUNNING})


class Driver:
    """One start or ``run`` of a controller: the task running it, the driver it must wait for,
    and how it ended."""

    task: asyncio.Task[None]

    def __init__(self, previous: Driver | None, *, by_run: bool) -> None:
        self.previous = previous
        self.by_run = by_run  # driven by run() (which raises its failure), else by start()
        self.failure_reported = False

    @property
    def error(self) -> BaseException | None:
        """The exception the run ended with (None while running, when stopped or cancelled)."""
        if not self.task.done() or self.task.cancelled():
            return None
        return self.task.exception()


async def ended(driver: Driver | None) -> None:
    """Until ``driver`` and every older driver it may still be waiting for have ended."""
    while driver is not None:
        await asyncio.wait([driver.task])
        driver = driver.previous  # None once it had waited for it; set if it never ran
