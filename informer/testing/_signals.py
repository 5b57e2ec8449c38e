"""Wake-ups between the server's parts: a re-armable signal and waits on conditions."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

__all__ = ["Signal", "wait_until"]


class Signal:
    """Something happened: whoever took ``event`` before checking its condition is woken.

    ``notify`` sets the current event and arms a fresh one, so a waiter never misses a change that
    happens between its check and its wait (it holds the event it checked against).
    """

    def __init__(self) -> None:
        self.event = asyncio.Event()

    def notify(self) -> None:
        self.event.set()
        self.event = asyncio.Event()


async def wait_until(
    signal: Signal,
    check: Callable[[], Awaitable[bool]],
    timeout: float,
    describe: Callable[[], str],
) -> None:
    """Until ``check()`` holds, re-checking whenever ``signal`` fires; TimeoutError(describe())."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        changed = signal.event
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise TimeoutError(describe())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(remaining):
                await changed.wait()
