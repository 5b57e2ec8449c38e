"""SIGTERM and SIGINT for a process that stops gracefully: the first asks for a graceful stop, a
second one exits at once (status 1), as controller-runtime's signal handler does.

Kubernetes stops a container with SIGTERM and kills it ``terminationGracePeriodSeconds`` later;
a person at a terminal presses Ctrl-C, and presses it again when they do not want to wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import NoReturn

from informer._log import get_logger

__all__ = ["EXIT_ON_SECOND_SIGNAL", "SIGNALS", "exit_process", "stop_on_signals"]

_log = get_logger("informer.manager")

SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT)
EXIT_ON_SECOND_SIGNAL = 1


def exit_process(status: int) -> NoReturn:
    """Exit at once with ``status``, the logs flushed first: no cleanup, no task awaited (a task
    that ignores its cancellation would keep ``asyncio.run`` from ever returning)."""
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(status)


def _exit_now(sig: signal.Signals) -> None:
    _log.warning("manager.exit_on_second_signal", signal=sig.name)
    exit_process(EXIT_ON_SECOND_SIGNAL)  # no cleanup: the user asked twice


@contextlib.contextmanager
def stop_on_signals(
    stop: Callable[[str], None], signals: tuple[signal.Signals, ...] = SIGNALS
) -> Iterator[None]:
    """While inside: the first of ``signals`` calls ``stop(name)``; the next exits the process.

    The handlers run on the running loop (``loop.add_signal_handler``) and are removed on exit
    (the default dispositions are restored).
    """
    loop = asyncio.get_running_loop()
    received = 0

    def on_signal(sig: signal.Signals) -> None:
        nonlocal received
        received += 1
        if received > 1:
            _exit_now(sig)
        _log.info("manager.signal", signal=sig.name)
        stop(sig.name)

    installed: list[signal.Signals] = []
    try:
        for sig in signals:
            try:
                loop.add_signal_handler(sig, on_signal, sig)
            except (NotImplementedError, RuntimeError, ValueError) as exc:  # not the main thread
                _log.warning("manager.signal_not_handled", signal=sig.name, why=type(exc).__name__)
            else:
                installed.append(sig)
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
