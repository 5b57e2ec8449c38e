"""Initial-sync progress: items listed so far out of ``remainingItemCount``, per collection.

A ``Transport`` that notes what each LIST page brought; informers built on it show their progress
without any hook in the reflector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from informer.resource import Resource
from informer.transport import ListPage, Transport

__all__ = ["ListProgress", "ProgressTransport"]


@dataclass
class ListProgress:
    """The list in flight (or the last one) of one collection."""

    listed: int = 0
    remaining: int | None = None
    pages: int = 0
    done: bool = False
    sharded: bool = False
    """The list is of some shard ranges (KEP-5866 ``shardSelector``): ``remainingItemCount``
    counts the unfiltered collection, so ``total`` is an upper bound, not the list's size."""

    @property
    def total(self) -> int | None:
        """Items of the whole list when the server said (``remainingItemCount``), else None;
        for a sharded list, at most this many (the count ignores the shard filter)."""
        return None if self.remaining is None else self.listed + self.remaining

    def describe(self) -> str:
        """``listed/total``, ``listed/?``, or ``listed/<=total`` for a sharded list."""
        total = self.total
        if total is None:
            return f"{self.listed}/?"
        return f"{self.listed}/<={total}" if self.sharded else f"{self.listed}/{total}"


class ProgressTransport(Transport):
    """A ``Transport`` recording list progress by (resource, namespace, selectors)."""

    def __init__(self, api_client: Any, **kwargs: Any) -> None:
        super().__init__(api_client, **kwargs)
        self.progress: dict[tuple[Resource, str | None, str | None, str | None], ListProgress] = {}

    def progress_of(
        self,
        resource: Resource,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ListProgress | None:
        return self.progress.get((resource, namespace, label_selector, field_selector))

    async def list_page(self, resource: Resource, **kwargs: Any) -> ListPage:
        page = await super().list_page(resource, **kwargs)
        key = (
            resource,
            kwargs.get("namespace"),
            kwargs.get("label_selector"),
            kwargs.get("field_selector"),
        )
        progress = self.progress.get(key)
        if progress is None or not kwargs.get("continue_"):
            progress = self.progress[key] = ListProgress()
        progress.listed += page.item_count
        progress.pages += 1
        progress.remaining = page.remaining_item_count
        progress.sharded = kwargs.get("shard_selector") is not None
        progress.done = page.continue_ is None
        return page
