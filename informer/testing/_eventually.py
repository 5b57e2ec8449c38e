"""``eventually``: wait in a test until a condition holds (Gomega's ``Eventually``, for asyncio).

A condition is a function, sync or async, called again and again until it returns a true value,
which ``eventually`` returns::

    mirror = await eventually(lambda: server.get(CONFIGMAPS, "mirror", namespace="ns"))

    async def mirrored() -> bool:
        obj = await client.get(CONFIGMAPS, "mirror", namespace="ns")
        assert obj["data"] == {"k": "v"}, obj["data"]  # the message shows in the failure
        return True

    await eventually(mirrored, timeout=5)

A call that returns a false value (``None`` included: a lookup of something not there yet) or
raises an ``Exception`` (a failed ``assert``, a ``NotFound``) is retried after ``interval``
seconds. After ``timeout`` seconds it raises an ``AssertionError`` naming the last failure (and
chained to it). An async condition that hangs is cut at the deadline. ``BaseException``s
(cancellation, ``KeyboardInterrupt``) pass through. A check written with ``assert`` ends with
``return True``: returning ``None`` never passes, so that a lookup answering ``None`` for "not
there yet" cannot pass by mistake.

Prefer waiting on an event where the code under test offers one; polling is for conditions
nothing announces (what another process wrote, what a server shows).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["eventually"]

T = TypeVar("T")


async def eventually(
    condition: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = 10.0,
    interval: float = 0.01,
    message: str = "",
) -> T:
    """Call ``condition`` until it returns a true value and return that (see the module docstring);
    ``AssertionError`` (with ``message``, if given, and the last failure) after ``timeout``."""
    if timeout < 0 or interval < 0:
        raise ValueError("timeout and interval must be >= 0")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    attempts = 0
    failure: BaseException | None = None
    described = "no attempt"
    while True:
        attempts += 1
        try:
            result = condition()
            if inspect.isawaitable(result):
                async with asyncio.timeout_at(deadline):
                    result = await result
        except TimeoutError as exc:
            if loop.time() < deadline or failure is None:  # else: keep the failure before it
                failure, described = exc, "TimeoutError: the condition did not return in time"
        except Exception as exc:  # not there yet: retried, reported if it is the last one
            failure, described = exc, f"{type(exc).__name__}: {exc}"
        else:
            if result:
                return result
            failure, described = None, f"returned {result!r}"
        if loop.time() >= deadline:
            prefix = f"{message}: " if message else ""
            raise AssertionError(
                f"{prefix}not true after {timeout} s ({attempts} attempts); last: {described}"
            ) from failure
        await asyncio.sleep(min(interval, max(0.0, deadline - loop.time())))
