"""The server's write history as the writers saw it: what any scope held at any revision.

Every write the chaos writers make goes through the test server's synchronous API, which returns
the object with its new RV; the history keeps one record per write, so the state of a scope at
revision X can be rebuilt and compared with a cache that claims to have seen X. An etcd-like
restore to R cuts the history at R: revisions after R are reused by later writes.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

Selects = Callable[[str, dict[str, str]], bool]


@dataclass(frozen=True, slots=True)
class Record:
    """One write: ``key`` at ``revision`` is now ``labels`` (None: deleted)."""

    revision: int
    key: str
    namespace: str
    labels: dict[str, str] | None


class History:
    """Records by revision; ``state_at`` replays them."""

    def __init__(self) -> None:
        self._records: list[Record] = []
        self._revisions: list[int] = []
        self.restores = 0

    def record(
        self, revision: int, key: str, namespace: str, labels: dict[str, str] | None
    ) -> None:
        if self._revisions and revision <= self._revisions[-1]:
            raise AssertionError(f"history out of order: {revision} after {self._revisions[-1]}")
        self._records.append(Record(revision, key, namespace, labels))
        self._revisions.append(revision)

    def restore(self, revision: int) -> None:
        """Forget every write after ``revision`` (the server was restored to it)."""
        cut = bisect.bisect_right(self._revisions, revision)
        del self._records[cut:]
        del self._revisions[cut:]
        self.restores += 1

    @property
    def last_revision(self) -> int:
        return self._revisions[-1] if self._revisions else 0

    @property
    def writes(self) -> int:
        return len(self._records)

    def state_at(self, revision: int, selects: Selects) -> dict[str, int]:
        """Key -> RV (revision of its last write) of the objects in scope at ``revision``."""
        state: dict[str, int] = {}
        for rec in self._records[: bisect.bisect_right(self._revisions, revision)]:
            if rec.labels is not None and selects(rec.namespace, rec.labels):
                state[rec.key] = rec.revision
            else:
                state.pop(rec.key, None)
        return state

    def left_scope(self, key: str, after: int, upto: int, selects: Selects) -> bool:
        """Whether ``key`` was deleted or moved out of scope by a write in (after, upto]."""
        lo = bisect.bisect_right(self._revisions, after)
        hi = bisect.bisect_right(self._revisions, upto)
        return any(
            rec.key == key and (rec.labels is None or not selects(rec.namespace, rec.labels))
            for rec in self._records[lo:hi]
        )
