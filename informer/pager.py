"""Paginated LIST: every page of one list, and Exact snapshot reads with verification.

All pages of one list are served at the first page's RV; continuation requests carry only
``continue``, ``limit`` and the selectors. An expired continue token raises ``ContinueExpired``
carrying the first page's RV so the caller can restart at "not older than" it.
"""

from __future__ import annotations

from dataclasses import dataclass

from informer.errors import ApiError, ResourceExpired
from informer.objects import Known, KubeObject, Trim
from informer.resource import Resource
from informer.transport import Transport

__all__ = ["ContinueExpired", "ListResult", "ResourceVersionMismatch", "list_all", "list_exact"]


@dataclass(frozen=True, slots=True)
class ListResult:
    """A complete list: all items and the ListMeta RV they were read at."""

    items: list[KubeObject]
    resource_version: str
    pages: int


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
) -> ListResult:
    """Every page of one list, as the request's first page decides (``known``, ``trim``: see
    ``KubeObject.from_list_item``)."""
    page = await transport.list_page(
        resource,
        namespace=namespace,
        resource_version=resource_version,
        resource_version_match=resource_version_match,
        limit=limit,
        label_selector=label_selector,
        field_selector=field_selector,
        known=known,
        trim=trim,
    )
    items = page.items
    list_rv = page.resource_version
    pages = 1
    token = page.continue_
    while token:
        try:
            page = await transport.list_page(
                resource,
                namespace=namespace,
                limit=limit,
                continue_=token,
                label_selector=label_selector,
                field_selector=field_selector,
                known=known,
                trim=trim,
            )
        except ResourceExpired as exc:
            raise ContinueExpired(exc, list_rv) from exc
        items.extend(page.items)
        pages += 1
        token = page.continue_
    return ListResult(items, list_rv, pages)


async def list_exact(
    transport: Transport,
    resource: Resource,
    resource_version: str,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    limit: int = 500,
) -> ListResult:
    """A snapshot at exactly ``resource_version`` (``ResourceExpired`` when compacted).

    Servers older than v1.19 ignore ``resourceVersionMatch`` and list "not older than" when no
    limit is set; a mismatch is retried with a limit (Exact on those servers), and a second
    mismatch raises ``ResourceVersionMismatch``.
    """

    async def exact(limit: int | None) -> ListResult:
        return await list_all(
            transport,
            resource,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            resource_version_match="Exact",
            limit=limit,
        )

    result = await exact(None)
    if result.resource_version == resource_version:
        return result
    result = await exact(limit)
    if result.resource_version != resource_version:
        raise ResourceVersionMismatch(resource_version, result.resource_version)
    return result
