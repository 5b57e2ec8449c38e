"""What the Manager's probes check (``/healthz``: liveness, ``/readyz``: readiness).

Liveness asks "restart me?": the event loop keeps time (``LoopWatchdog``) and every informer's
task runs while the manager runs (an informer's task ends only by a bug: its loops never raise).
Readiness asks "count me in?": the manager is not stopping, every informer has synced, and where
this replica runs the controllers (it leads, or there is no election) each has started (synced
and caught up); a standby replica is ready, its caches warm.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from informer.controller import Controller, ControllerState
from informer.informer import Informer, InformerState
from informer.leader_election import ElectionState
from informer.manager._endpoints import Check
from informer.manager._state import ManagerState

if TYPE_CHECKING:
    from informer.manager._manager import Manager

__all__ = ["describe", "liveness", "readiness"]

_RUNNING = (ManagerState.STARTING, ManagerState.RUNNING)


def describe(inf: Informer) -> str:
    """An informer's scope for a check's name: ``plural.group[/namespace][?selectors][#name]``."""
    r = inf.reflector
    scope = r.resource.group_resource
    if r.namespace:
        scope += f"/{r.namespace}"
    for selector in (r.label_selector, r.field_selector):
        if selector:
            scope += f"?{selector}"
    return f"{scope}#{inf.name}" if inf.name else scope


def liveness(manager: Manager) -> list[Check]:
    checks = [Check("event-loop", manager.watchdog.check)]
    checks += [Check(f"informer:{describe(i)}", _alive(manager, i)) for i in manager.informers]
    return checks


def readiness(manager: Manager) -> list[Check]:
    checks = [Check("shutdown", lambda: _not_stopping(manager))]
    checks += [Check(f"informer-synced:{describe(i)}", _synced(i)) for i in manager.informers]
    if manager.elector is not None:
        checks.append(Check("leader-election", lambda: _campaigning(manager)))
    checks += [Check(f"controller:{c.name}", _started(manager, c)) for c in manager.controllers]
    return checks


def _alive(manager: Manager, inf: Informer) -> Callable[[], str | None]:
    def check() -> str | None:
        if manager.state in _RUNNING and inf.state is not InformerState.RUNNING:
            return f"informer {inf.state.value}"
        return None

    return check


def _synced(inf: Informer) -> Callable[[], str | None]:
    return lambda: None if inf.has_synced else "not synced"


def _not_stopping(manager: Manager) -> str | None:
    return None if manager.state in (ManagerState.NEW, *_RUNNING) else "shutting down"


def _campaigning(manager: Manager) -> str | None:
    """Once synced, the election runs (leading or following)."""
    elector = manager.elector
    if manager.state is ManagerState.RUNNING and elector is not None:
        if elector.state is ElectionState.STOPPED and not manager.is_leading:
            return "the election is not running"
    return None


def _started(manager: Manager, controller: Controller) -> Callable[[], str | None]:
    def check() -> str | None:
        if manager.elector is not None and not manager.is_leading:
            return None  # a standby is ready: its caches are warm, it does not reconcile
        if controller.state is not ControllerState.RUNNING:
            return f"controller {controller.state.value}"
        return None

    return check
