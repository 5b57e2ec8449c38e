"""The changes a write to the cache yields: :class:`Delta`, and the :class:`Tombstone` of a deletion
inferred from a relist.

Kept apart from the store so that everything downstream (informer, controller, CLI) can name a
change without reaching into the cache's machinery.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import msgspec

from informer.objects import KubeObject


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A key that vanished in a relist (client-go's ``DeletedFinalStateUnknown``).

    The object was deleted while the watch was not running; ``obj`` is the last state the cache had,
    not the object's final state.
    """

    key: str
    obj: KubeObject


class Delta(msgspec.Struct, frozen=True, gc=False):
    """One change to the cache.

    * ``added``: ``obj`` is the new object, ``old`` is None; ``is_initial`` for adds of the first
      sync.
    * ``updated``: ``obj`` is the new object, ``old`` the previously cached copy.
    * ``deleted``: ``obj`` is the object from the DELETED event (its final state), or a
      :class:`Tombstone` when the deletion was inferred from a relist; ``old`` the cached copy.

    ``from_list`` tells where the change was found: True for every delta of a list
    (``Store.replace``: the first one, or a relist after a 410, a restore or a consistent relist),
    False for a live watch event. A controller queues list changes behind live ones
    (controller-runtime's priority queue), whichever list found them.

    (A frozen ``msgspec.Struct`` the garbage collector does not track: a sync of 100,000 objects
    makes 100,000 of them, in a tenth of the time a frozen dataclass takes to build.)
    """

    type: Literal["added", "updated", "deleted"]
    obj: KubeObject | Tombstone
    old: KubeObject | None
    is_initial: bool = False
    from_list: bool = False
