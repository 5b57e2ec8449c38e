"""LIST and GET serving: the resourceVersion x resourceVersionMatch x limit table, pages and
continue tokens, and the watch cache's way of answering (see the ``informer.testing`` docstring).
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import zlib
from bisect import bisect_left
from typing import Any

import msgspec

from informer.testing import _status as st
from informer.testing._query import list_options as params
from informer.testing._query.field_labels import FieldLabels
from informer.testing._query.selectors import Selector
from informer.testing._query.sharding import ShardFilter, list_filter
from informer.testing._registry.registry import Registry
from informer.testing._status import StatusError
from informer.testing._storage.history import History
from informer.testing._storage.store import Kind, Store
from informer.testing.faults import Fault

__all__ = ["ListServer"]

Json = dict[str, Any]

_encode = msgspec.json.Encoder().encode
_sorted_encode = msgspec.json.Encoder(order="sorted").encode
_decode = msgspec.json.decode
_CONTINUE_VERSION = "meta.k8s.io/v1"
_B64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def encode_token(revision: int, start: str) -> str:
    """A Kubernetes continue token for the key after ``start`` at ``revision``."""
    raw = _encode({"v": _CONTINUE_VERSION, "rv": revision, "start": start})
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_token(token: str) -> tuple[int, str]:
    """(rv, start key) of a continue token; raises 400 like ``storage.DecodeContinue``."""

    def invalid(why: str) -> StatusError:
        return st.bad_request(f"invalid continue token: continue key is not valid: {why}")

    body = token.rstrip("=")
    for index, char in enumerate(body):
        if char not in _B64URL:
            raise invalid(f"illegal base64 data at input byte {index}")
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        raise invalid(f"illegal base64 data at input byte {len(body) - 1}") from None
    try:
        data = _decode(raw)
    except msgspec.DecodeError as error:
        raise invalid(str(error)) from None
    if not isinstance(data, dict):
        raise invalid("json: cannot unmarshal into Go value of type storage.continueToken")
    if data.get("v") != _CONTINUE_VERSION:
        raise invalid(f'server does not recognize this encoded version "{data.get("v", "")}"')
    rv = data.get("rv")
    if not isinstance(rv, int) or isinstance(rv, bool) or rv == 0:
        raise invalid(f"incorrect encoded start resourceVersion (version {_CONTINUE_VERSION})")
    start = data.get("start")
    if not isinstance(start, str) or not start:
        raise invalid(f"encoded start key empty (version {_CONTINUE_VERSION})")
    key = start if start.startswith("/") else "/" + start
    cleaned = posixpath.normpath(key)
    if cleaned != key and not (key.endswith("/") and cleaned + "/" == key):
        raise invalid(start)
    return rv, start


class ListServer:
    """Answers LIST and GET requests from the history."""

    def __init__(self, history: History, registry: Registry) -> None:
        self.history = history
        self.registry = registry
        self.options = history.options
        self.store = history.store
        self._token_pages: dict[str, int] = {}

    def page_of(self, token: str) -> int:
        """The page number a continue token asks for (1 = first page; for ``Fault(page=...)``)."""
        return self._token_pages.get(token, 2) if token else 1

    # -- bodies -------------------------------------------------------------------------------

    def _list_body(
        self,
        kind: Kind,
        revision: int,
        items: list[bytes],
        token: str | None = None,
        remaining: int | None = None,
        shard: ShardFilter | None = None,
    ) -> bytes:
        meta: Json = {"resourceVersion": self.history.format_rv(revision)}
        if token:
            meta["continue"] = token
        if remaining is not None:
            meta["remainingItemCount"] = remaining
        if shard is not None:
            meta["shardInfo"] = shard.info
        if kind.sort_keys:  # an unstructured list: apiVersion, items, kind, metadata
            head = b'{"apiVersion":' + _encode(kind.resource.api_version) + b',"items":['
            tail = _sorted_encode({"kind": kind.list_kind, "metadata": meta})
            return head + b",".join(items) + b"]," + tail[1:]
        head = _encode(
            {"kind": kind.list_kind, "apiVersion": kind.resource.api_version, "metadata": meta}
        )
        return head[:-1] + b',"items":[' + b",".join(items) + b"]}"

    def _page(
        self,
        kind: Kind,
        namespace: str | None,
        selector: Selector,
        revision: int,
        limit: int,
        start: str = "",
        page: int = 1,
        shard: ShardFilter | None = None,
    ) -> bytes:
        """A page at ``revision`` in key order from ``start`` (a relative key), ``limit`` items.

        ``remainingItemCount`` counts every object after the page when no label or field selector
        is set, whatever the shard filter (the real server's count ignores it too)."""
        resource = kind.resource
        state = self.store.state_at(resource, revision)
        keys = self.store.sorted_keys(resource, state)
        prefix = f"{namespace}/" if namespace and resource.namespaced else ""
        lo, hi = Store.key_range(keys, prefix)
        if start:
            lo = bisect_left(keys, prefix + start, lo, hi)
        if selector.empty and shard is None and limit <= 0:
            return self._list_body(kind, revision, [state[k].item for k in keys[lo:hi]])
        items: list[bytes] = []
        last = ""
        index = lo
        while index < hi:
            key = keys[index]
            index += 1
            obj = state[key]
            if (selector.empty or selector.matches(obj.data)) and (
                shard is None or shard.matches(obj.data)
            ):
                items.append(obj.item)
                last = key
                if 0 < limit <= len(items):
                    break
        token = remaining = None
        if 0 < limit <= len(items) and index < hi:
            token = encode_token(revision, last[len(prefix) :] + "\x00")
            if len(self._token_pages) >= 10_000:  # only for Fault(page=...); keep it bounded
                self._token_pages.clear()
            self._token_pages[token] = page + 1
            if selector.empty:
                remaining = hi - index
        return self._list_body(kind, revision, items, token, remaining, shard)

    def _cache_list(
        self,
        kind: Kind,
        namespace: str | None,
        selector: Selector,
        revision: int,
        limit: int,
        shard: ShardFilter | None = None,
    ) -> bytes:
        """A list as a watch cache serves it: with the quirks, the limit is ignored and the items
        come in hash order (not sorted); without them, like etcd."""
        if not self.options.watch_cache_quirks:
            return self._page(kind, namespace, selector, revision, limit, shard=shard)
        resource = kind.resource
        state = self.store.state_at(resource, revision)
        prefix = f"{namespace}/" if namespace and resource.namespaced else ""
        keys = [k for k in state if k.startswith(prefix)]
        keys.sort(key=lambda k: zlib.crc32(k.encode()))
        items = [
            state[k].item
            for k in keys
            if (selector.empty or selector.matches(state[k].data))
            and (shard is None or shard.matches(state[k].data))
        ]
        return self._list_body(kind, revision, items, shard=shard)

    # -- LIST ---------------------------------------------------------------------------------

    async def serve_list(
        self,
        kind: Kind,
        namespace: str | None,
        query: dict[str, str],
        fault: Fault | None,
        fields_of: FieldLabels | None = None,
    ) -> bytes:
        """The body of a LIST (the personality's validation, then the RV table); ``fields_of``:
        the field labels the kind is selectable by."""
        options, history = self.options, self.history
        rv = query.get("resourceVersion", "")
        rvm = query.get("resourceVersionMatch", "")
        cont = query.get("continue", "")
        limit = params.parse_int(query, "limit")
        sie = None if not options.watch_list else params.parse_bool(query, "sendInitialEvents")
        selector = params.selector(query, None, fields_of)
        params.validate(options, False, rv, rvm, cont, sie)
        shard = list_filter(options.shard_selectors, query)
        if options.legacy:
            rvm = ""
        history.auto_compact()
        store = self.store
        if fault is not None and fault.list_lag is not None:
            revision = max(store.revision - fault.list_lag, store.compacted)
            start = decode_token(cont)[1] if cont else ""
            return self._page(kind, namespace, selector, revision, limit, start, shard=shard)
        wanted = history.parse_rv(rv) if rv not in ("", "0") else 0
        if cont:
            return self._list_continue(kind, namespace, selector, rv, cont, limit, shard)
        if rv == "":
            return self._page(kind, namespace, selector, store.revision, limit, shard=shard)
        if rvm == "Exact" or (rvm == "" and rv != "0" and limit > 0):
            if wanted < store.compacted:
                raise st.expired(st.LIST_TOO_OLD)
            if wanted > store.revision:
                raise st.future_revision()
            return self._page(kind, namespace, selector, wanted, limit, shard=shard)
        lagged = True
        if rv == "0":
            revision = history.visible(lagged)
            return self._cache_list(kind, namespace, selector, revision, limit, shard)
        if rvm == "NotOlderThan" and limit > 0:  # served from etcd at the newest revision
            if wanted > store.revision:
                raise st.too_large(rv, history.format_rv(store.revision), 0)
            return self._page(kind, namespace, selector, store.revision, limit, shard=shard)
        # NotOlderThan without a limit: the watch cache (or etcd when the quirks are off)
        revision = await history.not_older_than(rv, wanted, lagged)
        return self._cache_list(kind, namespace, selector, revision, 0, shard)

    def _list_continue(
        self,
        kind: Kind,
        namespace: str | None,
        selector: Selector,
        rv: str,
        cont: str,
        limit: int,
        shard: ShardFilter | None = None,
    ) -> bytes:
        revision, start = decode_token(cont)
        if rv not in ("", "0"):
            raise st.bad_request("specifying resource version is not allowed when using continue")
        store = self.store
        if revision < 0:
            revision = store.revision
        elif revision < store.compacted:
            raise st.expired(st.CONTINUE_EXPIRED, encode_token(-1, start))
        elif revision > store.revision:
            raise st.future_revision()
        page = self._token_pages.get(cont, 2)
        return self._page(kind, namespace, selector, revision, limit, start, page, shard)

    # -- GET ----------------------------------------------------------------------------------

    async def serve_get(
        self, kind: Kind, namespace: str | None, name: str, query: dict[str, str]
    ) -> bytes:
        """The body of a GET: current, or served by the (possibly stale) cache with an RV."""
        resource, history = kind.resource, self.history
        rv = query.get("resourceVersion", "")
        key = self.registry.key(resource, namespace, name)
        history.auto_compact()
        if rv == "":
            revision = self.store.revision
        elif rv == "0":
            revision = history.visible(True)
        else:
            revision = await history.not_older_than(rv, history.parse_rv(rv), True)
        found = self.store.object_at(resource, key, revision)
        if found is None:
            raise st.not_found(resource, name)
        return found.typed
