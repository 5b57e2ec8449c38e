"""The operator runtime: one ``Manager`` runs informers, controllers, leader election, probes and
metrics, and stops gracefully on SIGTERM (see ``informer.manager._manager``)."""

from informer.manager._endpoints import Check, CheckResult
from informer.manager._manager import DEFAULT_PORT, Manager, pod_namespace
from informer.manager._state import ManagerState
from informer.manager._watchdog import LoopWatchdog

__all__ = [
    "DEFAULT_PORT",
    "Check",
    "CheckResult",
    "LoopWatchdog",
    "Manager",
    "ManagerState",
    "pod_namespace",
]
