"""Event filters: which changes of a controller's ``for_`` objects queue a reconcile
(controller-runtime's predicates; ``Controller(..., for_filter=generation_changed)``).

A filter gets the change (a ``Delta``: ``type`` ``added``/``updated``/``deleted``, the object,
for an update the old one too, and ``from_list``) and returns whether to queue it. A filtered
change is dropped before the queue; periodic resyncs are not filtered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from informer.store import Delta

__all__ = ["EventFilter", "generation_changed"]

EventFilter = Callable[[Delta], bool]
"""True: the change queues its requests; False: it is skipped."""


def _generation(obj: Any) -> object:
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    return metadata.get("generation") if isinstance(metadata, Mapping) else None


def generation_changed(delta: Delta) -> bool:
    """Skip updates that leave ``metadata.generation`` as it was: status-only (and metadata-only)
    changes of objects whose generation tracks their spec (workloads, custom resources with a
    status subresource), so that a controller writing its own status does not reconcile again for
    it (controller-runtime's ``GenerationChangedPredicate``). Adds and deletes always pass, and
    so do updates of objects that keep no generation (ConfigMaps, Secrets: controller-runtime's
    predicate would skip every one of their updates).
    """
    if delta.type != "updated" or delta.old is None:
        return True
    new = _generation(delta.obj)
    return new is None or new != _generation(delta.old)
