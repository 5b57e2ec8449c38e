"""Paginated LIST: every page of one list, and Exact snapshot reads with verification.

All pages of one list are served at the first page's RV; continuation requests carry only
``continue``, ``limit`` and the selectors (the shard selector too: a continue token does not
remember it, and a page asked without it would be unfiltered). An expired continue token raises
``ContinueExpired`` carrying the first page's RV so the caller can restart at "not older than" it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from informer.errors import (
    ApiError,
    ResourceExpired,
    ShardSelectorRejected,
    TooLargeResourceVersion,
    TooManyRequests,
    TransportError,
)
from informer.objects import Known, KubeObject, PagePacking, Trim
from informer.resource import Resource
from informer.shards import InvalidShardSelector, ShardSelector, parse_selector
from informer.transport import ListPage, Transport

__all__ = [
    "ContinueExpired",
    "ListResult",
    "PageRetry",
    "ResourceVersionMismatch",
    "list_all",
    "list_exact",
    "retryable_page_error",
    "server_applied",
]


@dataclass(frozen=True, slots=True)
class ListResult:
    """A complete list: all items and the ListMeta RV they were read at.

    With a shard selector: ``unfiltered_pages`` counts the pages the server answered without
    ``shardInfo`` (it ignored the selector: their items were filtered here, by the same hash),
    ``filtered_out`` the items dropped so.
    """

    items: list[KubeObject]
    resource_version: str
    pages: int
    unfiltered_pages: int = 0
    filtered_out: int = 0


def server_applied(page: ListPage, selector: ShardSelector) -> bool:
    """Whether ``page`` says the server filtered it by ``selector``: its ``shardInfo`` holds the
    same ranges (the echo is in the server's spelling: compared parsed, not as strings)."""
    if page.shard_info is None:
        return False
    try:
        echo = parse_selector(page.shard_info)
    except InvalidShardSelector:
        return False
    return echo.field is selector.field and echo.shard_set == selector.shard_set


class ContinueExpired(ResourceExpired):
    """A continuation of a paginated list expired (410); ``list_rv`` is the first page's RV."""

    def __init__(self, cause: ResourceExpired, list_rv: str) -> None:
        super().__init__(
            cause.code, cause.reason, cause.message, cause.details, status=cause.status
        )
        self.list_rv = list_rv


class ResourceVersionMismatch(ApiError):
    """An Exact list came back at another resource version, even with a limit set."""

    def __init__(self, wanted: str, got: str) -> None:
        super().__init__(
            200,
            "ResourceVersionMismatch",
            f"asked for exactly {wanted!r}, server listed at {got!r}",
        )
        self.wanted = wanted
        self.got = got


PageRetry = Callable[[Exception, int], Awaitable[bool]]
"""Asked when a page failed transiently (429, a 5xx that is not "too large RV", a cut
connection) with the error and how many times this page failed so far; it waits (e.g. for the
429's Retry-After) and returns True to request the same page again, or False to give up."""

PageArrived = Callable[[ListPage], None]
"""Told of every page that arrived: the list moved on (a retry policy's count starts over)."""


def retryable_page_error(exc: Exception) -> bool:
    """True when re-sending the same page request is safe and may succeed: a LIST is a read, and a
    continue token stays valid until its RV is compacted (which answers 410, never retried)."""
    if isinstance(exc, TooManyRequests | TransportError):
        return True
    if isinstance(exc, TooLargeResourceVersion | ResourceExpired | ShardSelectorRejected):
        return False  # the caller's fallbacks decide (consistent read, restart)
    return isinstance(exc, ApiError) and 500 <= exc.code <= 599


async def list_all(
    transport: Transport,
    resource: Resource,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    resource_version: str | None = None,
    resource_version_match: str | None = None,
    limit: int | None = 500,
    known: Known | None = None,
    trim: Trim | None = None,
    retry_page: PageRetry | None = None,
    on_page: PageArrived | None = None,
    shard_selector: ShardSelector | None = None,
    pack: PagePacking | None = None,
) -> ListResult:
    """Every page of one list, as the request's first page decides (``known``, ``trim``: see
    ``KubeObject.from_list_item``).

    ``pack``: a store that holds its objects compressed packs each page's items as the page
    arrives, straight from the page's bytes (``PagePacking``), while the next page is on its
    way (the compression runs in the compression thread; ``pack.drain()`` before the list is
    returned).

    ``shard_selector`` goes with every page; a page without the matching ``shardInfo`` was not
    filtered by the server, and its items are filtered here (see ``ListResult``).

    The next page is requested before the items of the current one are built (one request
    ahead, like a reader's read-ahead): on a real server, which takes a while to answer each
    page, the sync then costs about the longer of the two instead of their sum.

    A page that fails transiently is requested again, with the same continue token, as long as
    ``retry_page`` says so (client-go's request retries do this for 429 with Retry-After):
    restarting the list from its first page instead would, on a server throttling a share of
    its requests, never get to the end of a long list. ``on_page`` is told of every page that
    arrived (pages that succeed between failures are progress).
    """

    async def page_at(
        rv: str | None = None, rvm: str | None = None, token: str | None = None
    ) -> ListPage:
        failures = 0
        while True:
            try:
                page = await transport.list_page(
                    resource,
                    namespace=namespace,
                    limit=limit,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    resource_version=rv,
                    resource_version_match=rvm,
                    continue_=token,
                    known=known,
                    trim=trim,
                    shard_selector=shard_selector,
                    pack=pack,
                )
            except Exception as exc:
                failures += 1
                if (
                    retry_page is None
                    or not retryable_page_error(exc)
                    or not await retry_page(exc, failures)
                ):
                    raise
            else:
                if on_page is not None:
                    on_page(page)
                return page

    page = await page_at(resource_version, resource_version_match)
    list_rv = page.resource_version
    items: list[KubeObject] = []
    pages = 1
    unfiltered = dropped = 0
    while True:
        token = page.continue_
        ahead = asyncio.ensure_future(page_at(token=token)) if token else None
        try:
            if ahead is not None:
                # let it send its request: the server prepares the next page while this one's
                # items are built (the body stays in the socket until the build is done)
                await asyncio.sleep(0)
            if shard_selector is None or server_applied(page, shard_selector):
                kept = page.items
            else:
                unfiltered += 1
                field, ranges = shard_selector.field, shard_selector.shard_set
                kept = [o for o in page.items if ranges.contains(o.shard_hash(field))]
                dropped += page.item_count - len(kept)
            if pack is not None:
                await pack(kept, items)
            items.extend(kept)
        except BaseException:
            if ahead is not None:
                ahead.cancel()
                ahead.add_done_callback(_retrieve)
            raise
        if ahead is None:
            if pack is not None:
                await pack.drain()  # no object keeps its slice of a page past here
            return ListResult(items, list_rv, pages, unfiltered, dropped)
        try:
            page = await ahead
        except ResourceExpired as exc:
            raise ContinueExpired(exc, list_rv) from exc
        pages += 1


def _retrieve(task: asyncio.Future[ListPage]) -> None:
    """Consume the outcome of a read-ahead nobody awaits (no "never retrieved" warning)."""
    if not task.cancelled():
        task.exception()


async def list_exact(
    transport: Transport,
    resource: Resource,
    resource_version: str,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    limit: int = 500,
    shard_selector: ShardSelector | None = None,
) -> ListResult:
    """A snapshot at exactly ``resource_version`` (``ResourceExpired`` when compacted).

    Servers older than v1.19 ignore ``resourceVersionMatch`` and list "not older than" when no
    limit is set; a mismatch is retried with a limit (Exact on those servers), and a second
    mismatch raises ``ResourceVersionMismatch``.
    """
    common: dict[str, Any] = {
        "namespace": namespace,
        "label_selector": label_selector,
        "field_selector": field_selector,
        "resource_version": resource_version,
        "resource_version_match": "Exact",
        "shard_selector": shard_selector,
    }
    result = await list_all(transport, resource, limit=None, **common)
    if result.resource_version == resource_version:
        return result
    result = await list_all(transport, resource, limit=limit, **common)
    if result.resource_version != resource_version:
        raise ResourceVersionMismatch(resource_version, result.resource_version)
    return result
