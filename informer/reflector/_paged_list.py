"""The paginated list sync: LIST by pages, verified not older than the cache, into the store.

- first sync: a consistent paginated list (or "any"); every relist asks
  ``resourceVersion=<last>&resourceVersionMatch=NotOlderThan`` and verifies the answer is not older
  (a stale answer, a lagging replica, is asked again, then replaced by a consistent read);
- 410 on a continuation restarts the list at the first page's RV, then falls back to a
  consistent read; 410 on a first NotOlderThan page (an old server applying Exact) falls back to
  a consistent read;
- a page that failed transiently (429, 5xx, a cut connection) is requested again, a few times:
  after the server's Retry-After when it gave one (not a failure of the backoff: a throttled
  server is not a broken one), else after a backoff of that page's own, from ``initial`` for
  every page (the pages that arrived in between are progress);
- a consistent read older than the cache is the truth: the server's RVs went backwards.
"""

from __future__ import annotations

from informer.errors import ApiError, ResourceExpired, TooLargeResourceVersion
from informer.pager import ContinueExpired, list_all
from informer.reflector._core import _brief, _ReflectorCore
from informer.transport import ListPage


class _PagedList(_ReflectorCore):
    """The reflector's paginated list (``Reflector`` combines it with the other phases)."""

    def _list_request(
        self, restart_rv: str | None, consistent: bool
    ) -> tuple[str | None, str | None]:
        if consistent:
            return None, None
        if restart_rv is not None:
            return restart_rv, "NotOlderThan"
        last = self._not_older_than()
        if last:
            return last, "NotOlderThan"
        if self.options.initial_list == "any":
            return "0", None
        return None, None

    async def _list_sync(self) -> None:
        self._pages_gave_up = False
        consistent = self._force_consistent
        restart_rv: str | None = None
        limit: int | None = self.options.page_size
        stale = too_large = 0
        relist = self.has_synced
        while True:
            rv, rvm = self._list_request(restart_rv, consistent)
            try:
                result = await list_all(
                    self.transport,
                    self.resource,
                    namespace=self.namespace,
                    label_selector=self.label_selector,
                    field_selector=self.field_selector,
                    resource_version=rv,
                    resource_version_match=rvm,
                    limit=limit,
                    known=self._known_item if len(self.store) else None,
                    trim=self._trim(),
                    retry_page=self._retry_page,
                    on_page=self._page_arrived,
                    shard_selector=self._sent_shards(),
                    pack=self._packing(),
                )
            except ContinueExpired as exc:
                self._counters.expired += 1
                self.log.info("reflector.continue_expired", list_rv=exc.list_rv)
                if restart_rv is None and not consistent:
                    restart_rv = exc.list_rv
                elif not consistent:
                    consistent = True
                else:
                    limit = None  # one unpaginated consistent list: cannot expire
                continue
            except ResourceExpired:
                if consistent:
                    raise  # counted (once) by run()
                self._counters.expired += 1
                # an old server applied Exact to NotOlderThan + limit (KEP-2523): consistent read
                self.log.info("reflector.list_expired", rv=rv, match=rvm)
                consistent = True
                continue
            except TooLargeResourceVersion as exc:
                self._counters.too_large += 1
                too_large += 1
                if too_large >= self.options.too_large_retries:
                    consistent = True
                delay = await self._backoff.sleep(exc.retry_after)
                self.log.info("reflector.list_too_large", rv=rv, delay=round(delay, 3))
                continue
            self._counters.list_pages += result.pages
            items = result.items
            if result.unfiltered_pages:
                self._counters.shard_filtered += result.filtered_out
                self._shards_unfiltered("list", result.unfiltered_pages)
            elif self.shard_selector is not None and not self._send_shards:
                items = [o for o in items if not self._out_of_shards(o)]
            last = self._not_older_than()
            if self._is_older(result.resource_version, last):
                if not consistent:
                    self._counters.stale_lists += 1
                    stale += 1
                    self.log.warning(
                        "reflector.stale_list", list_rv=result.resource_version, cache_rv=last
                    )
                    if stale >= self.options.stale_list_retries:
                        consistent = True
                    else:
                        await self._backoff.sleep()
                    continue
                # a consistent read is the truth: the server's RVs went backwards (etcd restore)
                if not self._backwards_counted:
                    self._counters.backwards += 1
                self.log.warning(
                    "reflector.server_went_backwards",
                    list_rv=result.resource_version,
                    cache_rv=last,
                )
            self._counters.lists += 1
            self._apply_list(items, result.resource_version, relist)
            self._force_consistent = False
            self._backwards_counted = False
            return

    def _page_arrived(self, _page: ListPage) -> None:
        self._backoff.answered()  # a run of Retry-After answers has ended

    async def _retry_page(self, exc: Exception, failures: int) -> bool:
        """A page failed transiently (429, 5xx, cut connection): wait and request the same page
        again, up to ``page_retries`` times a page; then the error goes to the loop's usual
        handling (back off, list again from the first page).

        The wait is the server's Retry-After when it gave one (a 429, a 5xx), counted in the
        reflector's run of throttled answers (only a long run with nothing answered in between
        adds the exponential delay); otherwise the next delay of this page's own backoff, which
        starts from ``initial`` for every page: the reflector-wide backoff is not fed, so a long
        list throttled now and then waits what the server asks for each page, no longer."""
        if failures > self.options.page_retries:
            self._pages_gave_up = True
            return False
        self._counters.page_retries += 1
        retry_after = exc.retry_after if isinstance(exc, ApiError) else None
        if retry_after is not None:
            delay = await self._backoff.sleep(retry_after)
        else:
            if failures == 1:
                self._page_backoff.reset()
            delay = await self._page_backoff.sleep()
        error = _brief(exc)
        self.log.info("reflector.page_retry", **error, failures=failures, delay=round(delay, 3))
        return True
