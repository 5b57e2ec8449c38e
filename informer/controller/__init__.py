"""Controllers: informer changes become keys in a work queue; workers reconcile them, with
read-your-own-writes (no reconcile on a cache older than the controller's own last write)."""

from informer.controller._filters import EventFilter, generation_changed
from informer.controller._keys import Mapper, Request, Result, controller_owner
from informer.controller._runner import Controller, ControllerState, ControllerStats, Reconcile

__all__ = [
    "Controller",
    "ControllerState",
    "ControllerStats",
    "EventFilter",
    "Mapper",
    "Reconcile",
    "Request",
    "Result",
    "controller_owner",
    "generation_changed",
]
